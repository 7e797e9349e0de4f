// The caching allocator's invariant after every allocation is freed, checked the same way on
// host memory (tests/core/bfc_allocator_test.cc) and on a GPU (tests/devices/gpu_device_test.cc).
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>

#include "placeflow/core/bfc_allocator.h"

namespace pf::testing {

// The state after every allocation is freed. Regions never merge (each is its own
// sub-allocation), so the invariant is per region: one free chunk spanning it, nothing lost.
inline void CheckEveryRegionOneFreeChunk(const BfcAllocator& a) {
  const AllocatorStats s = a.Stats();
  CHECK(s.bytes_in_use == 0);
  const auto regions = a.Regions();
  CHECK(regions.size() == static_cast<size_t>(s.num_regions));
  size_t total = 0, largest = 0;
  for (const auto& r : regions) {
    CHECK(r.bytes_in_use == 0);
    CHECK(r.free_chunks == 1);
    CHECK(r.largest_free_chunk == r.size);
    total += r.size;
    largest = std::max(largest, r.size);
  }
  CHECK(total == static_cast<size_t>(s.bytes_reserved));
  CHECK(a.LargestFreeChunk() == largest);  // the free index agrees with the chunk lists
}
}  // namespace pf::testing
