// Reductions: Sum Mean Max Min over axes (keep_dims), ArgMax, and AddN.
#include <algorithm>
#include <limits>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace pf {
namespace {

// Which dims are reduced, from the "axes" attr (empty: all).
StatusOr<std::vector<bool>> ReducedDims(const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      return errors::InvalidArgument("Invalid reduction dimension (", a, " for input with ", rank, " dimension(s)");
    }
    reduced[a < 0 ? a + rank : a] = true;
  }
  return reduced;
}

Status ReduceShape(ShapeContext& c) {
  const Shape& in = c.input(0);
  const bool keep = c.attr<bool>("keep_dims");
  if (in.unknown_rank()) return (c.set_output(0, Shape::Unknown()), Status::OK());
  PF_ASSIGN_OR_RETURN(auto reduced, ReducedDims(c.attr<std::vector<int64_t>>("axes"), in.rank()));
  Shape out;
  for (int d = 0; d < in.rank(); ++d) {
    if (!reduced[d]) out.AddDim(in.dim(d));
    else if (keep) out.AddDim(1);
  }
  c.set_output(0, out);
  return Status::OK();
}

struct SumR {
  template <typename T> static T Init() { return T(0); }
  template <typename T> static T Combine(T a, T b) { return a + b; }
};
struct MaxR {
  template <typename T> static T Init() { return std::numeric_limits<T>::lowest(); }
  template <typename T> static T Combine(T a, T b) { return a > b ? a : b; }
};
struct MinR {
  template <typename T> static T Init() { return std::numeric_limits<T>::max(); }
  template <typename T> static T Combine(T a, T b) { return a < b ? a : b; }
};

// Reduce over the middle of [outer, reduce, inner], the layout left after merging
// neighbouring dims; other patterns go through a general strided walk.
template <typename T, typename R, bool kMean>
class ReduceOp : public OpKernel {
 public:
  explicit ReduceOp(const Node& n) : OpKernel(n), axes_(n.attr<std::vector<int64_t>>("axes")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor* out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(auto reduced, ReducedDims(axes_, in.rank()));
    // Merge neighbouring dims with the same reduced flag.
    std::vector<int64_t> dims;
    std::vector<bool> red;
    for (int d = 0; d < in.rank(); ++d) {
      if (in.dim(d) == 1) continue;
      if (!red.empty() && red.back() == reduced[d]) dims.back() *= in.dim(d);
      else { dims.push_back(in.dim(d)); red.push_back(reduced[d]); }
    }
    const T* x = in.data<T>();
    T* y = out->data<T>();
    const int64_t count = out->num_elements() == 0 ? 0 : in.num_elements() / out->num_elements();
    int64_t outer = 1, reduce = 1, inner = 1;
    size_t i = 0;
    if (i < red.size() && !red[i]) outer = dims[i++];
    if (i < red.size() && red[i]) reduce = dims[i++];
    if (i < red.size() && !red[i]) inner = dims[i++];
    if (i == red.size()) {
      ReduceOuterInner(ctx, x, y, outer, reduce, inner);
    } else {
      ReduceGeneral(in, reduced, x, y);
    }
    if constexpr (kMean) {
      if (count > 0) {
        for (T& v : out->flat<T>()) v = v / static_cast<T>(count);
      }
    }
    return Status::OK();
  }

