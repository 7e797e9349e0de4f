// Pad on the GPU: one grid-stride pass over the output, each index decoded into its position
// in every dim; inside the input's box it reads the input, elsewhere it writes zero bytes. The
// kernel moves elements of 1, 2, 4 or 8 bytes, so it serves every dtype.
#include "placeflow/ops/array/array_launch.h"
#include "placeflow/ops/gpu/common.cuh"

namespace pf::gpu {
namespace {

template <typename E>
__global__ void PadKernel(const E* x, E* out, int64_t n, PadDims d) {
  PF_GRID_LOOP(i, n) {
    int64_t rem = i, src = 0, stride = 1;
    bool inside = true;
    for (int k = d.rank - 1; k >= 0; --k) {
      const int64_t j = rem % d.out_dims[k] - d.before[k];
      rem /= d.out_dims[k];
      inside = inside && j >= 0 && j < d.in_dims[k];
      src += j * stride;
      stride *= d.in_dims[k];
    }
    out[i] = inside ? x[src] : E(0);
  }
}

template <typename E>
void PadAs(const void* x, void* out, int64_t n, const PadDims& d, Stream s) {
  PadKernel<<<Blocks(n), kThreads, 0, s>>>(static_cast<const E*>(x), static_cast<E*>(out), n, d);
}

}  // namespace

void Pad(int elem_size, const void* x, void* out, const PadDims& d, Stream s) {
  int64_t n = 1;
  for (int k = 0; k < d.rank; ++k) n *= d.out_dims[k];
  if (n == 0) return;
  switch (elem_size) {
    case 1:
      return PadAs<uint8_t>(x, out, n, d, s);
    case 2:
      return PadAs<uint16_t>(x, out, n, d, s);
    case 4:
      return PadAs<uint32_t>(x, out, n, d, s);
    default:
      return PadAs<uint64_t>(x, out, n, d, s);
  }
}

}  // namespace pf::gpu
