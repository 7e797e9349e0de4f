// Ops that make values from shapes or convert them: Cast, Fill, ZerosLike, OnesLike, OneHot.
#include "placeflow/ops/array/fill_ops.h"

#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// Cast's attrs take every dtype, so that a string gets CastShape's error and not the generic one.
std::vector<DType> CastTypes() {
  std::vector<DType> types = kRealNumberTypes;
  types.push_back(DT_BOOL);
  types.push_back(DT_STRING);
  return types;
}
std::string CastTypeNames() {
  std::string names;
  for (DType t : CastTypes()) {
    if (!DTypeIsNumeric(t)) continue;
    names += (names.empty() ? "" : ", ") + std::string(DTypeName(t));
  }
  return names;
}

// A value as the type Cast converts from: half and bfloat16 as float, the others as they are.
template <typename T>
auto Widen(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return HalfToFloat(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16ToFloat(v);
  else
    return v;
}

// One element of Cast, TF's semantics made defined (docs/api.md "Dtypes"):
// - to bool: v != 0 (NaN is true); from bool: 0 or 1;
// - to half/bfloat16: through float, rounded to nearest even (a double rounds twice, as TF's);
// - floating to integer: the fraction is truncated toward zero; NaN becomes 0 and values past
//   the integer type's range saturate at its limits (static_cast is undefined there: x86 gives
//   INT_MIN, other CPUs other values);
// - integer to integer: two's-complement wrap-around (C++20 static_cast, as TF: int32 300 is
//   uint8 44, int32 -1 is uint8 255); integer to floating: rounds to nearest.
template <typename D, typename S>
D CastValue(S raw) {
  const auto v = Widen(raw);
  using V = decltype(v);
  if constexpr (std::is_same_v<D, Half>) {
    return FloatToHalf(static_cast<float>(v));
  } else if constexpr (std::is_same_v<D, BFloat16>) {
    return FloatToBFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != V(0);
  } else if constexpr (std::is_floating_point_v<V> && std::is_integral_v<D>) {
    if (std::isnan(v)) return D(0);
    // The limits as V: lo is exact (a power of two or 0), hi rounds up to 2^bits at most, so
    // >= is the test.
    constexpr V lo = static_cast<V>(std::numeric_limits<D>::min());
    constexpr V hi = static_cast<V>(std::numeric_limits<D>::max());
    if (v <= lo) return std::numeric_limits<D>::min();
    if (v >= hi) return std::numeric_limits<D>::max();
    return static_cast<D>(v);
  } else {
    return static_cast<D>(v);
  }
}

// Cast converts between the numeric dtypes only: a string has no number to convert.
Status CastShape(ShapeContext& c) {
  for (const char* attr : {"SrcT", "DstT"}) {
    const DType t = c.attr<DType>(attr);
    if (!DTypeIsNumeric(t)) {
      return errors::InvalidArgument(
          "Cast ", DTypeName(c.attr<DType>("SrcT")), " to ", DTypeName(c.attr<DType>("DstT")),
          " is not supported: ", DTypeName(t), " is not a numeric dtype (", attr,
          "); Cast converts between ", CastTypeNames());
    }
  }
  return UnchangedShape(c);
}

class CastOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const DType to = ctx->output_dtype(0);
    if (in.dtype() == to && DTypeIsNumeric(to)) return ctx->ForwardInput(0, 0);
    Status s =
        errors::InvalidArgument("Cast ", DTypeName(in.dtype()), " to ", DTypeName(to),
                                " is not supported: Cast converts between ", CastTypeNames());
    VisitNumericDType(in.dtype(), [&](auto src) {
      using S = decltype(src);
      VisitNumericDType(to, [&](auto dst) {
        using D = decltype(dst);
        s = UnaryElementwise<S, D>(ctx, [](S v) { return CastValue<D, S>(v); });
      });
    });
    return s;
  }
};

PF_REGISTER_OP(OpDef("Cast")
                   .SetForwardsInput()
                   .Input("x", "SrcT")
                   .Output("y", "DstT")
                   .TypeAttr("SrcT", CastTypes())
                   .TypeAttr("DstT", CastTypes())
                   .SetGradient([](const Scope& s, const Node& n, const Grads& g, Grads* dx) {
                     // Only floating-to-floating casts carry a gradient.
                     const DType src = n.attr<DType>("SrcT");
                     *dx = {DTypeIsFloating(src) && DTypeIsFloating(n.attr<DType>("DstT"))
                                ? ops::Cast(s, g[0], src)
                                : Output()};
                     return Status::OK();
                   })
                   .SetShapeFn(CastShape));
PF_REGISTER_KERNEL(KernelDef("Cast", kDeviceCpu), CastOp);

