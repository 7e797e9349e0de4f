// Data movement on the GPU: strided box copies (Slice, SliceGrad, Transpose), Gather and its
// scatter-add gradient.
#include "placeflow/ops/array/array_launch.h"
#include "placeflow/ops/gpu/common.cuh"

namespace pf::gpu {
namespace {

template <typename E>
__global__ void StridedCopyKernel(const E* in, E* out, StridedBox b, int64_t n) {
  PF_GRID_LOOP(i, n) {
    int64_t rem = i, src = b.in_offset, dst = b.out_offset;
    for (int d = b.rank - 1; d >= 0; --d) {
      const int64_t idx = rem % b.dims[d];
      rem /= b.dims[d];
      src += idx * b.in_strides[d];
      dst += idx * b.out_strides[d];
    }
    out[dst] = in[src];
  }
}

template <typename E, typename Index>
__global__ void GatherKernel(const E* params, const Index* idx, E* out, int64_t n, int64_t row,
                             int64_t limit) {
  PF_GRID_LOOP(i, n) {
    const int64_t r = i / row, c = i % row;
    const int64_t k = static_cast<int64_t>(idx[r]);
    out[i] = (k >= 0 && k < limit) ? params[k * row + c] : E();
  }
}

template <typename T, typename Index>
__global__ void ScatterAddKernel(const T* g, const Index* idx, T* out, int64_t n, int64_t row,
                                 int64_t limit) {
  PF_GRID_LOOP(i, n) {
    const int64_t r = i / row, c = i % row;
    const int64_t k = static_cast<int64_t>(idx[r]);
    if (k >= 0 && k < limit) atomicAdd(out + k * row + c, g[i]);
  }
}

template <typename E>
void Strided(const void* in, void* out, const StridedBox& b, int64_t n, Stream s) {
  StridedCopyKernel<<<Blocks(n), kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out),
                                                   b, n);
}

template <typename E, typename Index>
void GatherAs(const void* params, const Index* idx, void* out, int64_t rows, int64_t row,
              int64_t limit, Stream s) {
  const int64_t n = rows * row;
  GatherKernel<<<Blocks(n), kThreads, 0, s>>>(static_cast<const E*>(params), idx,
                                              static_cast<E*>(out), n, row, limit);
}

}  // namespace

void StridedCopy(int elem_size, const void* in, void* out, const StridedBox& b, Stream s) {
  int64_t n = 1;
  for (int d = 0; d < b.rank; ++d) n *= b.dims[d];
  if (n == 0) return;
  switch (elem_size) {
    case 1:
      return Strided<uint8_t>(in, out, b, n, s);
    case 2:
      return Strided<uint16_t>(in, out, b, n, s);
    case 4:
      return Strided<uint32_t>(in, out, b, n, s);
    default:
      return Strided<uint64_t>(in, out, b, n, s);
  }
}

template <typename Index>
void Gather(int elem_size, const void* params, const Index* idx, void* out, int64_t rows,
            int64_t row, int64_t limit, Stream s) {
  if (rows * row == 0) return;
  switch (elem_size) {
    case 1:
      return GatherAs<uint8_t>(params, idx, out, rows, row, limit, s);
    case 2:
      return GatherAs<uint16_t>(params, idx, out, rows, row, limit, s);
    case 4:
      return GatherAs<uint32_t>(params, idx, out, rows, row, limit, s);
    default:
      return GatherAs<uint64_t>(params, idx, out, rows, row, limit, s);
  }
}

template <typename T, typename Index>
void ScatterAdd(const T* g, const Index* idx, T* out, int64_t rows, int64_t row, int64_t limit,
                Stream s) {
  Fill<T>(out, limit * row, T(0), nullptr, s);
  if (rows * row > 0)
    ScatterAddKernel<<<Blocks(rows * row), kThreads, 0, s>>>(g, idx, out, rows * row, row, limit);
}

template void Gather<int32_t>(int, const void*, const int32_t*, void*, int64_t, int64_t, int64_t,
                              Stream);
template void Gather<int64_t>(int, const void*, const int64_t*, void*, int64_t, int64_t, int64_t,
                              Stream);
#define PF_SCATTER_ADD(T)                                                                       \
  template void ScatterAdd<T, int32_t>(const T*, const int32_t*, T*, int64_t, int64_t, int64_t, \
                                       Stream);                                                 \
  template void ScatterAdd<T, int64_t>(const T*, const int64_t*, T*, int64_t, int64_t, int64_t, \
                                       Stream);
PF_SCATTER_ADD(float)
PF_SCATTER_ADD(double)

}  // namespace pf::gpu
