// Float math on Highway vectors, compiled once per target by vec_kernels.cc (Highway's per-target
// "-inl.h" pattern: the guard below flips with HWY_TARGET_TOGGLE, so each target gets a copy).
// Each function takes a descriptor d and a vector; a 1-lane descriptor runs the same code on a
// remainder, so every element of an array gets the same bits whatever the target.
//
// Only correctly rounded IEEE operations appear (Add, Sub, Mul, Div, Round, compare-select, bit
// moves; never MulAdd or an approximate reciprocal): SSE4, AVX2 and AVX-512 round alike, so the
// targets agree to the bit. Accuracy, measured over every float: docs/simd.md.
#if defined(PLACEFLOW_OPS_SIMD_VEC_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PLACEFLOW_OPS_SIMD_VEC_MATH_INL_H_
#undef PLACEFLOW_OPS_SIMD_VEC_MATH_INL_H_
#else
#define PLACEFLOW_OPS_SIMD_VEC_MATH_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pf::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// p * s + c, the multiply rounded before the add.
template <class D, class V>
HWY_INLINE V MulAddRounded(D d, V p, V s, float c) {
  return hn::Add(hn::Mul(p, s), hn::Set(d, c));
}

// lo where v < lo, hi where v > hi, else v: NaN passes (both comparisons are false).
template <class D, class V>
HWY_INLINE V Clamp(D d, V v, float lo, float hi) {
  const V l = hn::Set(d, lo), h = hn::Set(d, hi);
  return hn::IfThenElse(hn::Lt(v, l), l, hn::IfThenElse(hn::Gt(v, h), h, v));
}

// +-1 (v's sign) where |v| > edge, else r: for tanh and erf, whose float value is exactly +-1
// beyond the edge (1 - f(edge) = 2^-25, half an ulp below 1), where the rational is 1 ulp short.
template <class D, class V>
HWY_INLINE V SaturateBeyond(D d, V v, float edge, V r) {
  return hn::IfThenElse(hn::Gt(hn::Abs(v), hn::Set(d, edge)), hn::CopySign(hn::Set(d, 1.f), v), r);
}

// tanh(x) = x P(x^2) / Q(x^2), fitted by tools/math/fit_tanh.py on [0, 9] (beyond 9 tanh rounds
// to +-1 in float). At most 3.7e-7 relative (3.9 ulp for |x| < 2, 6.2 ulp up to 9). P(0) = Q(0) = 1
// keeps -0, tiny and subnormal x exact; beyond 9.0109 (+-inf too) the result is exactly +-1.
template <class D, class V>
HWY_INLINE V Tanh(D d, V v) {
  const V x = Clamp(d, v, -9.f, 9.f);
  const V s = hn::Mul(x, x);
  V p = hn::Set(d, 1.34186546e-08f);
  p = MulAddRounded(d, p, s, 2.06604163e-05f);
  p = MulAddRounded(d, p, s, 0.00349894492f);
  p = MulAddRounded(d, p, s, 0.133839384f);
  p = MulAddRounded(d, p, s, 1.f);
  V q = hn::Set(d, 7.80424955e-07f);
  q = MulAddRounded(d, q, s, 0.000329095434f);
  q = MulAddRounded(d, q, s, 0.0258900132f);
  q = MulAddRounded(d, q, s, 0.467172593f);
  q = MulAddRounded(d, q, s, 1.f);
  return SaturateBeyond(d, v, 9.01091337f, hn::Div(hn::Mul(x, p), q));
}

// e^x = 2^n e^r with n = round(x / ln 2) and r = x - n ln 2, ln 2 in two parts (the first has 9
// significant bits, so n times it is exact); e^r by a degree-7 polynomial (Cephes' expf
// coefficients, published in S. Moshier's Cephes library). 2^n is built as 2^h 2^(n-h) so that
// both factors are normal floats for every n in [-150, 128]: results near overflow round to +inf
// and subnormal results round once. x is clamped to [-104, 88.76] first, where e^x is 0 or +inf in
// float anyway; NaN stays NaN.
template <class D, class V>
HWY_INLINE V Exp(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V xc = Clamp(d, x, -104.f, 88.76f);
  // n = round(x log2 e) (to nearest, ties to even) and its int32 by adding 1.5 * 2^23: exact for
  // |x log2 e| < 2^22, and cheaper than Round and ConvertTo (with its overflow fix-up).
  const V magic = hn::Set(d, 12582912.f);
  const V t = hn::Add(hn::Mul(xc, hn::Set(d, 1.44269504088896341f)), magic);
  const V n = hn::Sub(t, magic);
  V r = hn::Sub(xc, hn::Mul(n, hn::Set(d, 0.693359375f)));
  r = hn::Sub(r, hn::Mul(n, hn::Set(d, -2.12194440e-4f)));
  V p = hn::Set(d, 1.9875691500e-4f);
  p = MulAddRounded(d, p, r, 1.3981999507e-3f);
  p = MulAddRounded(d, p, r, 8.3334519073e-3f);
  p = MulAddRounded(d, p, r, 4.1665795894e-2f);
  p = MulAddRounded(d, p, r, 1.6666665459e-1f);
  p = MulAddRounded(d, p, r, 5.0000001201e-1f);
  p = hn::Add(hn::Add(hn::Mul(p, hn::Mul(r, r)), r), hn::Set(d, 1.f));
  const auto ni = hn::Sub(hn::BitCast(di, t), hn::BitCast(di, magic));
  const auto h = hn::ShiftRight<1>(ni);
  const auto bias = hn::Set(di, 127);
  const V s1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(h, bias)));
  const V s2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::Sub(ni, h), bias)));
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Mul(hn::Mul(p, s1), s2));
}

