// Float32 kernels written once with Google Highway's portable vectors and compiled for every x86
// target (SSSE3, SSE4, AVX2, AVX-512) and a scalar fallback; each call runs the widest target the
// CPU has and PF_MAX_CPU_ISA allows (cpu_isa.h). docs/simd.md says why and how.
//
// Every kernel is a fixed sequence of correctly rounded IEEE operations (add, multiply, divide,
// compare-select; no fused multiply-add, no approximate reciprocal), so every target gives the
// same bits as every other: the tests compare the capped targets bit for bit.
#ifndef PLACEFLOW_OPS_SIMD_VEC_KERNELS_H_
#define PLACEFLOW_OPS_SIMD_VEC_KERNELS_H_

#include <cstdint>

namespace pf::simd {

// y = f(x), elementwise. Accuracy against the function in double over all floats: docs/simd.md.
enum class UnaryFn {
  kTanh,     // rational x P(x^2) / Q(x^2), |x| clamped to 9
  kSigmoid,  // 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0
  kExp,
  kLog,
  kErf,   // rational x P(x^2) / Q(x^2), |x| clamped to 4
  kRelu,  // x > 0 ? x : 0
  kNeg,
  kSquare,
  kSqrt,
};
void Unary(UnaryFn fn, const float* x, float* y, int64_t n);

// y = f(a, b), elementwise.
enum class BinaryFn {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,          // a > b ? a : b
  kMin,          // a < b ? a : b
  kReluGrad,     // (g, y): y > 0 ? g : 0
  kTanhGrad,     // (y, g), TensorFlow's order: g (1 - y y)
  kSigmoidGrad,  // (y, g): g y (1 - y)
  kSquaredDiff,  // (a - b)^2
};
void Binary(BinaryFn fn, const float* a, const float* b, float* y, int64_t n);
// The same with one operand a scalar: f(a[i], b) and f(a, b[i]).
void BinaryScalarB(BinaryFn fn, const float* a, float b, float* y, int64_t n);
void BinaryScalarA(BinaryFn fn, float a, const float* b, float* y, int64_t n);

// y += s x (AddN's sums, AssignAdd/AssignSub with s = +-1, BiasAdd's rows).
void Axpy(float s, const float* x, float* y, int64_t n);

// y[i] = a[i] + (b[i] - a[i]) t: linear interpolation between two rows, TensorFlow's order of
// operations (the resize's step between two input rows).
void Lerp(const float* a, const float* b, float t, float* y, int64_t n);
// y[i] = s[lo] + (s[hi] - s[lo]) t[i] with lo = lower[i], hi = upper[i]: the same with both
// operands gathered from one row (the resize's step across a row).
void LerpGather(const float* s, const int32_t* lower, const int32_t* upper, const float* t,
                float* y, int64_t n);
// The same from a row of bytes (values 0..255 converted to float on the way). Reads 4 bytes at
// each offset: s must be readable up to the largest offset + 3.
void LerpGatherU8(const uint8_t* s, const int32_t* lower, const int32_t* upper, const float* t,
                  float* y, int64_t n);

// One LSTM step of one batch entry's n units (ops/nn/lstm_ops.cc's BlockLSTM, TensorFlow's
// LSTMBlockCell math and order of operations, with the Sigmoid and Tanh of Unary):
//   i = sigmoid(zi + cs_prev wci), ci = tanh(zc), f = sigmoid(zf + forget_bias + cs_prev wcf),
//   cs = clip(i ci + f cs_prev), o = sigmoid(zo + cs wco), co = tanh(cs), h = co o.
// Peephole terms only where wci, wcf and wco are set; the clip only for cell_clip > 0.
// (Templates, so that the double loops of the ops take the same arguments.)
template <typename T>
struct LstmCellArgsOf {
  const T* z;  // [4n]: the gate sums zi, zc, zf, zo ([x, h] w + b)
  const T* cs_prev;
  const T *wci = nullptr, *wcf = nullptr, *wco = nullptr;
  float forget_bias = 1.f, cell_clip = -1.f;
  T *i, *cs, *f, *o, *ci, *co, *h;
};
using LstmCellArgs = LstmCellArgsOf<float>;
void LstmCell(const LstmCellArgs& a, int64_t n);
// The same step backwards, from the forward step's values (i .. co, cs_prev), h's gradient
// (h_grad, the output's, plus dh_next, the next step's) and cs's (cs_grad, the output's, plus
// dcs, the next step's): dz [4n] gets the gates' gradients di, dci, df, do (before their
// activations) and dcs is overwritten with cs_prev's gradient. Where the forward clip held cs, no
// gradient passes.
template <typename T>
struct LstmCellGradArgsOf {
  const T *i, *cs, *f, *o, *ci, *co, *cs_prev;
  const T *wci = nullptr, *wcf = nullptr, *wco = nullptr;
  float cell_clip = -1.f;
  const T *h_grad, *dh_next, *cs_grad;
  T* dcs;
  T* dz;
};
using LstmCellGradArgs = LstmCellGradArgsOf<float>;
void LstmCellGrad(const LstmCellGradArgs& a, int64_t n);

// The Highway target of this call's dispatch ("AVX3", "AVX2", "SSE4", "EMU128", ...).
const char* DispatchedTargetName();

}  // namespace pf::simd

#endif  // PLACEFLOW_OPS_SIMD_VEC_KERNELS_H_
