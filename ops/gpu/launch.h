// What the CUDA device code (ops/*/*.cu, compiled by nvcc without any project header) and its
// host-side OpKernels (ops/*/*_gpu.cc) share: plain types and launcher declarations only, so
// this header is CUDA-free and fmt-free. Launchers enqueue on `stream` and return at once;
// their launch errors are picked up by GpuDevice::CheckLaunch.
#pragma once

#include <cstdint>

struct CUstream_st;

namespace pf::gpu {

using Stream = CUstream_st*;
constexpr int kMaxDims = 8;

// Element types the device code is instantiated for.
enum class Type { kF32, kF64, kI32, kI64, kBool };

// NumPy broadcasting of two inputs into an output of `rank` dims (strides 0 where broadcast).
struct BroadcastDims {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t a_strides[kMaxDims] = {};
  int64_t b_strides[kMaxDims] = {};
  bool same_shape = false;  // fast path: a, b and out have one shape
  bool a_scalar = false;
  bool b_scalar = false;
};

enum class BinaryFn { kAdd, kSub, kMul, kDiv, kMax, kMin, kPow, kSquaredDiff, kSigmoidXent };
enum class CompareFn { kEqual, kLess, kGreater };
enum class UnaryFn { kNeg, kSquare, kSqrt, kRsqrt, kExp, kLog, kFloor, kRelu, kSigmoid, kTanh };
enum class ActivationGradFn { kRelu, kSigmoid, kTanh };  // from (gradient, forward output)
enum class ReduceFn { kSum, kMax, kMin };

// out = f(a, b), n output elements.
template <typename T>
void Binary(BinaryFn f, const T* a, const T* b, T* out, int64_t n, const BroadcastDims& dims,
            Stream stream);
template <typename T>
void Compare(CompareFn f, const T* a, const T* b, bool* out, int64_t n, const BroadcastDims& dims,
             Stream stream);
template <typename T>
void Unary(UnaryFn f, const T* x, T* y, int64_t n, Stream stream);
template <typename T>
void ActivationGrad(ActivationGradFn f, const T* g, const T* y, T* out, int64_t n, Stream stream);
// out[i] = scale * a[broadcast offset of i] (b's strides are ignored).
template <typename T>
void BroadcastScaled(const T* a, T scale, T* out, int64_t n, const BroadcastDims& dims,
                     Stream stream);
// out = scale * x (scale read from device memory when `scale_on_device` is set).
template <typename T>
void Scale(const T* x, T scale, const T* scale_on_device, T* out, int64_t n, Stream stream);
void Cast(Type from, const void* x, Type to, void* y, int64_t n, Stream stream);
// out[i] = value, or *value_on_device when that is set.
template <typename T>
void Fill(T* out, int64_t n, T value, const T* value_on_device, Stream stream);
// out[i] = x[i] + bias[i % channels]
template <typename T>
void BiasAdd(const T* x, const T* bias, T* out, int64_t n, int64_t channels, Stream stream);
// out = sum_i scale[i] * inputs[i], summed in index order (pointers and scales on the host).
template <typename T>
void WeightedSum(const T* const* inputs, const double* scale, int count, T* out, int64_t n,
                 Stream stream);
// out = sum of `count` inputs (the pointer array lives on the host).
template <typename T>
void AddN(const T* const* inputs, int count, T* out, int64_t n, Stream stream);

// A reduction viewed as out[o] = R over r of in[offset(o) + offset(r)], with the kept dims (of
// the output, outermost first) and the reduced dims given as (size, input stride) pairs.
struct ReduceDims {
  int kept_rank = 0;
  int64_t kept_dims[kMaxDims] = {};
  int64_t kept_strides[kMaxDims] = {};
  int reduced_rank = 0;
  int64_t reduced_dims[kMaxDims] = {};
  int64_t reduced_strides[kMaxDims] = {};
  int64_t num_out = 1;
  int64_t num_reduced = 1;
};
// out = R(in) per output element; sums are divided by `divisor` (Mean: the count).
template <typename T>
void Reduce(ReduceFn f, const T* in, T* out, const ReduceDims& dims, int64_t divisor,
            Stream stream);
// Index of the largest value along the middle axis of [outer, axis, inner] (first on ties).
template <typename T, typename Index>
void ArgMax(const T* in, Index* out, int64_t outer, int64_t axis, int64_t inner, Stream stream);

// Softmax cross-entropy per row of [rows, cols] logits: loss[r] and backprop = softmax - p.
// Dense labels p [rows, cols], or sparse class indices (an index out of range gives NaN, as
// TensorFlow's GPU kernel does).
template <typename T>
void SoftmaxXent(const T* logits, const T* labels, T* loss, T* backprop, int64_t rows, int64_t cols,
                 Stream stream);
template <typename T, typename Index>
void SparseSoftmaxXent(const T* logits, const Index* labels, T* loss, T* backprop, int64_t rows,
                       int64_t cols, Stream stream);

// Fused optimizer updates; scalars (lr, decay rates) are read from device memory.
template <typename T>
void ApplyGradientDescent(T* var, const T* lr, const T* grad, int64_t n, Stream stream);
template <typename T>
void ApplyMomentum(T* var, T* accum, const T* lr, const T* grad, const T* momentum, bool nesterov,
                   int64_t n, Stream stream);
template <typename T>
void ApplyAdam(T* var, T* m, T* v, const T* beta1_power, const T* beta2_power, const T* lr,
               const T* beta1, const T* beta2, const T* epsilon, const T* grad, int64_t n,
               Stream stream);
template <typename T>
void ApplyRMSProp(T* var, T* ms, T* mom, const T* lr, const T* rho, const T* momentum,
                  const T* epsilon, const T* grad, int64_t n, Stream stream);
template <typename T>
void ApplyAdagrad(T* var, T* accum, const T* lr, const T* grad, int64_t n, Stream stream);

// Copies a box of `dims` (rank <= kMaxDims) elements of `elem_size` bytes: the element at
// index i goes from in[in_offset + sum i_d in_strides_d] to out[out_offset + sum i_d
// out_strides_d] (offsets and strides in elements). Slice, SliceGrad and Transpose use it.
struct StridedBox {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t in_strides[kMaxDims] = {};
  int64_t out_strides[kMaxDims] = {};
  int64_t in_offset = 0;
  int64_t out_offset = 0;
};
void StridedCopy(int elem_size, const void* in, void* out, const StridedBox& box, Stream stream);
// out[i, :] = params[indices[i], :] for rows of `row_elems` elements; an index outside
// [0, limit) gives a row of zeros (TensorFlow's GPU behaviour; the CPU kernel errors).
template <typename Index>
void Gather(int elem_size, const void* params, const Index* indices, void* out, int64_t num_indices,
            int64_t row_elems, int64_t limit, Stream stream);
// out (zeroed first) [limit, row] += grad[i, :] at row indices[i] (atomic adds).
template <typename T, typename Index>
void ScatterAdd(const T* grad, const Index* indices, T* out, int64_t num_indices, int64_t row_elems,
                int64_t limit, Stream stream);
// out[i, k] = k == indices[i] ? on : off, depth columns.
template <typename T, typename Index>
void OneHot(const Index* indices, T* out, int64_t n, int64_t depth, T on, T off, Stream stream);

// Random numbers from Philox4x32-10, element i of call `call` drawing from counter (i, call,
// attempt) exactly as the CPU kernels do (random_ops.cc): 0 uniform [0, 1), 1 normal, 2
// normal truncated to two standard deviations.
template <typename T>
void RandomFill(int distribution, T* out, int64_t n, uint32_t key0, uint32_t key1, uint32_t call,
                Stream stream);

}  // namespace pf::gpu