 private:
  void ReduceOuterInner(OpKernelContext* ctx, const T* x, T* y, int64_t outer, int64_t reduce, int64_t inner) {
    if (inner == 1) {
      ParallelFor(ctx, outer, reduce, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const T* row = x + o * reduce;
          // Eight partial accumulators so the compiler can vectorise without reassociating.
          T acc[8];
          std::fill(acc, acc + 8, R::template Init<T>());
          int64_t r = 0;
          for (; r + 8 <= reduce; r += 8) {
            for (int l = 0; l < 8; ++l) acc[l] = R::Combine(acc[l], row[r + l]);
          }
          for (; r < reduce; ++r) acc[0] = R::Combine(acc[0], row[r]);
          T v = acc[0];
          for (int l = 1; l < 8; ++l) v = R::Combine(v, acc[l]);
          y[o] = v;
        }
      });
      return;
    }
    // Parallel over (outer, inner-block) pairs; each accumulates `reduce` rows of its block.
    const int64_t kBlock = 256;
    const int64_t blocks = (inner + kBlock - 1) / kBlock;
    ParallelFor(ctx, outer * blocks, reduce * std::min(inner, kBlock), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / blocks, i0 = (t % blocks) * kBlock, i1 = std::min(inner, i0 + kBlock);
        T* yo = y + o * inner;
        for (int64_t i = i0; i < i1; ++i) yo[i] = R::template Init<T>();
        for (int64_t r = 0; r < reduce; ++r) {
          const T* row = x + (o * reduce + r) * inner;
          for (int64_t i = i0; i < i1; ++i) yo[i] = R::Combine(yo[i], row[i]);
        }
      }
    });
  }

  void ReduceGeneral(const Tensor& in, const std::vector<bool>& reduced, const T* x, T* y) {
    const int rank = in.rank();
    // Output strides per input dim (0 on reduced dims).
    std::vector<int64_t> ostride(rank, 0);
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (!reduced[d]) { ostride[d] = s; s *= in.dim(d); }
    }
    const int64_t nout = s;
    std::fill(y, y + nout, R::template Init<T>());
    std::vector<int64_t> idx(rank, 0);
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      int64_t o = 0;
      for (int d = 0; d < rank; ++d) o += idx[d] * ostride[d];
      y[o] = R::Combine(y[o], x[i]);
      for (int d = rank - 1; d >= 0; --d) {
        if (++idx[d] < in.dim(d)) break;
        idx[d] = 0;
      }
    }
  }

  std::vector<int64_t> axes_;
};

OpDef ReduceDef(const char* name) {
  return OpDef(name)
      .Input("input", "T")
      .Output("output", "T")
      .Attr("axes", std::vector<int64_t>{})
      .Attr("keep_dims", false)
      .TypeAttr("T", kNumberTypes)
      .SetShapeFn(ReduceShape);
}

#define PF_REDUCE_KERNELS(op, R, mean)                                                                      \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}), ReduceOp<float, R, mean>);   \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), ReduceOp<double, R, mean>); \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_INT32}), ReduceOp<int32_t, R, mean>); \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_INT64}), ReduceOp<int64_t, R, mean>)

PF_REGISTER_OP(ReduceDef("Sum"));
PF_REDUCE_KERNELS("Sum", SumR, false);
PF_REGISTER_OP(ReduceDef("Mean"));
PF_REDUCE_KERNELS("Mean", SumR, true);
PF_REGISTER_OP(ReduceDef("Max"));
PF_REDUCE_KERNELS("Max", MaxR, false);
PF_REGISTER_OP(ReduceDef("Min"));
PF_REDUCE_KERNELS("Min", MinR, false);

// ---- ArgMax ----
template <typename T, typename Index>
class ArgMaxOp : public OpKernel {
 public:
  explicit ArgMaxOp(const Node& n) : OpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor* out, ctx->AllocateOutput(0));
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + in.rank() : axis_);
    if (in.dim(axis) == 0) return errors::InvalidArgument("Reduction axis ", axis, " is empty in shape ", in.shape().ToString());
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= in.dim(d);
    for (int d = axis + 1; d < in.rank(); ++d) inner *= in.dim(d);
    const int64_t n = in.dim(axis);
    const T* x = in.data<T>();
    Index* y = out->data<Index>();
    ParallelFor(ctx, outer * inner, n, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / inner, i = t % inner;
        const T* base = x + o * n * inner + i;
        int64_t best = 0;
        for (int64_t r = 1; r < n; ++r) {
          if (base[r * inner] > base[best * inner]) best = r;
        }
        y[t] = static_cast<Index>(best);
      }
    });
    return Status::OK();
  }

 private:
  int64_t axis_;
};

PF_REGISTER_OP(OpDef("ArgMax")
                   .Input("input", "T")
                   .Output("output", "output_type")
                   .Attr("axis", int64_t{0})
                   .TypeAttr("T", kNumberTypes)
                   .TypeAttr("output_type", kIndexTypes, DT_INT64)
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     Shape in = c.input(0);
                     if (in.unknown_rank()) return (c.set_output(0, in), Status::OK());
                     PF_ASSIGN_OR_RETURN(int axis, c.CanonicalAxis(c.attr<int64_t>("axis"), in.rank()));
                     in.RemoveDim(axis);
                     c.set_output(0, in);
                     return Status::OK();
                   }));
