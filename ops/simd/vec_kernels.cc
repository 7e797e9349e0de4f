// The kernels of vec_kernels.h, compiled once per Highway target (foreach_target.h includes this
// file again for each) and dispatched at run time (HWY_DYNAMIC_DISPATCH) under the ISA cap.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "placeflow/ops/simd/vec_kernels.cc"
#include "placeflow/ops/simd/vec_kernels.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "placeflow/ops/simd/cpu_isa.h"
#include "placeflow/ops/simd/vec_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pf::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The elementwise functions as function objects (lambdas would miss the target attribute).
#define PF_UNARY_OP(Name, expr)               \
  struct Name {                               \
    template <class D, class V>               \
    HWY_INLINE V operator()(D d, V x) const { \
      return expr;                            \
    }                                         \
  };
PF_UNARY_OP(TanhOp, Tanh(d, x))
PF_UNARY_OP(SigmoidOp, Sigmoid(d, x))
PF_UNARY_OP(ExpOp, Exp(d, x))
PF_UNARY_OP(LogOp, Log(d, x))
PF_UNARY_OP(ErfOp, Erf(d, x))
PF_UNARY_OP(ReluOp, hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), x))
PF_UNARY_OP(NegOp, hn::Neg(x))
PF_UNARY_OP(SquareOp, hn::Mul(x, x))
PF_UNARY_OP(SqrtOp, hn::Sqrt(x))
#undef PF_UNARY_OP

#define PF_BINARY_OP(Name, expr)                   \
  struct Name {                                    \
    template <class D, class V>                    \
    HWY_INLINE V operator()(D d, V a, V b) const { \
      return expr;                                 \
    }                                              \
  };
PF_BINARY_OP(AddOp, hn::Add(a, b))
PF_BINARY_OP(SubOp, hn::Sub(a, b))
PF_BINARY_OP(MulOp, hn::Mul(a, b))
PF_BINARY_OP(DivOp, hn::Div(a, b))
PF_BINARY_OP(MaxOp, hn::IfThenElse(hn::Gt(a, b), a, b))
PF_BINARY_OP(MinOp, hn::IfThenElse(hn::Lt(a, b), a, b))
PF_BINARY_OP(ReluGradOp, hn::IfThenElseZero(hn::Gt(b, hn::Zero(d)), a))
PF_BINARY_OP(TanhGradOp, hn::Mul(b, hn::Sub(hn::Set(d, 1.f), hn::Mul(a, a))))  // (y, dy)
PF_BINARY_OP(SigmoidGradOp, hn::Mul(hn::Mul(b, a), hn::Sub(hn::Set(d, 1.f), a)))
PF_BINARY_OP(SquaredDiffOp, hn::Mul(hn::Sub(a, b), hn::Sub(a, b)))
#undef PF_BINARY_OP

// Whole vectors, then the remainder one lane at a time through the same code; fn(d, i) is the
// result at element i for descriptor d.
template <class Fn>
HWY_INLINE void Map(int64_t n, float* y, Fn fn) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(fn(d, i), d, y + i);
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i) hn::StoreU(fn(d1, i), d1, y + i);
}

template <class Op>
struct UnaryAt {
  const float* x;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i) const {
    return Op()(d, hn::LoadU(d, x + i));
  }
};
template <class Op>
struct BinaryAt {
  const float* a;
  const float* b;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i) const {
    return Op()(d, hn::LoadU(d, a + i), hn::LoadU(d, b + i));
  }
};
template <class Op>
struct ScalarBAt {
  const float* a;
  float b;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i) const {
    return Op()(d, hn::LoadU(d, a + i), hn::Set(d, b));
  }
};
template <class Op>
struct ScalarAAt {
  float a;
  const float* b;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i) const {
    return Op()(d, hn::Set(d, a), hn::LoadU(d, b + i));
  }
};
struct AxpyAt {
  float s;
  const float* x;
  const float* y;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i) const {
    return hn::Add(hn::LoadU(d, y + i), hn::Mul(hn::Set(d, s), hn::LoadU(d, x + i)));
  }
};