template <typename T>
void FillWith(OpKernelContext* ctx, Tensor* out, T v) {
  T* p = out->data<T>();
  ParallelFor(ctx, out->num_elements(), 1,
              [&](int64_t b, int64_t e) { std::fill(p + b, p + e, v); });
}

class FillOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(ValidateFillValue(ctx->input(1).shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    VisitDType(out->dtype(), [&](auto t) {
      using T = decltype(t);
      FillWith<T>(ctx, out, ctx->input(1).scalar<T>());
    });
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("Fill")
                   .Input("dims", "index_type")
                   .Input("value", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kComputableTypes)
                   .TypeAttr("index_type", kIndexTypes, DT_INT32)
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(c.WithRank(0, 1));
                     // In a known value -1 is a bad dim, not an unknown one (TF's MakeShape).
                     if (const Tensor* t = c.input_tensor(0); t != nullptr) {
                       const std::vector<int64_t> dims = t->AsInt64Vector();
                       if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; }))
                         return errors::InvalidArgument("Fill dimensions must be >= 0, got [",
                                                        fmt::format("{}", fmt::join(dims, ",")),
                                                        "]");
                     }
                     PF_ASSIGN_OR_RETURN(Shape s, c.ShapeFromInputTensor(0));
                     c.set_output(0, s);
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("Fill", kDeviceCpu).HostMemory("dims"), FillOp);

template <int kValue>
class ConstantLikeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    VisitNumericDType(out->dtype(), [&](auto t) {
      using T = decltype(t);
      FillWith<T>(ctx, out, CastValue<T>(int32_t{kValue}));
    });
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("ZerosLike")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", kNonStringTypes)
                   .SetNotDifferentiable()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("ZerosLike", kDeviceCpu), ConstantLikeOp<0>);
PF_REGISTER_OP(OpDef("OnesLike")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", kNonStringTypes)
                   .SetNotDifferentiable()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("OnesLike", kDeviceCpu), ConstantLikeOp<1>);

template <typename Index>
class OneHotOp : public OpKernel {
 public:
  explicit OneHotOp(const Node& n)
      : OpKernel(n), on_(n.attr<float>("on_value")), off_(n.attr<float>("off_value")) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const Index* idx = ctx->input(0).template data<Index>();
    const int64_t depth = out->dim(out->rank() - 1);
    VisitDType(out->dtype(), [&](auto t) {
      using T = decltype(t);
      T* y = out->data<T>();
      ParallelFor(ctx, ctx->input(0).num_elements(), depth, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          T* row = y + i * depth;
          std::fill(row, row + depth, static_cast<T>(off_));
          // Out-of-range indices give an all-off row, as in TensorFlow.
          if (idx[i] >= 0 && idx[i] < depth) row[idx[i]] = static_cast<T>(on_);
        }
      });
    });
    return Status::OK();
  }

 private:
  float on_, off_;
};

PF_REGISTER_OP(OpDef("OneHot")
                   .Input("indices", "TI")
                   .Output("output", "T")
                   .RequiredAttr("depth")
                   .Attr("on_value", 1.f)
                   .Attr("off_value", 0.f)
                   .TypeAttr("T", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}, DT_FLOAT)
                   .TypeAttr("TI", kIndexTypes)
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     int64_t depth = c.attr<int64_t>("depth");
                     if (depth < 0)
                       return errors::InvalidArgument("depth must be non-negative, got: ", depth);
                     Shape s = c.input(0);
                     if (!s.unknown_rank()) s.AddDim(depth);
                     c.set_output(0, s);
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("OneHot", kDeviceCpu).TypeConstraint("TI", {DT_INT32}),
                   OneHotOp<int32_t>);
PF_REGISTER_KERNEL(KernelDef("OneHot", kDeviceCpu).TypeConstraint("TI", {DT_INT64}),
                   OneHotOp<int64_t>);

}  // namespace

namespace ops {

Output Cast(const Scope& s, Output x, DType dtype) {
  return NodeBuilder(s, "Cast").Input(x).Attr("DstT", dtype).Finalize();
}
Output Fill(const Scope& s, Output dims, Output value) {
  return NodeBuilder(s, "Fill").Input(dims).Input(value).Finalize();
}
Output ZerosLike(const Scope& s, Output x) {
  return NodeBuilder(s, "ZerosLike").Input(x).Finalize();
}
Output OnesLike(const Scope& s, Output x) { return NodeBuilder(s, "OnesLike").Input(x).Finalize(); }
Output OneHot(const Scope& s, Output indices, int depth, float on_value, float off_value) {
  return NodeBuilder(s, "OneHot")
      .Input(indices)
      .Attr("depth", int64_t{depth})
      .Attr("on_value", on_value)
      .Attr("off_value", off_value)
      .Finalize();
}

}  // namespace ops
}  // namespace pf
