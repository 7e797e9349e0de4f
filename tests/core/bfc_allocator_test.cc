// The caching allocator's bookkeeping, on host memory: best fit, splitting, coalescing, limits,
// growth, statistics and the out-of-memory path. The GPU device runs the same code over
// cudaMalloc (tests/devices/gpu_device_test.cc stresses it there).
#include "placeflow/core/bfc_allocator.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

#include "tests/testing/bfc_checks.h"

namespace pf::bfc_allocator_test {
namespace {

using testing::CheckEveryRegionOneFreeChunk;

// Host memory with a capacity, like a device: Alloc fails past it. Counts what is outstanding.
class CountingSubAllocator : public SubAllocator {
 public:
  explicit CountingSubAllocator(size_t capacity, size_t* outstanding)
      : capacity_(capacity), outstanding_(outstanding) {}
  void* Alloc(size_t bytes) override {
    if (*outstanding_ + bytes > capacity_) return nullptr;
    *outstanding_ += bytes;
    return std::aligned_alloc(256, bytes);
  }
  void Free(void* p, size_t bytes) override {
    *outstanding_ -= bytes;
    std::free(p);
  }

 private:
  size_t capacity_;
  size_t* outstanding_;
};

constexpr size_t kMiB = size_t{1} << 20;

std::unique_ptr<BfcAllocator> Make(size_t limit, bool growth, size_t capacity,
                                   size_t* outstanding) {
  BfcOptions o;
  o.allow_growth = growth;
  o.name = "test_bfc";
  return std::make_unique<BfcAllocator>(
      std::make_unique<CountingSubAllocator>(capacity, outstanding), limit, o);
}

TEST_CASE("BFC reuses a freed chunk and keeps statistics", "[core][allocator]") {
  size_t outstanding = 0;
  auto a = Make(64 * kMiB, true, 64 * kMiB, &outstanding);
  void* p = a->Allocate(1000);
  REQUIRE(p != nullptr);
  AllocatorStats s = a->Stats();
  CHECK(s.bytes_in_use == 1024);  // rounded to 256
  CHECK(s.num_allocs == 1);
  CHECK(s.num_regions == 1);
  CHECK(s.bytes_reserved == static_cast<int64_t>(2 * kMiB));  // the first growth region
  a->Free(p, 1000);
  CHECK(a->Stats().bytes_in_use == 0);
  CHECK(a->Allocate(1000) == p);
  CHECK(a->Stats().peak_bytes_in_use == 1024);
}

TEST_CASE("BFC picks the smallest free chunk that fits", "[core][allocator]") {
  size_t outstanding = 0;
  auto a = Make(64 * kMiB, false, 64 * kMiB, &outstanding);
  // Free holes of 4 KiB and 8 KiB, kept apart by live spacers so they cannot merge.
  void* s0 = a->Allocate(256);
  void* big = a->Allocate(8192);
  void* s1 = a->Allocate(256);
  void* small = a->Allocate(4096);
  void* s2 = a->Allocate(256);
  a->Free(big, 8192);
  a->Free(small, 4096);
  CHECK(a->Allocate(3000) == small);
  CHECK(a->Allocate(5000) == big);
  for (void* p : {s0, s1, s2}) a->Free(p, 256);
}

TEST_CASE("BFC coalesces neighbours back into one chunk", "[core][allocator]") {
  size_t outstanding = 0;
  auto a = Make(4 * kMiB, false, 4 * kMiB, &outstanding);
  void* x = a->Allocate(kMiB);
  void* y = a->Allocate(kMiB);
  void* z = a->Allocate(kMiB);
  REQUIRE((x && y && z));
  CHECK(a->LargestFreeChunk() == kMiB);
  a->Free(y, kMiB);  // middle: no free neighbour yet
  CHECK(a->LargestFreeChunk() == kMiB);
  a->Free(x, kMiB);  // merges with y
  CHECK(a->LargestFreeChunk() == 2 * kMiB);
  a->Free(z, kMiB);  // merges with x+y and the tail
  CHECK(a->LargestFreeChunk() == 4 * kMiB);
  CHECK(a->Allocate(4 * kMiB) == x);
}

TEST_CASE("BFC out of memory returns null and explains itself", "[core][allocator]") {
  size_t outstanding = 0;
  auto a = Make(kMiB, false, 64 * kMiB, &outstanding);
  void* p = a->Allocate(600 * 1024);
  REQUIRE(p != nullptr);
  CHECK(outstanding == kMiB);  // without growth the whole limit is taken at once
  CHECK(a->Allocate(600 * 1024) == nullptr);
  CHECK(a->Stats().num_ooms == 1);
  std::string why = a->DescribeFailure(600 * 1024);
  CHECK_THAT(why, Catch::Contains("requested 614400 bytes"));
  CHECK_THAT(why, Catch::Contains("434176 bytes free of a 1048576 byte limit"));
  a->Free(p, 600 * 1024);
  CHECK(a->Allocate(600 * 1024) == p);  // nothing was lost
}

TEST_CASE("BFC fragmentation: free bytes are not one free chunk", "[core][allocator]") {
  size_t outstanding = 0;
  auto a = Make(8 * kMiB, false, 8 * kMiB, &outstanding);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(a->Allocate(kMiB));
  for (void* b : blocks) REQUIRE(b != nullptr);
  for (int i = 0; i < 8; i += 2) a->Free(blocks[i], kMiB);
  CHECK(a->FreeBytes() == 4 * kMiB);
  CHECK(a->Allocate(2 * kMiB) == nullptr);  // four separate 1 MiB holes
  for (int i = 1; i < 8; i += 2) a->Free(blocks[i], kMiB);
  CHECK(a->Allocate(2 * kMiB) != nullptr);
}

TEST_CASE("BFC growth falls back to smaller regions when the device has less",
          "[core][allocator]") {
  size_t outstanding = 0;
  // A 1 GiB limit over a "device" of 5 MiB: regions shrink to what is there.
  auto a = Make(1024 * kMiB, true, 5 * kMiB, &outstanding);
  void* p = a->Allocate(2 * kMiB);  // takes the first 2 MiB region whole
  void* q = a->Allocate(2 * kMiB);  // 4 MiB region fails; 2 MiB fits
  REQUIRE(p != nullptr);
  REQUIRE(q != nullptr);
  CHECK(a->Allocate(2 * kMiB) == nullptr);  // 1 MiB left on the device
  CHECK(a->Stats().num_regions == 2);
  a->Free(p, 2 * kMiB);
  a->Free(q, 2 * kMiB);
  // Both regions are free now: a 4 MiB request releases them and takes one region.
  void* r = a->Allocate(4 * kMiB);
  CHECK(r != nullptr);
  CHECK(a->Stats().num_regions == 1);
  a->Free(r, 4 * kMiB);
  a->ReleaseFreeRegions();
  CHECK(outstanding == 0);
  CHECK(a->Stats().bytes_reserved == 0);
}

TEST_CASE("BFC stress: random allocations never overlap and everything comes back",
          "[core][allocator]") {
  for (bool growth : {true, false}) {
    size_t outstanding = 0;
    auto a = Make(32 * kMiB, growth, 32 * kMiB, &outstanding);
    std::mt19937 rng(growth ? 7 : 8);
    std::uniform_int_distribution<size_t> size_dist(1, 512 * 1024);
    std::map<char*, size_t> live;  // pointer -> requested bytes
    int64_t expect_in_use = 0;
    auto rounded = [](size_t b) { return (b + 255) / 256 * 256; };
    for (int step = 0; step < 5000; ++step) {
      if (live.empty() || rng() % 3 != 0) {
        size_t bytes = size_dist(rng);
        char* p = static_cast<char*>(a->Allocate(bytes));
        if (p == nullptr) {
          // Only allowed when the request could not fit beside what is live.
          CHECK(static_cast<size_t>(expect_in_use) + rounded(bytes) > a->LargestFreeChunk());
          continue;
        }
        // No overlap with the neighbours in address order.
        auto next = live.lower_bound(p);
        if (next != live.end()) CHECK(p + rounded(bytes) <= next->first);
        if (next != live.begin()) {
          auto prev = std::prev(next);
          CHECK(prev->first + rounded(prev->second) <= p);
        }
        std::memset(p, 0xab, bytes);  // the memory is really there
        live[p] = bytes;
        expect_in_use += static_cast<int64_t>(rounded(bytes));
      } else {
        auto it = live.begin();
        std::advance(it, rng() % live.size());
        a->Free(it->first, it->second);
        expect_in_use -= static_cast<int64_t>(rounded(it->second));
        live.erase(it);
      }
      REQUIRE(a->Stats().bytes_in_use == expect_in_use);
    }
    for (auto& [p, bytes] : live) a->Free(p, bytes);
    CHECK(a->Stats().bytes_in_use == 0);
    CHECK(a->Stats().peak_bytes_in_use <= 32 * static_cast<int64_t>(kMiB));
    CheckEveryRegionOneFreeChunk(*a);
    a->ReleaseFreeRegions();
    CHECK(a->Stats().num_regions == 0);
    CHECK(outstanding == 0);
  }
}

// The GPU test's stress (tests/devices/gpu_device_test.cc, same seed and pattern) on host memory:
// a 256 MiB limit with growth ends with regions of 2, 4, ... 128 and 2 MiB, so no single chunk
// can ever span bytes_reserved.
TEST_CASE("BFC device stress: regions never merge, each ends as one free chunk",
          "[core][allocator]") {
  size_t outstanding = 0;
  const size_t limit = 256 * kMiB;
  auto a = Make(limit, true, limit, &outstanding);
  std::mt19937 rng(3);
  std::vector<std::pair<void*, size_t>> live;
  int ooms = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 2) {
      size_t bytes = 1 + rng() % (4 << 20);
      void* p = a->Allocate(bytes);
      if (p != nullptr) {
        live.emplace_back(p, bytes);
        continue;
      }
      // An out-of-memory only when no chunk fits and giving back the wholly free regions
      // would not leave the limit room for a region that does.
      ++ooms;
      const size_t rounded = (bytes + 255) / 256 * 256;
      size_t room = limit - static_cast<size_t>(a->Stats().bytes_reserved);
      for (const auto& r : a->Regions()) {
        CHECK(r.largest_free_chunk < rounded);
        if (r.bytes_in_use == 0) room += r.size;
      }
      CHECK(room < rounded);
    } else {
      size_t k = rng() % live.size();
      a->Free(live[k].first, live[k].second);
      live.erase(live.begin() + static_cast<long>(k));
    }
  }
  for (auto& [p, b] : live) a->Free(p, b);
  const AllocatorStats s = a->Stats();
  CHECK(s.num_ooms == ooms);
  CHECK(s.bytes_reserved == static_cast<int64_t>(limit));
  CHECK(s.num_regions > 1);  // 8 here: 2, 4, ... 128 MiB and a last 2 MiB
  CheckEveryRegionOneFreeChunk(*a);
  CHECK(a->LargestFreeChunk() < limit);  // the largest region, not bytes_reserved
  // Reuse: the whole limit in one request. No region holds it; the free ones go back and one
  // region of the whole limit replaces them.
  void* all = a->Allocate(limit);
  REQUIRE(all != nullptr);
  CHECK(a->Stats().num_regions == 1);
  CHECK(a->Stats().num_regions_released == s.num_regions_released + s.num_regions);
  a->Free(all, limit);
  CheckEveryRegionOneFreeChunk(*a);
  a->ReleaseFreeRegions();
  CHECK(outstanding == 0);
}

