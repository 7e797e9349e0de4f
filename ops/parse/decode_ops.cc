// DecodeRaw: bytes to numbers (tf.io.decode_raw).
#include <algorithm>
#include <bit>
#include <cstring>

#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/parse/parse_ops.h"

namespace pf {
namespace {

const std::vector<DType> kDecodeTypes = {DT_UINT8, DT_INT8,   DT_INT16, DT_INT32,   DT_INT64,
                                         DT_FLOAT, DT_DOUBLE, DT_HALF,  DT_BFLOAT16};

// The values per string, from the first string's length (the kernel checks the others).
Status DecodeRawShape(ShapeContext& c) {
  const Shape& in = c.input(0);
  if (in.unknown_rank()) {
    c.set_output(0, Shape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
  int64_t last = -1;
  const Tensor* value = c.input_tensor(0);
  if (value != nullptr && value->num_elements() > 0 && value->InHostMemory()) {
    const size_t size = DTypeSize(c.attr<DType>("out_type"));
    last = static_cast<int64_t>(value->data<std::string>()[0].size() / size);
  }
  dims.push_back(last);
  PF_ASSIGN_OR_RETURN(Shape out, Shape::FromDims(dims));
  c.set_output(0, out);
  return Status::OK();
}

class DecodeRawOp : public OpKernel {
 public:
  explicit DecodeRawOp(const Node& n)
      : OpKernel(n),
        out_type_(n.attr<DType>("out_type")),
        little_endian_(n.attr<bool>("little_endian")) {}

  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const size_t size = DTypeSize(out_type_);
    const int64_t n = in.num_elements();
    const std::string* s = in.data<std::string>();
    const size_t bytes = n > 0 ? s[0].size() : 0;
    if (bytes % size != 0) {
      return errors::InvalidArgument("Input to DecodeRaw has length ", bytes,
                                     " that is not a multiple of ", size, ", the size of ",
                                     DTypeName(out_type_));
    }
    for (int64_t i = 1; i < n; ++i) {
      if (s[i].size() != bytes) {
        return errors::InvalidArgument(
            "DecodeRaw requires input strings to all be the same size, but element ", i,
            " has size ", s[i].size(), " != ", bytes);
      }
    }
    std::vector<int64_t> dims(in.shape().dims().begin(), in.shape().dims().end());
    dims.push_back(static_cast<int64_t>(bytes / size));
    PF_ASSIGN_OR_RETURN(Shape shape, Shape::FromDims(dims));
    PF_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(CpuAllocator(), out_type_, shape));
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * bytes, s[i].data(), bytes);
    // The host is little-endian (x86-64, aarch64): big-endian input swaps each value's bytes.
    const bool swap = little_endian_ != (std::endian::native == std::endian::little);
    if (swap && size > 1) {
      for (size_t off = 0; off + size <= n * bytes; off += size) {
        std::reverse(dst + off, dst + off + size);
      }
    }
    return ctx->SetOutput(0, std::move(out));
  }

 private:
  DType out_type_;
  bool little_endian_;
};

PF_REGISTER_OP(OpDef("DecodeRaw")
                   .Input("bytes", "string")
                   .Output("output", "out_type")
                   .TypeAttr("out_type", kDecodeTypes)
                   .Attr("little_endian", true)
                   .SetNotDifferentiable()
                   .SetShapeFn(DecodeRawShape));
PF_REGISTER_KERNEL(KernelDef("DecodeRaw", kDeviceCpu), DecodeRawOp);

}  // namespace

namespace ops {

Output DecodeRaw(const Scope& s, Output bytes, DType out_type, bool little_endian) {
  return NodeBuilder(s, "DecodeRaw")
      .Input(bytes)
      .Attr("out_type", out_type)
      .Attr("little_endian", little_endian)
      .Finalize();
}

}  // namespace ops
}  // namespace pf
