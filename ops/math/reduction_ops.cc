// Reductions: Sum Mean Prod Max Min over axes (keep_dims), ArgMax and ArgMin, and AddN.
// Sum/Mean/Prod/Max/Min take TF's real number types (docs/api.md "Dtypes"): integers accumulate in
// their own type (wrapping around, as TF's), half and bfloat16 in float, rounded once at the end.
#include "placeflow/ops/math/reduction_ops.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <type_traits>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/math/reduce_impl.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {

StatusOr<std::vector<bool>> ReducedDims(const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      return errors::InvalidArgument("Invalid reduction dimension (", a, " for input with ", rank,
                                     " dimension(s)");
    }
    reduced[a < 0 ? a + rank : a] = true;
  }
  return reduced;
}

StatusOr<int> ArgMaxAxis(const Shape& in, int64_t axis) {
  const int rank = in.rank();
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument("axis ", axis, " is out of range for a tensor of rank ", rank,
                                   "; expected in [", -rank, ", ", rank, ")");
  }
  const int a = static_cast<int>(axis < 0 ? axis + rank : axis);
  if (in.dim(a) == 0) {
    return errors::InvalidArgument("Reduction axis ", a, " is empty in shape ", in.ToString());
  }
  return a;
}

StatusOr<Shape> AddNShape(const std::vector<Shape>& inputs) {
  Shape s = Shape::Unknown();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!s.IsCompatibleWith(inputs[i])) {
      return errors::InvalidArgument(
          "Inputs to operation AddN must have the same size and shape.  Input 0: ",
          inputs[0].ToString(), " != input ", i, ": ", inputs[i].ToString());
    }
    s = s.MergeWith(inputs[i]);
  }
  return s;
}

namespace {

Status ReduceShape(ShapeContext& c) {
  const Shape& in = c.input(0);
  const bool keep = c.attr<bool>("keep_dims");
  if (in.unknown_rank()) return (c.set_output(0, Shape::Unknown()), Status::OK());
  PF_ASSIGN_OR_RETURN(auto reduced, ReducedDims(c.attr<std::vector<int64_t>>("axes"), in.rank()));
  Shape out;
  for (int d = 0; d < in.rank(); ++d) {
    if (!reduced[d])
      out.AddDim(in.dim(d));
    else if (keep)
      out.AddDim(1);
  }
  c.set_output(0, out);
  return Status::OK();
}

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Mean's division of a sum of `count` values: in T for floating types; for integers in int64
// (truncating toward zero, as TF), so that a count past T's range divides right.
template <typename T>
T DivideByCount(T sum, int64_t count) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<int64_t>(sum) / count);
  else
    return sum / static_cast<T>(count);
}

// Reduces `in` as floats into `out` (half or bfloat16): converted in, reduced, rounded back.
template <typename T, typename R, bool kMean>
void ReduceViaFloat(OpKernelContext* ctx, const Tensor& in, const std::vector<bool>& reduced,
                    Tensor* out) {
  Tensor fin(DT_FLOAT, in.shape()), fout(DT_FLOAT, out->shape());
  const T* x = in.data<T>();
  float* xf = fin.data<float>();
  ParallelFor(ctx, in.num_elements(), 2, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if constexpr (std::is_same_v<T, Half>)
        xf[i] = HalfToFloat(x[i]);
      else
        xf[i] = BFloat16ToFloat(x[i]);
    }
  });
  Reduce<float, R>(ctx, fin, reduced, &fout);
  const int64_t count = out->num_elements() == 0 ? 0 : in.num_elements() / out->num_elements();
  const float* yf = fout.data<float>();
  T* y = out->data<T>();
  for (int64_t i = 0; i < out->num_elements(); ++i) {
    const float v = kMean && count > 0 ? DivideByCount(yf[i], count) : yf[i];
    if constexpr (std::is_same_v<T, Half>)
      y[i] = FloatToHalf(v);
    else
      y[i] = FloatToBFloat16(v);
  }
}

