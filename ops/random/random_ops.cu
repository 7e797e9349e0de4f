// Random ops on the GPU: the CPU's counter-based Philox4x32-10 and sampling (random_ops.cc),
// one element per thread, so a seeded op gives the same numbers on either device (up to the
// last bits of log/cos/sqrt).
#include <cmath>

#include "placeflow/ops/gpu/common.cuh"
#include "placeflow/ops/random/random_launch.h"

namespace pf::gpu {
namespace {

__device__ __forceinline__ uint4 Philox(uint4 c, uint2 k) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57, kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c.x;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c.z;
    c = make_uint4(static_cast<uint32_t>(p1 >> 32) ^ c.y ^ k.x, static_cast<uint32_t>(p1),
                   static_cast<uint32_t>(p0 >> 32) ^ c.w ^ k.y, static_cast<uint32_t>(p0));
    k.x += kW0;
    k.y += kW1;
  }
  return c;
}

__device__ __forceinline__ float ToUniform(uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

template <typename T>
__global__ void RandomKernel(int dist, T* out, int64_t n, uint2 key, uint32_t call) {
  PF_GRID_LOOP(i, n) {
    float v = 0.f;
    for (uint32_t attempt = 0;; ++attempt) {
      const uint4 r = Philox(
          make_uint4(static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), call, attempt), key);
      if (dist == 0) {
        v = ToUniform(r.x);
        break;
      }
      const uint32_t words[4] = {r.x, r.y, r.z, r.w};
      bool found = false;
      for (int k = 0; k < 4 && !found; k += 2) {
        const float u1 = fmaxf(ToUniform(words[k]), 1e-7f), u2 = ToUniform(words[k + 1]);
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
