// Pad(input, paddings): zeros around the input, (before, after) per dimension, as TensorFlow's
// Pad; and PadGrad(grad, paddings), its gradient: the centre of grad, cut out. (TensorFlow takes
// that gradient with a Slice at a computed begin; Slice's begin is an attr here, so PadGrad is
// its own op, and the two are each other's gradients.) Kernels move bytes, so one kernel serves
// every dtype.
#include "placeflow/ops/array/pad_ops.h"

#include <algorithm>
#include <cstring>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {

Shape PadAmounts::Padded(const Shape& input) const {
  Shape out;
  for (int d = 0; d < rank(); ++d) {
    const int64_t dim = input.unknown_rank() ? -1 : input.dim(d);
    out.AddDim(dim < 0 ? -1 : dim + before[d] + after[d]);
  }
  return out;
}

Shape PadAmounts::Cropped(const Shape& padded) const {
  Shape out;
  for (int d = 0; d < rank(); ++d) {
    const int64_t dim = padded.unknown_rank() ? -1 : padded.dim(d);
    out.AddDim(dim < 0 ? -1 : dim - before[d] - after[d]);
  }
  return out;
}

Status ValidatePad(const Shape& input, const Shape& paddings) {
  if (!paddings.unknown_rank() &&
      (paddings.rank() != 2 || (paddings.dim(1) >= 0 && paddings.dim(1) != 2))) {
    return errors::InvalidArgument("paddings must be a matrix with 2 columns: ",
                                   paddings.ToString());
  }
  if (!input.unknown_rank() && !paddings.unknown_rank() && paddings.dim(0) >= 0 &&
      paddings.dim(0) != input.rank()) {
    return errors::InvalidArgument("The first dimension of paddings must be the rank of inputs: ",
                                   "paddings ", paddings.ToString(), ", inputs ", input.ToString());
  }
  return Status::OK();
}

StatusOr<PadAmounts> ReadPaddings(const Tensor& paddings) {
  if (paddings.rank() != 2 || paddings.dim(1) != 2) {
    return errors::InvalidArgument("paddings must be a matrix with 2 columns: ",
                                   paddings.shape().ToString());
  }
  const std::vector<int64_t> v = ToInt64(paddings);
  PadAmounts p;
  for (int64_t d = 0; d < paddings.dim(0); ++d) {
    if (v[2 * d] < 0 || v[2 * d + 1] < 0) {
      return errors::InvalidArgument("Paddings must be non-negative: ", v[2 * d], " ",
                                     v[2 * d + 1]);
    }
    p.before.push_back(v[2 * d]);
    p.after.push_back(v[2 * d + 1]);
  }
  return p;
}

Status ValidatePadGrad(const Shape& grad, const PadAmounts& p) {
  if (grad.unknown_rank()) return Status::OK();
  for (int d = 0; d < p.rank(); ++d) {
    if (grad.dim(d) >= 0 && grad.dim(d) < p.before[d] + p.after[d]) {
      return errors::InvalidArgument("PadGrad: gradient ", grad.ToString(),
                                     " is smaller than the paddings (", p.before[d], ", ",
                                     p.after[d], ") of dimension ", d);
    }
  }
  return Status::OK();
}

namespace {

// Output shape of Pad (crop = false) or PadGrad (crop = true): from constant paddings when the
// shape function sees them, else only the rank.
Status PadShape(ShapeContext& c, bool crop) {
  const Shape& in = c.input(0);
  const Shape& paddings = c.input(1);
  PF_RETURN_IF_ERROR(ValidatePad(in, paddings));
  if (const Tensor* value = c.input_tensor(1)) {
    PF_ASSIGN_OR_RETURN(PadAmounts p, ReadPaddings(*value));
    // Checked: int64 paddings near the limit would overflow the padded dims.
    for (int d = 0; d < p.rank() && !in.unknown_rank(); ++d) {
      int64_t sum = 0;
      if (__builtin_add_overflow(p.before[d], p.after[d], &sum) ||
          __builtin_add_overflow(std::max<int64_t>(in.dim(d), 0), sum, &sum)) {
        return errors::InvalidArgument("Paddings (", p.before[d], ", ", p.after[d],
                                       ") of dimension ", d, " overflow int64 for input ",
                                       in.ToString());
      }
    }
    if (crop) {
      PF_RETURN_IF_ERROR(ValidatePadGrad(in, p));
      c.set_output(0, p.Cropped(in));
    } else {
      c.set_output(0, p.Padded(in));
    }
    return Status::OK();
  }
  int rank = in.rank();
  if (rank < 0 && !paddings.unknown_rank()) rank = static_cast<int>(paddings.dim(0));
  if (rank < 0) return (c.set_output(0, Shape::Unknown()), Status::OK());
  c.set_output(0, Shape(std::vector<int64_t>(rank, -1)));
  return Status::OK();
}

std::vector<int64_t> RowMajorStrides(const Shape& s) {
  std::vector<int64_t> st(s.rank(), 1);
  for (int d = s.rank() - 2; d >= 0; --d) st[d] = st[d + 1] * s.dim(d + 1);
  return st;
}

class PadOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    PF_RETURN_IF_ERROR(ValidatePad(in.shape(), ctx->input(1).shape()));
    PF_ASSIGN_OR_RETURN(PadAmounts p, ReadPaddings(ctx->input(1)));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t n = out->num_elements();
    if (n == 0) return Status::OK();
    const int rank = in.rank();
    const size_t es = DTypeSize(in.dtype());
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    if (rank == 0) {
      std::memcpy(dst, src, es);
      return Status::OK();
    }
    // One output row (the innermost dim) at a time: zeros, or zeros around an input row, so
    // every byte is written once.
    const std::vector<int64_t> in_st = RowMajorStrides(in.shape());
    const int64_t out_inner = out->dim(rank - 1), in_inner = in.dim(rank - 1);
    const int64_t lead = p.before[rank - 1], trail = p.after[rank - 1];
    ParallelFor(ctx, n / out_inner, out_inner, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        char* row = dst + r * out_inner * es;
        bool inside = in_inner > 0;
        int64_t off = 0, rem = r;
        for (int d = rank - 2; d >= 0 && inside; --d) {
          const int64_t j = rem % out->dim(d) - p.before[d];
          rem /= out->dim(d);
          inside = j >= 0 && j < in.dim(d);
          off += j * in_st[d];
        }
        if (!inside) {
          std::memset(row, 0, out_inner * es);
          continue;
        }
        std::memset(row, 0, lead * es);
        std::memcpy(row + lead * es, src + off * es, in_inner * es);
        std::memset(row + (lead + in_inner) * es, 0, trail * es);
      }
    });
    return Status::OK();
  }
};

class PadGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    PF_RETURN_IF_ERROR(ValidatePad(g.shape(), ctx->input(1).shape()));
    PF_ASSIGN_OR_RETURN(PadAmounts p, ReadPaddings(ctx->input(1)));
    PF_RETURN_IF_ERROR(ValidatePadGrad(g.shape(), p));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t n = out->num_elements();
    if (n == 0) return Status::OK();
    const int rank = g.rank();
    const size_t es = DTypeSize(g.dtype());
    const char* src = static_cast<const char*>(g.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    if (rank == 0) {
      std::memcpy(dst, src, es);
      return Status::OK();
    }
    const std::vector<int64_t> g_st = RowMajorStrides(g.shape());
    const int64_t inner = out->dim(rank - 1);
    ParallelFor(ctx, n / inner, inner, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        int64_t off = p.before[rank - 1], rem = r;
        for (int d = rank - 2; d >= 0; --d) {
          off += (rem % out->dim(d) + p.before[d]) * g_st[d];
          rem /= out->dim(d);
        }
        std::memcpy(dst + r * inner * es, src + off * es, inner * es);
      }
    });
    return Status::OK();
  }
};

PF_GRAD(PadGradFn) {
  *dx = {NodeBuilder(s, "PadGrad").Input(g[0]).Input(n.input(1)).Finalize(), Output()};
  return Status::OK();
}
PF_GRAD(PadGradGradFn) {
  *dx = {ops::Pad(s, g[0], n.input(1)), Output()};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("Pad")
                   .Input("input", "T")
                   .Input("paddings", "Tpaddings")
                   .Output("output", "T")
                   .TypeAttr("T", kComputableTypes)
                   .TypeAttr("Tpaddings", kIndexTypes, DT_INT32)
                   .SetGradient(PadGradFn)
                   .SetShapeFn([](ShapeContext& c) { return PadShape(c, false); }));
PF_REGISTER_KERNEL(KernelDef("Pad", kDeviceCpu), PadOp);

PF_REGISTER_OP(OpDef("PadGrad")
                   .Input("grad", "T")
                   .Input("paddings", "Tpaddings")
                   .Output("output", "T")
                   .TypeAttr("T", kComputableTypes)
                   .TypeAttr("Tpaddings", kIndexTypes, DT_INT32)
                   .SetGradient(PadGradGradFn)
                   .SetShapeFn([](ShapeContext& c) { return PadShape(c, true); }));
PF_REGISTER_KERNEL(KernelDef("PadGrad", kDeviceCpu), PadGradOp);

}  // namespace

namespace ops {

Output Pad(const Scope& s, Output x, Output paddings) {
  return NodeBuilder(s, "Pad").Input(x).Input(paddings).Finalize();
}

Output Pad(const Scope& s, Output x, const std::vector<std::pair<int32_t, int32_t>>& paddings) {
  std::vector<int32_t> flat;
  for (const auto& [before, after] : paddings) {
    flat.push_back(before);
    flat.push_back(after);
  }
  const int64_t rows = static_cast<int64_t>(paddings.size());
  return Pad(s, x, Const(s, Tensor::FromVector<int32_t>(flat, {rows, 2})));
}

}  // namespace ops
}  // namespace pf