struct LerpAt {
  const float* a;
  const float* b;
  float t;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i) const {
    const hn::Vec<D> va = hn::LoadU(d, a + i);
    return hn::Add(va, hn::Mul(hn::Sub(hn::LoadU(d, b + i), va), hn::Set(d, t)));
  }
};
// y = a + (b - a) t, a and b gathered from the row s at each lane's lower and upper position:
// floats by index, or (kBytes) 4 bytes read at each byte offset, the low one converted.
template <bool kBytes>
struct LerpGatherAt {
  const void* s;
  const int32_t* lower;
  const int32_t* upper;
  const float* t;
  template <class D>
  HWY_INLINE hn::Vec<D> Gather(D d, const int32_t* at) const {
    const hn::RebindToSigned<D> di;
    if constexpr (kBytes) {
      const auto* words = static_cast<const int32_t*>(s);
      return hn::ConvertTo(
          d, hn::And(hn::GatherOffset(di, words, hn::LoadU(di, at)), hn::Set(di, 0xFF)));
    } else {
      return hn::GatherIndex(d, static_cast<const float*>(s), hn::LoadU(di, at));
    }
  }
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i) const {
    const hn::Vec<D> va = Gather(d, lower + i);
    return hn::Add(va, hn::Mul(hn::Sub(Gather(d, upper + i), va), hn::LoadU(d, t + i)));
  }
};

void UnaryImpl(UnaryFn fn, const float* x, float* y, int64_t n) {
  switch (fn) {
#define PF_CASE(e, Op) \
  case UnaryFn::e:     \
    return Map(n, y, UnaryAt<Op>{x});
    PF_CASE(kTanh, TanhOp)
    PF_CASE(kSigmoid, SigmoidOp)
    PF_CASE(kExp, ExpOp)
    PF_CASE(kLog, LogOp)
    PF_CASE(kErf, ErfOp)
    PF_CASE(kRelu, ReluOp)
    PF_CASE(kNeg, NegOp)
    PF_CASE(kSquare, SquareOp)
    PF_CASE(kSqrt, SqrtOp)
#undef PF_CASE
  }
}

// Each BinaryFn with its function object, for one of the operand forms At.
template <template <class> class At, class... Args>
HWY_INLINE void MapBinary(BinaryFn fn, int64_t n, float* y, Args... args) {
  switch (fn) {
#define PF_CASE(e, Op) \
  case BinaryFn::e:    \
    return Map(n, y, At<Op>{args...});
    PF_CASE(kAdd, AddOp)
    PF_CASE(kSub, SubOp)
    PF_CASE(kMul, MulOp)
    PF_CASE(kDiv, DivOp)
    PF_CASE(kMax, MaxOp)
    PF_CASE(kMin, MinOp)
    PF_CASE(kReluGrad, ReluGradOp)
    PF_CASE(kTanhGrad, TanhGradOp)
    PF_CASE(kSigmoidGrad, SigmoidGradOp)
    PF_CASE(kSquaredDiff, SquaredDiffOp)
#undef PF_CASE
  }
}