// log x = e ln 2 + log m with x = m 2^e, m in [sqrt(1/2), sqrt(2)); log(1 + f) = f - f^2/2 +
// f^3 P(f) with Cephes' logf coefficients, e ln 2 in two parts. Subnormal x is scaled by 2^25
// first. log 0 = -inf, log of a negative = NaN, log inf = inf, NaN stays NaN.
template <class D, class V>
HWY_INLINE V Log(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V one = hn::Set(d, 1.f);
  const auto tiny = hn::Lt(x, hn::Set(d, 1.17549435e-38f));
  const V xs = hn::IfThenElse(tiny, hn::Mul(x, hn::Set(d, 33554432.f)), x);
  const auto bits = hn::BitCast(di, xs);
  V e = hn::ConvertTo(d, hn::Sub(hn::ShiftRight<23>(bits), hn::Set(di, 126)));
  e = hn::IfThenElse(tiny, hn::Sub(e, hn::Set(d, 25.f)), e);
  const V m = hn::BitCast(
      d, hn::Or(hn::And(bits, hn::Set(di, 0x007FFFFF)), hn::Set(di, 0x3F000000)));  // [0.5, 1)
  const auto low = hn::Lt(m, hn::Set(d, 0.707106781186547524f));
  e = hn::IfThenElse(low, hn::Sub(e, one), e);
  const V f = hn::IfThenElse(low, hn::Sub(hn::Add(m, m), one), hn::Sub(m, one));
  const V z = hn::Mul(f, f);
  V p = hn::Set(d, 7.0376836292e-2f);
  p = MulAddRounded(d, p, f, -1.1514610310e-1f);
  p = MulAddRounded(d, p, f, 1.1676998740e-1f);
  p = MulAddRounded(d, p, f, -1.2420140846e-1f);
  p = MulAddRounded(d, p, f, 1.4249322787e-1f);
  p = MulAddRounded(d, p, f, -1.6668057665e-1f);
  p = MulAddRounded(d, p, f, 2.0000714765e-1f);
  p = MulAddRounded(d, p, f, -2.4999993993e-1f);
  p = MulAddRounded(d, p, f, 3.3333331174e-1f);
  V y = hn::Mul(hn::Mul(p, f), z);
  y = hn::Add(y, hn::Mul(e, hn::Set(d, -2.12194440e-4f)));
  y = hn::Sub(y, hn::Mul(z, hn::Set(d, 0.5f)));
  V r = hn::Add(hn::Add(f, y), hn::Mul(e, hn::Set(d, 0.693359375f)));
  const V inf = hn::Set(d, HUGE_VALF);
  r = hn::IfThenElse(hn::Eq(x, inf), inf, r);
  r = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(inf), r);
  return hn::IfThenElse(hn::Or(hn::Lt(x, hn::Zero(d)), hn::IsNaN(x)), hn::NaN(d), r);
}

// 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0 so that small results keep their relative
// accuracy (e^-|x| never overflows).
template <class D, class V>
HWY_INLINE V Sigmoid(D d, V x) {
  const V e = Exp(d, hn::Neg(hn::Abs(x)));
  const V one = hn::Set(d, 1.f);
  // One division: the numerator chosen first (the same quotients as dividing both ways).
  return hn::Div(hn::IfThenElse(hn::Lt(x, hn::Zero(d)), e, one), hn::Add(one, e));
}

// erf(x) = x P(x^2) / Q(x^2), P and Q of degree 5 fitted by tools/math/fit_erf.py on [0, 4]
// (2.6e-8 relative before rounding the coefficients); beyond 3.9192 (+-inf too) exactly +-1.
template <class D, class V>
HWY_INLINE V Erf(D d, V v) {
  const V x = Clamp(d, v, -4.f, 4.f);
  const V s = hn::Mul(x, x);
  V p = hn::Set(d, 1.98981434e-06f);
  p = MulAddRounded(d, p, s, 0.000283810281f);
  p = MulAddRounded(d, p, s, 0.00385616068f);
  p = MulAddRounded(d, p, s, 0.0530186631f);
  p = MulAddRounded(d, p, s, 0.192930534f);
  p = MulAddRounded(d, p, s, 1.12837923f);
  V q = hn::Set(d, 3.74116316e-05f);
  q = MulAddRounded(d, q, s, 0.00117868173f);
  q = MulAddRounded(d, q, s, 0.0151534267f);
  q = MulAddRounded(d, q, s, 0.115094118f);
  q = MulAddRounded(d, q, s, 0.504313052f);
  q = MulAddRounded(d, q, s, 1.f);
  return SaturateBeyond(d, v, 3.91920584f, hn::Div(hn::Mul(x, p), q));
}

}  // namespace HWY_NAMESPACE
}  // namespace pf::simd
HWY_AFTER_NAMESPACE();

#endif  // PLACEFLOW_OPS_SIMD_VEC_MATH_INL_H_
