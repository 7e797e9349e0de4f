// The Philox key of a random op (and Dropout), from its (seed, seed2) attrs; both zero (no graph
// or op seed) draws a fresh key, as TensorFlow does. Shared by the CPU and GPU kernels, so a seeded
// op draws the same numbers on either.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <random>
#include <utility>

#include "placeflow/graph/graph.h"
#include "placeflow/graph/scope.h"

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

// A stateful random kernel's draws (the random ops and Dropout, CPU and GPU alike): its key, and
// a count of its calls; call c's element i uses Philox counter (i, c, ...).
class PhiloxCalls {
 public:
  explicit PhiloxCalls(const Node& n) : key_(PhiloxKey(n)) {}
  uint32_t k0() const { return key_[0]; }
  uint32_t k1() const { return key_[1]; }
  uint32_t Next() { return calls_.fetch_add(1); }  // the call number of this Compute

 private:
  std::array<uint32_t, 2> key_;
  std::atomic<uint32_t> calls_{0};
};

// TensorFlow's get_seed: the graph seed and an op's seed combine into its (seed, seed2) attrs.
inline std::pair<int64_t, int64_t> ResolveSeeds(const Scope& s, int64_t op_seed) {
  constexpr int64_t kDefaultGraphSeed = 87654321;
  Graph* g = s.graph();
  if (g->has_seed()) return {g->seed(), op_seed != 0 ? op_seed : g->num_nodes()};
  if (op_seed != 0) return {kDefaultGraphSeed, op_seed};
  return {0, 0};
}

}  // namespace pf
