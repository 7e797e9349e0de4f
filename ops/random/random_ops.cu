// Random ops on the GPU: the CPU's counter-based Philox4x32-10 (philox.cuh) and sampling
// (random_ops.cc), one element per thread, so a seeded op gives the same numbers on either device
// (up to the last bits of log/cos/sqrt).
#include <cmath>

#include "placeflow/ops/gpu/common.cuh"
#include "placeflow/ops/random/philox.cuh"
#include "placeflow/ops/random/random_launch.h"

namespace pf::gpu {
namespace {

template <typename T>
__global__ void RandomKernel(int dist, T* out, int64_t n, uint2 key, uint32_t call) {
  PF_GRID_LOOP(i, n) {
    float v = 0.f;
    for (uint32_t attempt = 0;; ++attempt) {
      const Philox4x32::Block r =
          Philox4x32::At(static_cast<uint64_t>(i), call, attempt, key.x, key.y);
      if (dist == 0) {
        v = Philox4x32::ToUniform(r.v[0]);
        break;
      }
      bool found = false;
      for (int k = 0; k < 4 && !found; k += 2) {
        const float u1 = fmaxf(Philox4x32::ToUniform(r.v[k]), 1e-7f),
                    u2 = Philox4x32::ToUniform(r.v[k + 1]);
        const float z = sqrtf(-2.f * logf(u1)) * cosf(6.2831853071795864f * u2);
        if (dist == 1 || fabsf(z) <= 2.f) {
          v = z;
          found = true;
        }
      }
      if (found) break;
    }
    out[i] = static_cast<T>(v);
  }
}

}  // namespace

template <typename T>
void RandomFill(int dist, T* out, int64_t n, uint32_t key0, uint32_t key1, uint32_t call,
                Stream s) {
  if (n > 0)
    RandomKernel<<<Blocks(n), kThreads, 0, s>>>(dist, out, n, make_uint2(key0, key1), call);
}

template void RandomFill<float>(int, float*, int64_t, uint32_t, uint32_t, uint32_t, Stream);
template void RandomFill<double>(int, double*, int64_t, uint32_t, uint32_t, uint32_t, Stream);

}  // namespace pf::gpu