// Reductions over `axes` of the input; Mean divides by the count afterwards.
template <typename T, typename R, bool kMean>
class ReduceOp : public OpKernel {
 public:
  explicit ReduceOp(const Node& n) : OpKernel(n), axes_(n.attr<std::vector<int64_t>>("axes")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(auto reduced, ReducedDims(axes_, in.rank()));
    if constexpr (kIsHalf<T>) {
      ReduceViaFloat<T, R, kMean>(ctx, in, reduced, out);
    } else {
      Reduce<T, R>(ctx, in, reduced, out);
      if constexpr (kMean) {
        const int64_t count =
            out->num_elements() == 0 ? 0 : in.num_elements() / out->num_elements();
        if (count > 0) {
          for (T& v : out->flat<T>()) v = DivideByCount(v, count);
        }
      }
    }
    return Status::OK();
  }

 private:
  std::vector<int64_t> axes_;
};

PF_GRAD(SumGrad) {
  *dx = {ReduceGrad(s, g[0], n.input(0), n.attr<std::vector<int64_t>>("axes"), false)};
  return Status::OK();
}
PF_GRAD(MeanGrad) {
  *dx = {ReduceGrad(s, g[0], n.input(0), n.attr<std::vector<int64_t>>("axes"), true)};
  return Status::OK();
}
// Prod: d/dx_i = the product of the others, exact with zeros among them (TF's result): where
// the reduced group has no zero it is prod / x_i; where it has one zero, prod(nonzero) at the
// zero and 0 elsewhere; where it has more, 0.
PF_GRAD(ProdGrad) {
  const auto& axes = n.attr<std::vector<int64_t>>("axes");
  const std::vector<int32_t> axes32(axes.begin(), axes.end());
  const Output x = n.input(0);
  const DType t = x.dtype();
  Output is_zero = ops::Cast(s, ops::Equal(s, x, ScalarOf(s, 0, t)), t);
  Output nonzero = ops::Add(s, x, is_zero);  // the zeros as ones
  Output prod_nonzero = ops::Prod(s, nonzero, axes32, true);
  Output zeros = ops::Sum(s, is_zero, axes32, true);
  Output none = ops::Cast(s, ops::Equal(s, zeros, ScalarOf(s, 0, t)), t);
  Output one = ops::Cast(s, ops::Equal(s, zeros, ScalarOf(s, 1, t)), t);
  Output others = ops::Add(s, ops::Mul(s, none, ops::Div(s, prod_nonzero, nonzero)),
                           ops::Mul(s, ops::Mul(s, one, is_zero), prod_nonzero));
  *dx = {ops::Mul(s, ReduceGrad(s, g[0], x, axes, false), others)};
  return Status::OK();
}
// Max/Min: the gradient is shared among the elements equal to the result.
PF_GRAD(MaxMinGrad) {
  const auto& axes = n.attr<std::vector<int64_t>>("axes");
  const Output x = n.input(0);
  Output hit = ops::Cast(s, ops::Equal(s, x, ReduceGrad(s, Out(n), x, axes, false)), x.dtype());
  std::vector<int32_t> axes32(axes.begin(), axes.end());
  Output count = ReduceGrad(s, ops::Sum(s, hit, axes32), x, axes, false);
  *dx = {ops::Div(s, ops::Mul(s, ReduceGrad(s, g[0], x, axes, false), hit), count)};
  return Status::OK();
}

OpDef ReduceDef(const char* name) {
  return OpDef(name)
      .Input("input", "T")
      .Output("output", "T")
      .Attr("axes", std::vector<int64_t>{})
      .Attr("keep_dims", false)
      .TypeAttr("T", kRealNumberTypes)
      .SetShapeFn(ReduceShape);
}

#define PF_REDUCE_KERNEL(op, T, R, mean)                                               \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DataTypeOf<T>()}), \
                     ReduceOp<T, R, mean>)
#define PF_REDUCE_KERNELS(op, R, mean)     \
  PF_REDUCE_KERNEL(op, float, R, mean);    \
  PF_REDUCE_KERNEL(op, double, R, mean);   \
  PF_REDUCE_KERNEL(op, int32_t, R, mean);  \
  PF_REDUCE_KERNEL(op, int64_t, R, mean);  \
  PF_REDUCE_KERNEL(op, Half, R, mean);     \
  PF_REDUCE_KERNEL(op, BFloat16, R, mean); \
  PF_REDUCE_KERNEL(op, int8_t, R, mean);   \
  PF_REDUCE_KERNEL(op, int16_t, R, mean);  \
  PF_REDUCE_KERNEL(op, uint8_t, R, mean)

