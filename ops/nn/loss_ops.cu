// The losses on the GPU. Softmax cross-entropy: one block per row computes the max, the
// log-sum-exp, the loss and the backprop (softmax - labels) in three passes over the row, with
// the CPU's per-class term (SoftmaxXentTerm). Sigmoid cross-entropy and the mean squared error's
// terms: the generic elementwise kernels over the CPU's formulas (nn_functors.cuh).
#include <cmath>

#include "placeflow/ops/gpu/elementwise.cuh"
#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/nn/nn_launch.h"

namespace pf::gpu {
namespace {

template <typename T>
struct DenseLabels {
  const T* p;
  int64_t cols;
  __device__ T operator()(int64_t r, int64_t i) const { return p[r * cols + i]; }
  __device__ bool valid(int64_t) const { return true; }
};
template <typename T, typename Index>
struct SparseLabels {
  const Index* y;
  int64_t cols;
  __device__ T operator()(int64_t r, int64_t i) const { return i == y[r] ? T(1) : T(0); }
  __device__ bool valid(int64_t r) const { return y[r] >= 0 && y[r] < cols; }
};

template <typename T, typename Labels>
__global__ void XentKernel(const T* logits, Labels labels, T* loss, T* backprop, int64_t rows,
                           int64_t cols) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = logits + r * cols;
    T* b = backprop + r * cols;
    T m = -INFINITY;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) m = x[i] > m ? x[i] : m;
    m = BlockReduce(
        m, [](T v) { return WarpMax(v); }, T(-INFINITY));
    T sum = 0;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) sum += exp(x[i] - m);
    sum = BlockReduce(
        sum, [](T v) { return WarpSum(v); }, T(0));
    const T log_sum = log(sum);
    const bool ok = labels.valid(r);
    T l = 0;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
      const T d = SoftmaxXentTerm(x[i], labels(r, i), m, log_sum, l);
      b[i] = ok ? d : T(NAN);
    }
    l = BlockReduce(
        l, [](T v) { return WarpSum(v); }, T(0));
    if (threadIdx.x == 0) loss[r] = ok ? l : T(NAN);
  }
}

int RowBlocks(int64_t rows) {
  return static_cast<int>(rows < 65535 ? (rows < 1 ? 1 : rows) : 65535);
}
int RowThreads(int64_t cols) { return cols <= 64 ? 64 : (cols <= 128 ? 128 : kThreads); }

}  // namespace

template <typename T>
void SoftmaxXent(const T* logits, const T* labels, T* loss, T* backprop, int64_t rows, int64_t cols,
                 Stream s) {
  if (rows == 0) return;
  XentKernel<<<RowBlocks(rows), RowThreads(cols), 0, s>>>(logits, DenseLabels<T>{labels, cols},
                                                          loss, backprop, rows, cols);
}

template <typename T, typename Index>
void SparseSoftmaxXent(const T* logits, const Index* labels, T* loss, T* backprop, int64_t rows,
                       int64_t cols, Stream s) {
  if (rows == 0) return;
  XentKernel<<<RowBlocks(rows), RowThreads(cols), 0, s>>>(
      logits, SparseLabels<T, Index>{labels, cols}, loss, backprop, rows, cols);
}

PF_GPU_BINARY(SigmoidXentF, float)
PF_GPU_BINARY(SigmoidXentF, double)
PF_GPU_BINARY(SquaredDiffF, float)
PF_GPU_BINARY(SquaredDiffF, double)
template void SoftmaxXent<float>(const float*, const float*, float*, float*, int64_t, int64_t,
                                 Stream);
template void SoftmaxXent<double>(const double*, const double*, double*, double*, int64_t, int64_t,
                                  Stream);
template void SparseSoftmaxXent<float, int32_t>(const float*, const int32_t*, float*, float*,
                                                int64_t, int64_t, Stream);
template void SparseSoftmaxXent<float, int64_t>(const float*, const int64_t*, float*, float*,
                                                int64_t, int64_t, Stream);
template void SparseSoftmaxXent<double, int32_t>(const double*, const int32_t*, double*, double*,
                                                 int64_t, int64_t, Stream);
template void SparseSoftmaxXent<double, int64_t>(const double*, const int64_t*, double*, double*,
                                                 int64_t, int64_t, Stream);

}  // namespace pf::gpu
