// Philox4x32-10, written once for both devices: the random ops (random_ops.cc, random_ops.cu)
// and Dropout (ops/nn/dropout_ops.cc, dropout_ops.cu) draw element i of a kernel's call `call`
// from counter (i, call, attempt) under the node's key (philox_key.h). Results depend neither on
// how a loop is split across threads nor on the device.
//
//   const float u = Philox4x32::Uniform(i, call, key0, key1);  // RandomUniform's element i
#pragma once

#include <cstdint>

#include "placeflow/ops/gpu/host_device.cuh"

namespace pf {

struct Philox4x32 {
  struct Block {
    uint32_t v[4];
  };

  PF_HOST_DEVICE static Block Run(Block c, uint32_t k0, uint32_t k1) {
    constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57, kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
    for (int r = 0; r < 10; ++r) {
      const uint64_t p0 = static_cast<uint64_t>(kM0) * c.v[0];
      const uint64_t p1 = static_cast<uint64_t>(kM1) * c.v[2];
      c = Block{{static_cast<uint32_t>(p1 >> 32) ^ c.v[1] ^ k0, static_cast<uint32_t>(p1),
                 static_cast<uint32_t>(p0 >> 32) ^ c.v[3] ^ k1, static_cast<uint32_t>(p0)}};
      k0 += kW0;
      k1 += kW1;
    }
    return c;
  }

  // The block of element i of call `call`, attempt `attempt` (rejection sampling retries).
  PF_HOST_DEVICE static Block At(uint64_t i, uint32_t call, uint32_t attempt, uint32_t k0,
                                 uint32_t k1) {
    return Run(Block{{static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), call, attempt}}, k0,
               k1);
  }

  // 24 random bits to [0, 1).
  PF_HOST_DEVICE static float ToUniform(uint32_t x) {
    return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
  }

  // RandomUniform's value of element i of call `call`.
  PF_HOST_DEVICE static float Uniform(uint64_t i, uint32_t call, uint32_t k0, uint32_t k1) {
    return ToUniform(At(i, call, 0, k0, k1).v[0]);
  }
};

}  // namespace pf
