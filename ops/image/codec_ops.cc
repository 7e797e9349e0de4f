// DecodeJpeg, DecodePng, DecodeImage, EncodePng, EncodeJpeg and ReadFile (CPU only, as in
// TensorFlow): kernels over io/image_codec.h. Decoders take one file's bytes (a string scalar)
// and output [height, width, channels]; their failures name the node (the executor appends the
// node, op and device).
#include "placeflow/io/file_bytes.h"
#include "placeflow/io/image_codec.h"
#include "placeflow/ops/image_ops.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// Input 0 as a string scalar (a file's bytes or name).
Status ScalarString(const OpKernelContext* ctx, const char* op, std::string_view* out) {
  const Tensor& t = ctx->input(0);
  if (t.dtype() != DT_STRING || t.rank() != 0) {
    return errors::InvalidArgument(op, " takes a string scalar, got ", DTypeName(t.dtype()), " ",
                                   t.shape().ToString());
  }
  *out = t.data<std::string>()[0];  // a view of the tensor's own string
  return Status::OK();
}

// [height, width, channels] with the channels known when asked for.
Status DecodeShape(ShapeContext& c, int channels) {
  PF_RETURN_IF_ERROR(c.WithRank(0, 0));
  c.set_output(0, Shape({-1, -1, channels > 0 ? channels : -1}));
  return Status::OK();
}

class DecodeJpegOp : public OpKernel {
 public:
  explicit DecodeJpegOp(const Node& n) : OpKernel(n) {
    o_.channels = static_cast<int>(n.attr<int64_t>("channels"));
    o_.ratio = static_cast<int>(n.attr<int64_t>("ratio"));
    o_.fancy_upscaling = n.attr<bool>("fancy_upscaling");
    o_.try_recover_truncated = n.attr<bool>("try_recover_truncated");
    o_.acceptable_fraction = n.attr<float>("acceptable_fraction");
    o_.dct_method = n.attr<std::string>("dct_method");
  }
  Status Compute(OpKernelContext* ctx) override {
    std::string_view bytes;
    PF_RETURN_IF_ERROR(ScalarString(ctx, "DecodeJpeg", &bytes));
    PF_ASSIGN_OR_RETURN(Tensor image, image::DecodeJpeg(bytes, o_));
    return ctx->SetOutput(0, std::move(image));
  }

 private:
  image::JpegOptions o_;
};

class DecodePngOp : public OpKernel {
 public:
  explicit DecodePngOp(const Node& n)
      : OpKernel(n),
        channels_(static_cast<int>(n.attr<int64_t>("channels"))),
        dtype_(n.attr<DType>("dtype")) {}
  Status Compute(OpKernelContext* ctx) override {
    std::string_view bytes;
    PF_RETURN_IF_ERROR(ScalarString(ctx, "DecodePng", &bytes));
    PF_ASSIGN_OR_RETURN(Tensor image, image::DecodePng(bytes, channels_, dtype_));
    return ctx->SetOutput(0, std::move(image));
  }

 private:
  int channels_;
  DType dtype_;
};

// As TF's decode_image: uint8, or float scaled to [0, 1].
class DecodeImageOp : public OpKernel {
 public:
  explicit DecodeImageOp(const Node& n)
      : OpKernel(n),
        channels_(static_cast<int>(n.attr<int64_t>("channels"))),
        dtype_(n.attr<DType>("dtype")) {}
  Status Compute(OpKernelContext* ctx) override {
    std::string_view bytes;
    PF_RETURN_IF_ERROR(ScalarString(ctx, "DecodeImage", &bytes));
    PF_ASSIGN_OR_RETURN(Tensor image, image::DecodeImage(bytes, channels_, DT_UINT8));
    if (dtype_ != DT_FLOAT) return ctx->SetOutput(0, std::move(image));
    Tensor f(DT_FLOAT, image.shape());
    float* y = f.data<float>();
    const uint8_t* x = image.data<uint8_t>();
    for (int64_t i = 0; i < image.num_elements(); ++i) y[i] = static_cast<float>(x[i]) / 255.f;
    return ctx->SetOutput(0, std::move(f));
  }

 private:
  int channels_;
  DType dtype_;
};

class EncodePngOp : public OpKernel {
 public:
  explicit EncodePngOp(const Node& n)
      : OpKernel(n), compression_(static_cast<int>(n.attr<int64_t>("compression"))) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(std::string png, image::EncodePng(ctx->input(0), compression_));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    out->data<std::string>()[0] = std::move(png);
    return Status::OK();
  }

 private:
  int compression_;
};

class EncodeJpegOp : public OpKernel {
 public:
  explicit EncodeJpegOp(const Node& n)
      : OpKernel(n), quality_(static_cast<int>(n.attr<int64_t>("quality"))) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(std::string jpeg, image::EncodeJpeg(ctx->input(0), quality_));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    out->data<std::string>()[0] = std::move(jpeg);
    return Status::OK();
  }

 private:
  int quality_;
};

class ReadFileOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    std::string_view path;
    PF_RETURN_IF_ERROR(ScalarString(ctx, "ReadFile", &path));
    PF_ASSIGN_OR_RETURN(std::string bytes, io::ReadFileBytes(std::string(path)));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    out->data<std::string>()[0] = std::move(bytes);
    return Status::OK();
  }
  bool IsExpensive() const override { return true; }
};

PF_REGISTER_OP(OpDef("DecodeJpeg")
                   .Input("contents", "string")
                   .Output("image", "uint8")
                   .Attr("channels", int64_t{0})
                   .Attr("ratio", int64_t{1})
                   .Attr("fancy_upscaling", true)
                   .Attr("try_recover_truncated", false)
                   .Attr("acceptable_fraction", 1.f)
                   .Attr("dct_method", std::string())
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     return DecodeShape(c, static_cast<int>(c.attr<int64_t>("channels")));
                   }));
PF_REGISTER_OP(OpDef("DecodePng")
                   .Input("contents", "string")
                   .Output("image", "dtype")
                   .Attr("channels", int64_t{0})
                   .TypeAttr("dtype", {DT_UINT8})
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     return DecodeShape(c, static_cast<int>(c.attr<int64_t>("channels")));
                   }));
PF_REGISTER_OP(OpDef("DecodeImage")
                   .Input("contents", "string")
                   .Output("image", "dtype")
                   .Attr("channels", int64_t{0})
                   .TypeAttr("dtype", {DT_UINT8, DT_FLOAT})
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     return DecodeShape(c, static_cast<int>(c.attr<int64_t>("channels")));
                   }));
PF_REGISTER_OP(OpDef("EncodePng")
                   .Input("image", "T")
                   .Output("contents", "string")
                   .TypeAttr("T", {DT_UINT8})
                   .Attr("compression", int64_t{-1})
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(c.WithRank(0, 3));
                     return ScalarShape(c);
                   }));
PF_REGISTER_OP(OpDef("EncodeJpeg")
                   .Input("image", "uint8")
                   .Output("contents", "string")
                   .Attr("quality", int64_t{95})
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(c.WithRank(0, 3));
                     return ScalarShape(c);
                   }));
PF_REGISTER_OP(OpDef("ReadFile")
                   .Input("filename", "string")
                   .Output("contents", "string")
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(c.WithRank(0, 0));
                     return ScalarShape(c);
                   }));
PF_REGISTER_KERNEL(KernelDef("DecodeJpeg", kDeviceCpu), DecodeJpegOp);
PF_REGISTER_KERNEL(KernelDef("DecodePng", kDeviceCpu), DecodePngOp);
PF_REGISTER_KERNEL(KernelDef("DecodeImage", kDeviceCpu), DecodeImageOp);
PF_REGISTER_KERNEL(KernelDef("EncodePng", kDeviceCpu), EncodePngOp);
PF_REGISTER_KERNEL(KernelDef("EncodeJpeg", kDeviceCpu), EncodeJpegOp);
PF_REGISTER_KERNEL(KernelDef("ReadFile", kDeviceCpu), ReadFileOp);

}  // namespace

namespace ops {

Output DecodeJpeg(const Scope& s, Output contents, const DecodeJpegAttrs& a) {
  return NodeBuilder(s, "DecodeJpeg")
      .Input(contents)
      .Attr("channels", int64_t{a.channels})
      .Attr("ratio", int64_t{a.ratio})
      .Attr("fancy_upscaling", a.fancy_upscaling)
      .Attr("try_recover_truncated", a.try_recover_truncated)
      .Attr("acceptable_fraction", a.acceptable_fraction)
      .Attr("dct_method", a.dct_method)
      .Finalize();
}

Output DecodePng(const Scope& s, Output contents, int channels, DType dtype) {
  return NodeBuilder(s, "DecodePng")
      .Input(contents)
      .Attr("channels", int64_t{channels})
      .Attr("dtype", dtype)
      .Finalize();
}

Output DecodeImage(const Scope& s, Output contents, const DecodeImageAttrs& a) {
  return NodeBuilder(s, "DecodeImage")
      .Input(contents)
      .Attr("channels", int64_t{a.channels})
      .Attr("dtype", a.dtype)
      .Finalize();
}

Output EncodePng(const Scope& s, Output image, int compression) {
  return NodeBuilder(s, "EncodePng")
      .Input(image)
      .Attr("compression", int64_t{compression})
      .Finalize();
}

Output EncodeJpeg(const Scope& s, Output image, int quality) {
  return NodeBuilder(s, "EncodeJpeg").Input(image).Attr("quality", int64_t{quality}).Finalize();
}

Output ReadFile(const Scope& s, Output filename) {
  return NodeBuilder(s, "ReadFile").Input(filename).Finalize();
}

}  // namespace ops
}  // namespace pf