PF_REGISTER_OP(ReduceDef("Sum").SetGradient(SumGrad));
PF_REDUCE_KERNELS("Sum", SumR, false);
PF_REGISTER_OP(ReduceDef("Mean").SetGradient(MeanGrad));
PF_REDUCE_KERNELS("Mean", SumR, true);
PF_REGISTER_OP(ReduceDef("Prod").SetGradient(ProdGrad));
PF_REDUCE_KERNELS("Prod", ProdR, false);
PF_REGISTER_OP(ReduceDef("Max").SetGradient(MaxMinGrad));
PF_REDUCE_KERNELS("Max", MaxR, false);
PF_REGISTER_OP(ReduceDef("Min").SetGradient(MaxMinGrad));
PF_REDUCE_KERNELS("Min", MinR, false);

// ---- ArgMax, ArgMin: the first index of the largest (smallest) value along `axis` ----
template <typename T, typename Index, typename Better>
class ArgOp : public OpKernel {
 public:
  explicit ArgOp(const Node& n) : OpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(const int axis, ArgMaxAxis(in.shape(), axis_));
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
          if (Better()(base[r * inner], base[best * inner])) best = r;
        }
        y[t] = static_cast<Index>(best);
      }
    });
    return Status::OK();
  }

 private:
  int64_t axis_;
};

OpDef ArgDef(const char* name) {
  return OpDef(name)
      .Input("input", "T")
      .Output("output", "output_type")
      .Attr("axis", int64_t{0})
      .TypeAttr("T", kNumberTypes)
      .TypeAttr("output_type", kIndexTypes, DT_INT64)
      .SetNotDifferentiable()
      .SetShapeFn([](ShapeContext& c) {
        Shape in = c.input(0);
        if (in.unknown_rank()) return (c.set_output(0, in), Status::OK());
        PF_ASSIGN_OR_RETURN(int axis, ArgMaxAxis(in, c.attr<int64_t>("axis")));
        in.RemoveDim(axis);
        c.set_output(0, in);
        return Status::OK();
      });
}
PF_REGISTER_OP(ArgDef("ArgMax"));
PF_REGISTER_OP(ArgDef("ArgMin"));
#define PF_ARG_KERNELS(NAME, T, BETTER)                              \
  PF_REGISTER_KERNEL(KernelDef(NAME, kDeviceCpu)                     \
                         .TypeConstraint("T", {DataTypeOf<T>()})     \
                         .TypeConstraint("output_type", {DT_INT32}), \
                     ArgOp<T, int32_t, BETTER<T>>);                  \
  PF_REGISTER_KERNEL(KernelDef(NAME, kDeviceCpu)                     \
                         .TypeConstraint("T", {DataTypeOf<T>()})     \
                         .TypeConstraint("output_type", {DT_INT64}), \
                     ArgOp<T, int64_t, BETTER<T>>)
#define PF_ARGMAX_ARGMIN_KERNELS(T)          \
  PF_ARG_KERNELS("ArgMax", T, std::greater); \
  PF_ARG_KERNELS("ArgMin", T, std::less)
PF_ARGMAX_ARGMIN_KERNELS(float);
PF_ARGMAX_ARGMIN_KERNELS(double);
PF_ARGMAX_ARGMIN_KERNELS(int32_t);
PF_ARGMAX_ARGMIN_KERNELS(int64_t);

// ---- AddN ----
Status CheckAddNInputs(OpKernelContext* ctx) {
  std::vector<Shape> inputs;
  for (int i = 0; i < ctx->num_inputs(); ++i) inputs.push_back(ctx->input(i).shape());
  return AddNShape(inputs).status();
}