void BinaryImpl(BinaryFn fn, const float* a, const float* b, float* y, int64_t n) {
  MapBinary<BinaryAt>(fn, n, y, a, b);
}
void BinaryScalarBImpl(BinaryFn fn, const float* a, float b, float* y, int64_t n) {
  MapBinary<ScalarBAt>(fn, n, y, a, b);
}
void BinaryScalarAImpl(BinaryFn fn, float a, const float* b, float* y, int64_t n) {
  MapBinary<ScalarAAt>(fn, n, y, a, b);
}
void AxpyImpl(float s, const float* x, float* y, int64_t n) { Map(n, y, AxpyAt{s, x, y}); }
void LerpImpl(const float* a, const float* b, float t, float* y, int64_t n) {
  Map(n, y, LerpAt{a, b, t});
}
void LerpGatherImpl(const float* s, const int32_t* lower, const int32_t* upper, const float* t,
                    float* y, int64_t n) {
  Map(n, y, LerpGatherAt<false>{s, lower, upper, t});
}
void LerpGatherU8Impl(const uint8_t* s, const int32_t* lower, const int32_t* upper, const float* t,
                      float* y, int64_t n) {
  Map(n, y, LerpGatherAt<true>{s, lower, upper, t});
}
// LstmCell's and LstmCellGrad's lanes at element k (whole vectors, then one lane at a time).
template <class D>
HWY_INLINE void LstmCellAt(D d, int64_t k, const LstmCellArgs& a, int64_t n) {
  using V = hn::Vec<D>;
  V zi = hn::LoadU(d, a.z + k),
    zf = hn::Add(hn::LoadU(d, a.z + 2 * n + k), hn::Set(d, a.forget_bias)),
    zo = hn::LoadU(d, a.z + 3 * n + k);
  if (a.wci != nullptr) {
    const V cs_prev = hn::LoadU(d, a.cs_prev + k);
    zi = hn::Add(zi, hn::Mul(cs_prev, hn::LoadU(d, a.wci + k)));
    zf = hn::Add(zf, hn::Mul(cs_prev, hn::LoadU(d, a.wcf + k)));
  }
  const V i = Sigmoid(d, zi), ci = Tanh(d, hn::LoadU(d, a.z + n + k)), f = Sigmoid(d, zf);
  V cs = hn::Add(hn::Mul(i, ci), hn::Mul(f, hn::LoadU(d, a.cs_prev + k)));
  if (a.cell_clip > 0) {
    const V c = hn::Set(d, a.cell_clip);
    cs = hn::IfThenElse(hn::Gt(cs, c), c, hn::IfThenElse(hn::Lt(cs, hn::Neg(c)), hn::Neg(c), cs));
  }
  if (a.wco != nullptr) zo = hn::Add(zo, hn::Mul(cs, hn::LoadU(d, a.wco + k)));
  const V o = Sigmoid(d, zo), co = Tanh(d, cs);
  hn::StoreU(i, d, a.i + k);
  hn::StoreU(ci, d, a.ci + k);
  hn::StoreU(f, d, a.f + k);
  hn::StoreU(cs, d, a.cs + k);
  hn::StoreU(o, d, a.o + k);
  hn::StoreU(co, d, a.co + k);
  hn::StoreU(hn::Mul(co, o), d, a.h + k);
}

template <class D>
HWY_INLINE void LstmCellGradAt(D d, int64_t k, const LstmCellGradArgs& a, int64_t n) {
  using V = hn::Vec<D>;
  const V one = hn::Set(d, 1.f);
  const V i = hn::LoadU(d, a.i + k), f = hn::LoadU(d, a.f + k), o = hn::LoadU(d, a.o + k),
          ci = hn::LoadU(d, a.ci + k), co = hn::LoadU(d, a.co + k),
          dh = hn::Add(hn::LoadU(d, a.h_grad + k), hn::LoadU(d, a.dh_next + k));
  const V d_o = hn::Mul(hn::Mul(hn::Mul(dh, co), o), hn::Sub(one, o));
  V dcs = hn::Add(hn::Add(hn::LoadU(d, a.cs_grad + k), hn::LoadU(d, a.dcs + k)),
                  hn::Mul(hn::Mul(dh, o), hn::Sub(one, hn::Mul(co, co))));
  if (a.wco != nullptr) dcs = hn::Add(dcs, hn::Mul(d_o, hn::LoadU(d, a.wco + k)));
  if (a.cell_clip > 0) {
    const V clip = hn::Set(d, a.cell_clip);
    dcs = hn::IfThenZeroElse(hn::Ge(hn::Abs(hn::LoadU(d, a.cs + k)), clip), dcs);
  }
  const V cs_prev = hn::LoadU(d, a.cs_prev + k);
  const V dci = hn::Mul(hn::Mul(dcs, i), hn::Sub(one, hn::Mul(ci, ci)));
  const V df = hn::Mul(hn::Mul(hn::Mul(dcs, cs_prev), f), hn::Sub(one, f));
  const V di = hn::Mul(hn::Mul(hn::Mul(dcs, ci), i), hn::Sub(one, i));
  V dcs_prev = hn::Mul(dcs, f);
  if (a.wci != nullptr)
    dcs_prev = hn::Add(hn::Add(dcs_prev, hn::Mul(di, hn::LoadU(d, a.wci + k))),
                       hn::Mul(df, hn::LoadU(d, a.wcf + k)));
  hn::StoreU(di, d, a.dz + k);
  hn::StoreU(dci, d, a.dz + n + k);
  hn::StoreU(df, d, a.dz + 2 * n + k);
  hn::StoreU(d_o, d, a.dz + 3 * n + k);
  hn::StoreU(dcs_prev, d, a.dcs + k);
}

