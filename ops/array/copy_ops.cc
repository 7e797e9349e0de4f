// Data movement: Transpose, Concat, Split, Slice, Gather. Kernels move bytes, so one kernel
// serves every dtype of the same element size.
#include "placeflow/ops/array/copy_ops.h"

#include <cstring>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// ---- gradients ----
// Checks that perm holds each of 0 .. perm.size()-1 once (whatever the input's rank).
Status CheckPermutation(const std::vector<int64_t>& perm) {
  if (perm.size() > static_cast<size_t>(Shape::kMaxRank)) {
    return errors::InvalidArgument("transpose: a perm of ", perm.size(),
                                   " entries is past the maximum rank ", Shape::kMaxRank);
  }
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p]) {
      return errors::InvalidArgument(p, " is not a valid permutation index (or repeats) for rank ",
                                     perm.size());
    }
    seen[p] = true;
  }
  return Status::OK();
}

PF_GRAD(TransposeGrad) {
  const auto& perm = n.attr<std::vector<int64_t>>("perm");
  PF_RETURN_IF_ERROR(CheckPermutation(perm));
  std::vector<int32_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int32_t>(i);
  *dx = {ops::Transpose(s, g[0], inverse)};
  return Status::OK();
}
PF_GRAD(ConcatGradFn) {
  Node* split = NodeBuilder(s, "ConcatGrad")
                    .Input(g[0])
                    .InputList(n.inputs())
                    .Attr("axis", n.attr<int64_t>("axis"))
                    .Finalize();
  dx->clear();
  for (int i = 0; i < split->num_outputs(); ++i) dx->emplace_back(split, i);
  return Status::OK();
}
PF_GRAD(SplitGrad) {
  *dx = {ops::Concat(s, g, static_cast<int>(n.attr<int64_t>("axis")))};
  return Status::OK();
}
PF_GRAD(SliceGradFn) {
  *dx = {NodeBuilder(s, "SliceGrad")
             .Input(g[0])
             .Input(n.input(0))
             .Attr("begin", n.attr<std::vector<int64_t>>("begin"))
             .Finalize()};
  return Status::OK();
}
PF_GRAD(GatherGradFn) {
  *dx = {NodeBuilder(s, "GatherGrad").Input(g[0]).Input(n.input(1)).Input(n.input(0)).Finalize(),
         Output()};
  return Status::OK();
}

// ---- Transpose ----
Status TransposeShape(ShapeContext& c) {
  const auto& perm = c.attr<std::vector<int64_t>>("perm");
  const Shape& in = c.input(0);
  PF_RETURN_IF_ERROR(CheckPermutation(perm));
  Shape out;
  if (in.unknown_rank()) {
    // The rank is perm's size: the run-time check catches an input of another.
    for (size_t d = 0; d < perm.size(); ++d) out.AddDim(-1);
    return (c.set_output(0, out), Status::OK());
  }
  if (static_cast<int>(perm.size()) != in.rank()) {
    return errors::InvalidArgument("transpose expects a vector of size ", in.rank(),
                                   ". But input(1) is a vector of size ", perm.size());
  }
  for (int64_t p : perm) out.AddDim(in.dim(static_cast<int>(p)));
  c.set_output(0, out);
  return Status::OK();
}

class TransposeOp : public OpKernel {
 public:
  explicit TransposeOp(const Node& n) : OpKernel(n), perm_(n.attr<std::vector<int64_t>>("perm")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    // The executor ran TransposeShape on this input; a kernel called some other way must not
    // index with a perm of another rank.
    if (in.rank() != static_cast<int>(perm_.size()))
      return errors::InvalidArgument("transpose expects a vector of size ", in.rank(),
                                     ". But input(1) is a vector of size ", perm_.size());
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int rank = in.rank();
    const size_t es = DTypeSize(in.dtype());
    const int64_t n = in.num_elements();
    if (n == 0) return Status::OK();
    // in_strides permuted into output order.
    std::vector<int64_t> in_strides(rank, 1), ps(rank), out_dims(rank);
    for (int d = rank - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * in.dim(d + 1);
    for (int d = 0; d < rank; ++d) {
      ps[d] = in_strides[perm_[d]];
      out_dims[d] = out->dim(d);
    }
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    const int64_t inner = rank ? out_dims[rank - 1] : 1;
    const int64_t inner_stride = rank ? ps[rank - 1] : 1;
    ParallelFor(ctx, n / inner, inner * 2, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        int64_t off = 0, rem = r;
        for (int d = rank - 2; d >= 0; --d) {
          off += (rem % out_dims[d]) * ps[d];
          rem /= out_dims[d];
        }
        char* o = dst + r * inner * es;
        if (inner_stride == 1) {  // the last dim stays last: its rows are contiguous both sides
          std::memcpy(o, src + off * es, inner * es);
          continue;
        }
        for (int64_t i = 0; i < inner; ++i)
          std::memcpy(o + i * es, src + (off + i * inner_stride) * es, es);
      }
    });
    return Status::OK();
  }

 private:
  std::vector<int64_t> perm_;
};

