// The Philox key of a random op, from its (seed, seed2) attrs; both zero (no graph or op
// seed) draws a fresh key, as TensorFlow does. Shared by the CPU and GPU kernels, so a seeded
// op draws the same numbers on either.
#pragma once

#include <array>
#include <cstdint>
#include <random>

#include "placeflow/graph/graph.h"

namespace pf {

inline std::array<uint32_t, 2> PhiloxKey(const Node& n) {
  int64_t seed = n.attr<int64_t>("seed"), seed2 = n.attr<int64_t>("seed2");
  if (seed == 0 && seed2 == 0) {
    std::random_device rd;
    seed = rd();
    seed2 = rd();
  }
  return {static_cast<uint32_t>(seed ^ (seed >> 32)), static_cast<uint32_t>(seed2 ^ (seed2 >> 32))};
}

}  // namespace pf