// Whole vectors, then the remainder one lane at a time through the same code.
template <class Args, void (*kAt)(hn::ScalableTag<float>, int64_t, const Args&, int64_t),
          void (*kAt1)(hn::CappedTag<float, 1>, int64_t, const Args&, int64_t)>
HWY_INLINE void ForLanes(const Args& a, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t k = 0;
  for (; k + lanes <= n; k += lanes) kAt(d, k, a, n);
  for (; k < n; ++k) kAt1(hn::CappedTag<float, 1>(), k, a, n);
}

void LstmCellImpl(const LstmCellArgs& a, int64_t n) {
  ForLanes<LstmCellArgs, LstmCellAt<hn::ScalableTag<float>>, LstmCellAt<hn::CappedTag<float, 1>>>(
      a, n);
}
void LstmCellGradImpl(const LstmCellGradArgs& a, int64_t n) {
  ForLanes<LstmCellGradArgs, LstmCellGradAt<hn::ScalableTag<float>>,
           LstmCellGradAt<hn::CappedTag<float, 1>>>(a, n);
}
const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace pf::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pf::simd {

HWY_EXPORT(UnaryImpl);
HWY_EXPORT(BinaryImpl);
HWY_EXPORT(BinaryScalarBImpl);
HWY_EXPORT(BinaryScalarAImpl);
HWY_EXPORT(AxpyImpl);
HWY_EXPORT(LerpImpl);
HWY_EXPORT(LerpGatherImpl);
HWY_EXPORT(LerpGatherU8Impl);
HWY_EXPORT(LstmCellImpl);
HWY_EXPORT(LstmCellGradImpl);
HWY_EXPORT(TargetNameImpl);

// ActiveCpuIsa() first: it hands PF_MAX_CPU_ISA to Highway before the first dispatch.
void Unary(UnaryFn fn, const float* x, float* y, int64_t n) {
  ActiveCpuIsa();
  HWY_DYNAMIC_DISPATCH(UnaryImpl)(fn, x, y, n);
}
void Binary(BinaryFn fn, const float* a, const float* b, float* y, int64_t n) {
  ActiveCpuIsa();
  HWY_DYNAMIC_DISPATCH(BinaryImpl)(fn, a, b, y, n);
}
void BinaryScalarB(BinaryFn fn, const float* a, float b, float* y, int64_t n) {
  ActiveCpuIsa();
  HWY_DYNAMIC_DISPATCH(BinaryScalarBImpl)(fn, a, b, y, n);
}
void BinaryScalarA(BinaryFn fn, float a, const float* b, float* y, int64_t n) {
  ActiveCpuIsa();
  HWY_DYNAMIC_DISPATCH(BinaryScalarAImpl)(fn, a, b, y, n);
}
void Axpy(float s, const float* x, float* y, int64_t n) {
  ActiveCpuIsa();
  HWY_DYNAMIC_DISPATCH(AxpyImpl)(s, x, y, n);
}
void Lerp(const float* a, const float* b, float t, float* y, int64_t n) {
  ActiveCpuIsa();
  HWY_DYNAMIC_DISPATCH(LerpImpl)(a, b, t, y, n);
}
void LerpGather(const float* s, const int32_t* lower, const int32_t* upper, const float* t,
                float* y, int64_t n) {
  ActiveCpuIsa();
  HWY_DYNAMIC_DISPATCH(LerpGatherImpl)(s, lower, upper, t, y, n);
}
void LerpGatherU8(const uint8_t* s, const int32_t* lower, const int32_t* upper, const float* t,
                  float* y, int64_t n) {
  ActiveCpuIsa();
  HWY_DYNAMIC_DISPATCH(LerpGatherU8Impl)(s, lower, upper, t, y, n);
}
void LstmCell(const LstmCellArgs& a, int64_t n) {
  ActiveCpuIsa();
  HWY_DYNAMIC_DISPATCH(LstmCellImpl)(a, n);
}
void LstmCellGrad(const LstmCellGradArgs& a, int64_t n) {
  ActiveCpuIsa();
  HWY_DYNAMIC_DISPATCH(LstmCellGradImpl)(a, n);
}
const char* DispatchedTargetName() {
  ActiveCpuIsa();
  return HWY_DYNAMIC_DISPATCH(TargetNameImpl)();
}

}  // namespace pf::simd
#endif  // HWY_ONCE