PF_REGISTER_OP(OpDef("Transpose")
                   .Input("x", "T")
                   .Output("y", "T")
                   .RequiredAttr("perm")
                   .TypeAttr("T", kComputableTypes)
                   .SetGradient(TransposeGrad)
                   .SetShapeFn(TransposeShape));
PF_REGISTER_KERNEL(KernelDef("Transpose", kDeviceCpu), TransposeOp);

// ---- Concat / Split: both walk `outer` blocks of contiguous bytes (OuterInner) ----
Status ConcatShape(ShapeContext& c) {
  int rank = -1;
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (c.input(i).unknown_rank()) continue;
    if (rank >= 0 && c.input(i).rank() != rank) {
      return errors::InvalidArgument(
          "ConcatOp : Ranks of all input tensors should match: shape[0] = ", c.input(0).ToString(),
          " vs. shape[", i, "] = ", c.input(i).ToString());
    }
    rank = c.input(i).rank();
  }
  if (rank < 0) return (c.set_output(0, Shape::Unknown()), Status::OK());
  if (rank == 0) return errors::InvalidArgument("Can't concatenate scalars (use Stack instead)");
  PF_ASSIGN_OR_RETURN(int axis, c.CanonicalAxis(c.attr<int64_t>("axis"), rank));
  Shape out;
  for (int d = 0; d < rank; ++d) out.AddDim(-2);  // -2: not yet set
  int64_t sum = 0;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const Shape& s = c.input(i);
    if (s.unknown_rank()) {
      sum = -1;
      continue;
    }
    for (int d = 0; d < rank; ++d) {
      if (d == axis) continue;
      if (out.dim(d) == -2 || out.dim(d) == -1)
        out.set_dim(d, s.dim(d));
      else if (s.dim(d) != -1 && s.dim(d) != out.dim(d)) {
        return errors::InvalidArgument(
            "ConcatOp : Dimension ", d,
            " in both shapes must be equal: shape[0] = ", c.input(0).ToString(), " vs. shape[", i,
            "] = ", s.ToString());
      }
    }
    sum = (sum < 0 || s.dim(axis) < 0) ? -1 : sum + s.dim(axis);
  }
  for (int d = 0; d < rank; ++d)
    if (out.dim(d) == -2) out.set_dim(d, -1);
  out.set_dim(axis, sum);
  c.set_output(0, out);
  return Status::OK();
}

class ConcatOp : public OpKernel {
 public:
  explicit ConcatOp(const Node& n) : OpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int rank = out->rank();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + rank : axis_);
    const size_t es = DTypeSize(out->dtype());
    int64_t outer, out_inner;
    OuterInner(out->shape(), axis, es, &outer, &out_inner);
    char* dst = static_cast<char*>(out->raw_data());
    std::vector<int64_t> inner(ctx->num_inputs());
    for (int i = 0; i < ctx->num_inputs(); ++i)
      OuterInner(ctx->input(i).shape(), axis, es, &outer, &inner[i]);
    ParallelFor(ctx, outer, out_inner / 4 + 1, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        char* d = dst + o * out_inner;
        for (int i = 0; i < ctx->num_inputs(); ++i) {
          std::memcpy(d, static_cast<const char*>(ctx->input(i).raw_data()) + o * inner[i],
                      inner[i]);
          d += inner[i];
        }
      }
    });
    return Status::OK();
  }

 private:
  int64_t axis_;
};

PF_REGISTER_OP(OpDef("Concat")
                   .InputList("values", "T", "N")
                   .Output("output", "T")
                   .RequiredAttr("axis")
                   .RequiredAttr("N")
                   .TypeAttr("T", kComputableTypes)
                   .SetGradient(ConcatGradFn)
                   .SetShapeFn(ConcatShape));
PF_REGISTER_KERNEL(KernelDef("Concat", kDeviceCpu), ConcatOp);