template <typename T>
class AddNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(CheckAddNInputs(ctx));
    // The sum may be written over the first input (each element is read before it is written).
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->ForwardInputOrAllocateOutput({0}, 0));
    T* y = out->data<T>();
    const int k = ctx->num_inputs();
    std::vector<const T*> x(k);
    for (int j = 0; j < k; ++j) x[j] = ctx->input(j).data<T>();
    // One pass over the output in L1-sized chunks: the first two inputs summed into it, then
    // each further input added while the chunk is still in cache.
    ParallelFor(ctx, out->num_elements(), k, [&](int64_t b, int64_t e) {
      constexpr int64_t kChunk = 2048;
      for (int64_t c = b; c < e; c += kChunk) {
        const int64_t ce = std::min(e, c + kChunk);
        if (k == 1) {
          if (y != x[0]) std::copy(x[0] + c, x[0] + ce, y + c);
          continue;
        }
        const T *x0 = x[0], *x1 = x[1];
        SimdFor(c, ce, [&](int64_t i) { y[i] = x0[i] + x1[i]; });
        for (int j = 2; j < k; ++j) {
          const T* xj = x[j];
          SimdFor(c, ce, [&](int64_t i) { y[i] += xj[i]; });
        }
      }
    });
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("AddN")
                   .InputList("inputs", "T", "N")
                   .Output("sum", "T")
                   .RequiredAttr("N")
                   .TypeAttr("T", kNumberAndHalfTypes)
                   .SetGradient([](const Scope&, const Node& n, const Grads& g, Grads* dx) {
                     dx->assign(n.num_inputs(), g[0]);
                     return Status::OK();
                   })
                   .SetShapeFn([](ShapeContext& c) {
                     std::vector<Shape> inputs;
                     for (int i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.input(i));
                     PF_ASSIGN_OR_RETURN(Shape s, AddNShape(inputs));
                     c.set_output(0, s);
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("AddN", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}), AddNOp<float>);
PF_REGISTER_KERNEL(KernelDef("AddN", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), AddNOp<double>);
PF_REGISTER_KERNEL(KernelDef("AddN", kDeviceCpu).TypeConstraint("T", {DT_INT32}), AddNOp<int32_t>);
PF_REGISTER_KERNEL(KernelDef("AddN", kDeviceCpu).TypeConstraint("T", {DT_INT64}), AddNOp<int64_t>);

Output Reduce(const Scope& s, const char* op, Output x, const std::vector<int32_t>& axes,
              bool keep_dims) {
  return NodeBuilder(s, op)
      .Input(x)
      .Attr("axes", std::vector<int64_t>(axes.begin(), axes.end()))
      .Attr("keep_dims", keep_dims)
      .Finalize();
}

}  // namespace

namespace ops {

Output Sum(const Scope& s, Output x, const std::vector<int32_t>& axes, bool keep_dims) {
  return Reduce(s, "Sum", x, axes, keep_dims);
}
Output Mean(const Scope& s, Output x, const std::vector<int32_t>& axes, bool keep_dims) {
  return Reduce(s, "Mean", x, axes, keep_dims);
}
Output Prod(const Scope& s, Output x, const std::vector<int32_t>& axes, bool keep_dims) {
  return Reduce(s, "Prod", x, axes, keep_dims);
}
Output Max(const Scope& s, Output x, const std::vector<int32_t>& axes, bool keep_dims) {
  return Reduce(s, "Max", x, axes, keep_dims);
}
Output Min(const Scope& s, Output x, const std::vector<int32_t>& axes, bool keep_dims) {
  return Reduce(s, "Min", x, axes, keep_dims);
}
Output ArgMax(const Scope& s, Output x, int axis, DType output_type) {
  return NodeBuilder(s, "ArgMax")
      .Input(x)
      .Attr("axis", int64_t{axis})
      .Attr("output_type", output_type)
      .Finalize();
}
Output AddN(const Scope& s, const std::vector<Output>& inputs) {
  return NodeBuilder(s, "AddN").InputList(inputs).Finalize();
}

}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_REDUCE_KERNEL
#undef PF_REDUCE_KERNELS
#undef PF_ARG_KERNELS
#undef PF_ARGMAX_ARGMIN_KERNELS