#define PF_ARGMAX_KERNELS(T)                                                                                       \
  PF_REGISTER_KERNEL(KernelDef("ArgMax", kDeviceCpu).TypeConstraint("T", {DataTypeOf<T>()}).TypeConstraint("output_type", {DT_INT32}), ArgMaxOp<T, int32_t>); \
  PF_REGISTER_KERNEL(KernelDef("ArgMax", kDeviceCpu).TypeConstraint("T", {DataTypeOf<T>()}).TypeConstraint("output_type", {DT_INT64}), ArgMaxOp<T, int64_t>)
PF_ARGMAX_KERNELS(float);
PF_ARGMAX_KERNELS(double);
PF_ARGMAX_KERNELS(int32_t);
PF_ARGMAX_KERNELS(int64_t);

// ---- AddN ----
template <typename T>
class AddNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor* out, ctx->AllocateOutput(0));
    T* y = out->data<T>();
    const int k = ctx->num_inputs();
    ParallelFor(ctx, out->num_elements(), k, [&](int64_t b, int64_t e) {
      const T* x0 = ctx->input(0).data<T>();
      for (int64_t i = b; i < e; ++i) y[i] = x0[i];
      for (int j = 1; j < k; ++j) {
        const T* xj = ctx->input(j).data<T>();
        for (int64_t i = b; i < e; ++i) y[i] += xj[i];
      }
    });
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("AddN")
                   .InputList("inputs", "T", "N")
                   .Output("sum", "T")
                   .RequiredAttr("N")
                   .TypeAttr("T", kNumberTypes)
                   .SetShapeFn([](ShapeContext& c) {
                     Shape s = Shape::Unknown();
                     for (int i = 0; i < c.num_inputs(); ++i) {
                       if (!s.IsCompatibleWith(c.input(i))) {
                         return errors::InvalidArgument("Inputs to operation AddN must have the same size and shape.  Input 0: ",
                                                        c.input(0).ToString(), " != input ", i, ": ", c.input(i).ToString());
                       }
                       s = s.MergeWith(c.input(i));
                     }
                     c.set_output(0, s);
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("AddN", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}), AddNOp<float>);
PF_REGISTER_KERNEL(KernelDef("AddN", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), AddNOp<double>);
PF_REGISTER_KERNEL(KernelDef("AddN", kDeviceCpu).TypeConstraint("T", {DT_INT32}), AddNOp<int32_t>);
PF_REGISTER_KERNEL(KernelDef("AddN", kDeviceCpu).TypeConstraint("T", {DT_INT64}), AddNOp<int64_t>);

Output Reduce(const Scope& s, const char* op, Output x, const std::vector<int32_t>& axes, bool keep_dims) {
  return NodeBuilder(s, op)
      .Input(x)
      .Attr("axes", std::vector<int64_t>(axes.begin(), axes.end()))
      .Attr("keep_dims", keep_dims)
      .Finalize();
}

}  // namespace

namespace ops {

Output Sum(const Scope& s, Output x, const std::vector<int32_t>& axes, bool keep_dims) { return Reduce(s, "Sum", x, axes, keep_dims); }
Output Mean(const Scope& s, Output x, const std::vector<int32_t>& axes, bool keep_dims) { return Reduce(s, "Mean", x, axes, keep_dims); }
Output Max(const Scope& s, Output x, const std::vector<int32_t>& axes, bool keep_dims) { return Reduce(s, "Max", x, axes, keep_dims); }
Output Min(const Scope& s, Output x, const std::vector<int32_t>& axes, bool keep_dims) { return Reduce(s, "Min", x, axes, keep_dims); }
Output ArgMax(const Scope& s, Output x, int axis, DType output_type) {
  return NodeBuilder(s, "ArgMax").Input(x).Attr("axis", int64_t{axis}).Attr("output_type", output_type).Finalize();
}
Output AddN(const Scope& s, const std::vector<Output>& inputs) { return NodeBuilder(s, "AddN").InputList(inputs).Finalize(); }

}  // namespace ops
}  // namespace pf