Status SplitShape(ShapeContext& c) {
  const Shape& in = c.input(0);
  const int64_t n = c.attr<int64_t>("num_split");
  if (n <= 0) return errors::InvalidArgument("Number of ways to split should be > 0, but got ", n);
  if (in.unknown_rank()) {
    for (int i = 0; i < n; ++i) c.set_output(i, Shape::Unknown());
    return Status::OK();
  }
  PF_ASSIGN_OR_RETURN(int axis, c.CanonicalAxis(c.attr<int64_t>("axis"), in.rank()));
  Shape out = in;
  if (in.dim(axis) >= 0) {
    if (in.dim(axis) % n != 0) {
      return errors::InvalidArgument(
          "Number of ways to split should evenly divide the split dimension, but got split_dim ",
          axis, " (size = ", in.dim(axis), ") and num_split ", n);
    }
    out.set_dim(axis, in.dim(axis) / n);
  }
  for (int i = 0; i < n; ++i) c.set_output(i, out);
  return Status::OK();
}

class SplitOp : public OpKernel {
 public:
  explicit SplitOp(const Node& n) : OpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + in.rank() : axis_);
    const size_t es = DTypeSize(in.dtype());
    int64_t outer, in_inner, out_inner;
    OuterInner(in.shape(), axis, es, &outer, &in_inner);
    OuterInner(ctx->output_shape(0), axis, es, &outer, &out_inner);
    const char* src = static_cast<const char*>(in.raw_data());
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(i));
      char* dst = static_cast<char*>(out->raw_data());
      ParallelFor(ctx, outer, out_inner / 4 + 1, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o)
          std::memcpy(dst + o * out_inner, src + o * in_inner + i * out_inner, out_inner);
      });
    }
    return Status::OK();
  }

 private:
  int64_t axis_;
};

PF_REGISTER_OP(OpDef("Split")
                   .Input("value", "T")
                   .OutputList("output", "T", "num_split")
                   .RequiredAttr("axis")
                   .RequiredAttr("num_split")
                   .TypeAttr("T", kComputableTypes)
                   .SetGradient(SplitGrad)
                   .SetShapeFn(SplitShape));
PF_REGISTER_KERNEL(KernelDef("Split", kDeviceCpu), SplitOp);

// ---- Slice ----
Status SliceShape(ShapeContext& c) {
  const Shape& in = c.input(0);
  const auto& begin = c.attr<std::vector<int64_t>>("begin");
  const auto& size = c.attr<std::vector<int64_t>>("size");
  if (begin.size() != size.size())
    return errors::InvalidArgument("Slice: begin has ", begin.size(), " entries but size has ",
                                   size.size());
  // The attrs alone, so that an input of unknown rank cannot smuggle bad ones to the kernel.
  if (begin.size() > static_cast<size_t>(Shape::kMaxRank)) {
    return errors::InvalidArgument("Slice of rank ", begin.size(), ": at most ", Shape::kMaxRank,
                                   " dimensions are supported");
  }
  for (size_t d = 0; d < begin.size(); ++d) {
    if (begin[d] < 0)
      return errors::InvalidArgument("Expected begin[", d, "] = ", begin[d], " to be >= 0");
    if (size[d] < -1)
      return errors::InvalidArgument("Expected size[", d, "] = ", size[d], " to be >= -1");
  }
  if (in.unknown_rank()) {
    Shape out;
    for (int64_t s : size) out.AddDim(s);
    return (c.set_output(0, out), Status::OK());
  }
  if (static_cast<int>(begin.size()) != in.rank()) {
    return errors::InvalidArgument("Expected begin and size arguments to be 1-D tensors of size ",
                                   in.rank(), ", but got ", begin.size());
  }
  Shape out;
  for (int d = 0; d < in.rank(); ++d) {
    int64_t dim = in.dim(d);
    int64_t sz = size[d] == -1 ? (dim < 0 ? -1 : dim - begin[d]) : size[d];
    if (begin[d] < 0 || sz < -1 || (dim >= 0 && begin[d] + std::max<int64_t>(sz, 0) > dim)) {
      return errors::InvalidArgument("Expected begin[", d, "] = ", begin[d], " and size[", d,
                                     "] = ", size[d], " to fit in dimension ", d, " of size ", dim);
    }
    out.AddDim(sz);
  }
  c.set_output(0, out);
  return Status::OK();
}