TEST_CASE("BFC gives back wholly free regions when only that makes room for a request",
          "[core][allocator]") {
  size_t outstanding = 0;
  SECTION("with growth: regions of 2, 4 and 2 MiB fill an 8 MiB limit") {
    auto a = Make(8 * kMiB, true, 8 * kMiB, &outstanding);
    std::vector<void*> blocks;
    for (size_t mib : {2, 4, 2}) blocks.push_back(a->Allocate(mib * kMiB));
    for (void* b : blocks) REQUIRE(b != nullptr);
    REQUIRE(a->Stats().num_regions == 3);
    REQUIRE(a->Stats().bytes_reserved == static_cast<int64_t>(8 * kMiB));
    a->Free(blocks[0], 2 * kMiB);
    a->Free(blocks[1], 4 * kMiB);
    // 6 MiB free in two regions, the largest chunk 4 MiB, the limit reached.
    CHECK(a->Allocate(7 * kMiB) == nullptr);  // more than giving them back would make room for
    CHECK(a->Stats().num_regions == 3);       // so they stay cached
    void* p = a->Allocate(6 * kMiB);
    REQUIRE(p != nullptr);
    CHECK(a->Stats().num_regions == 2);  // the two free regions went, one of 6 MiB came
    CHECK(a->Stats().num_regions_released == 2);
    CHECK(outstanding == 8 * kMiB);
    a->Free(p, 6 * kMiB);
    a->Free(blocks[2], 2 * kMiB);
    CheckEveryRegionOneFreeChunk(*a);
  }
  SECTION("without growth, when the device first had less than the limit") {
    // An 8 MiB limit on a 6 MiB device: 8 fails, a 4 MiB region, then a 2 MiB one.
    auto a = Make(8 * kMiB, false, 6 * kMiB, &outstanding);
    void* x = a->Allocate(3 * kMiB);
    void* y = a->Allocate(2 * kMiB);
    REQUIRE((x && y));
    REQUIRE(a->Stats().num_regions == 2);
    a->Free(x, 3 * kMiB);
    a->Free(y, 2 * kMiB);
    void* p = a->Allocate(5 * kMiB);  // fits neither region; fits the device once they go
    REQUIRE(p != nullptr);
    CHECK(a->Stats().num_regions == 1);
    CHECK(a->Stats().num_regions_released == 2);
    a->Free(p, 5 * kMiB);
    CheckEveryRegionOneFreeChunk(*a);
  }
}

}  // namespace
}  // namespace pf::bfc_allocator_test