class SliceOp : public OpKernel {
 public:
  explicit SliceOp(const Node& n) : OpKernel(n), begin_(n.attr<std::vector<int64_t>>("begin")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int rank = in.rank();
    if (rank != static_cast<int>(begin_.size()) || out->rank() != rank)
      return errors::InvalidArgument("Expected begin and size arguments to be 1-D tensors of size ",
                                     rank, ", but got ", begin_.size());
    const size_t es = DTypeSize(in.dtype());
    if (out->num_elements() == 0) return Status::OK();
    if (rank == 0) {
      std::memcpy(out->raw_data(), in.raw_data(), es);
      return Status::OK();
    }
    std::vector<int64_t> strides(rank, 1);
    for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * in.dim(d + 1);
    const int64_t inner = out->dim(rank - 1);
    const int64_t rows = out->num_elements() / inner;
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    ParallelFor(ctx, rows, inner, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        int64_t off = begin_[rank - 1], rem = r;
        for (int d = rank - 2; d >= 0; --d) {
          off += (rem % out->dim(d) + begin_[d]) * strides[d];
          rem /= out->dim(d);
        }
        std::memcpy(dst + r * inner * es, src + off * es, inner * es);
      }
    });
    return Status::OK();
  }

 private:
  std::vector<int64_t> begin_;
};

PF_REGISTER_OP(OpDef("Slice")
                   .Input("input", "T")
                   .Output("output", "T")
                   .RequiredAttr("begin")
                   .RequiredAttr("size")
                   .TypeAttr("T", kComputableTypes)
                   .SetGradient(SliceGradFn)
                   .SetShapeFn(SliceShape));
PF_REGISTER_KERNEL(KernelDef("Slice", kDeviceCpu), SliceOp);

// ---- Gather (axis 0) ----
Status GatherShape(ShapeContext& c) {
  const Shape& params = c.input(0);
  const Shape& indices = c.input(1);
  if (params.unknown_rank() || indices.unknown_rank())
    return (c.set_output(0, Shape::Unknown()), Status::OK());
  if (params.rank() < 1)
    return errors::InvalidArgument("params must be at least 1 dimensional, got ",
                                   params.ToString());
  Shape out = indices;
  for (int d = 1; d < params.rank(); ++d) out.AddDim(params.dim(d));
  c.set_output(0, out);
  return Status::OK();
}

template <typename Index>
class GatherOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t limit = params.dim(0);
    const int64_t row_bytes = params.dim(0) == 0 ? 0 : params.TotalBytes() / params.dim(0);
    const Index* idx = indices.data<Index>();
    for (int64_t i = 0; i < indices.num_elements(); ++i) {
      if (idx[i] < 0 || idx[i] >= limit) {
        return errors::InvalidArgument("indices[", i, "] = ", idx[i], " is not in [0, ", limit,
                                       ")");
      }
    }
    const char* src = static_cast<const char*>(params.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    ParallelFor(ctx, indices.num_elements(), row_bytes / 4 + 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        std::memcpy(dst + i * row_bytes, src + idx[i] * row_bytes, row_bytes);
    });
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("Gather")
                   .Input("params", "Tparams")
                   .Input("indices", "Tindices")
                   .Output("output", "Tparams")
                   .TypeAttr("Tparams", kComputableTypes)
                   .TypeAttr("Tindices", kIndexTypes)
                   .SetGradient(GatherGradFn)
                   .SetShapeFn(GatherShape));
PF_REGISTER_KERNEL(KernelDef("Gather", kDeviceCpu).TypeConstraint("Tindices", {DT_INT32}),
                   GatherOp<int32_t>);
PF_REGISTER_KERNEL(KernelDef("Gather", kDeviceCpu).TypeConstraint("Tindices", {DT_INT64}),
                   GatherOp<int64_t>);

std::vector<int64_t> ToI64(const std::vector<int32_t>& v) { return {v.begin(), v.end()}; }

}  // namespace

namespace ops {

Output Transpose(const Scope& s, Output x, const std::vector<int32_t>& perm) {
  return NodeBuilder(s, "Transpose").Input(x).Attr("perm", ToI64(perm)).Finalize();
}
Output Concat(const Scope& s, const std::vector<Output>& values, int axis) {
  return NodeBuilder(s, "Concat").InputList(values).Attr("axis", int64_t{axis}).Finalize();
}
std::vector<Output> Split(const Scope& s, Output value, int axis, int num_split) {
  Node* n = NodeBuilder(s, "Split")
                .Input(value)
                .Attr("axis", int64_t{axis})
                .Attr("num_split", int64_t{num_split})
                .Finalize();
  std::vector<Output> outs;
  for (int i = 0; i < n->num_outputs(); ++i) outs.emplace_back(n, i);
  return outs;
}
Output Slice(const Scope& s, Output x, const std::vector<int32_t>& begin,
             const std::vector<int32_t>& size) {
  return NodeBuilder(s, "Slice")
      .Input(x)
      .Attr("begin", ToI64(begin))
      .Attr("size", ToI64(size))
      .Finalize();
}
Output Gather(const Scope& s, Output params, Output indices) {
  return NodeBuilder(s, "Gather").Input(params).Input(indices).Finalize();
}

}  // namespace ops
}  // namespace pf
