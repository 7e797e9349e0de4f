// BfcAllocator: a caching best-fit-with-coalescing allocator (TensorFlow's BFC) over large
// regions taken from a SubAllocator (cudaMalloc, cudaHostAlloc, or plain host memory in tests).
// Freed chunks go back to a free set ordered by size, a request takes the smallest chunk that
// fits and splits off the rest, and a freed chunk merges with free neighbours in its region.
// Nothing CUDA here: the GPU device gives it a cudaMalloc sub-allocator.
//
// Regions never merge with each other (nor in TensorFlow's BFC): each is a separate
// sub-allocation, not contiguous with any other. So once everything is freed, each region is one
// free chunk of its own size and those chunks add up to bytes_reserved, while LargestFreeChunk()
// is the largest region, not bytes_reserved. Regions() shows this. When no chunk fits and the
// limit has no room for a new region that would, the wholly free regions go back to the
// sub-allocator if that makes the room, and one more region is tried (TensorFlow's garbage
// collection): small cached regions do not block a big request that the limit allows.
//
//   pf::BfcAllocator a(std::make_unique<MySubAllocator>(), /*memory_limit=*/1 << 30,
//                      {.allow_growth = true, .name = "GPU_0_bfc"});
//   void* p = a.Allocate(4096);          // nullptr when the limit or the device is exhausted
//   a.Free(p, 4096);
//   pf::AllocatorStats s = a.Stats();    // bytes_in_use, peak_bytes_in_use, bytes_limit, ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "placeflow/core/allocator.h"

namespace pf {

// Where a BfcAllocator gets its regions. Alloc returns nullptr when the memory is not there.
class SubAllocator {
 public:
  virtual ~SubAllocator() = default;
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
};

struct AllocatorStats {
  int64_t num_allocs = 0;    // successful Allocate calls
  int64_t num_ooms = 0;      // Allocate calls that returned nullptr
  int64_t bytes_in_use = 0;  // rounded bytes of live allocations
  int64_t peak_bytes_in_use = 0;
  int64_t largest_alloc_size = 0;
  int64_t bytes_reserved = 0;  // bytes held in regions (in use + cached)
  int64_t bytes_limit = 0;
  int64_t num_regions = 0;
  int64_t num_regions_released = 0;  // regions given back to the sub-allocator
  std::string DebugString() const;
};

struct BfcOptions {
  // true: regions are taken as needed (doubling from 2 MiB up to the limit); false: the whole
  // limit is taken at the first allocation (TensorFlow's default for GPUs).
  bool allow_growth = true;
  std::string name = "bfc";
  bool host_accessible = false;  // pinned host memory is; device memory is not
};

class BfcAllocator final : public Allocator {
 public:
  static constexpr size_t kMinAllocation = 256;  // every chunk is a multiple of this

  BfcAllocator(std::unique_ptr<SubAllocator> sub, size_t memory_limit, BfcOptions options);
  ~BfcAllocator() override;

  std::string Name() const override { return options_.name; }
  void* Allocate(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  bool host_accessible() const override { return options_.host_accessible; }
  std::string DescribeFailure(size_t bytes) const override;

  AllocatorStats Stats() const;
  size_t LargestFreeChunk() const;
  size_t FreeBytes() const;  // limit minus bytes in use
  // Returns every region with no live allocation to the sub-allocator.
  void ReleaseFreeRegions();

  struct RegionSummary {
    size_t size = 0;
    size_t bytes_in_use = 0;
    size_t free_chunks = 0;
    size_t largest_free_chunk = 0;
  };
  // The regions held now, oldest first, read from their chunk lists. After every allocation is
  // freed each has bytes_in_use 0, one free chunk, and largest_free_chunk == size.
  std::vector<RegionSummary> Regions() const;

 private:
  struct Chunk {
    char* ptr;
    size_t size;
    bool in_use = false;
    Chunk* prev = nullptr;  // neighbours in the same region, by address
    Chunk* next = nullptr;
    size_t region = 0;
  };
  struct Region {
    char* ptr;
    size_t size;
  };
  static size_t RoundUp(size_t bytes);
  Chunk* FindFree(size_t rounded);
  bool Extend(size_t rounded);
  void InsertFree(Chunk* c);
  void EraseFree(Chunk* c);
  size_t LargestFreeChunkLocked() const;
  // Gives back the wholly free regions if that leaves the limit room for `needed` bytes (any
  // room when 0); returns whether any went.
  bool ReleaseFreeRegionsLocked(size_t needed);

  std::unique_ptr<SubAllocator> sub_;
  const size_t limit_;
  const BfcOptions options_;
  mutable std::mutex mu_;
  std::map<size_t, Region> regions_;  // id -> region
  size_t next_region_id_ = 0;
  size_t next_region_size_ = size_t{2} << 20;
  std::map<char*, std::unique_ptr<Chunk>> chunks_;  // by address
  std::set<std::pair<size_t, char*>> free_;         // (size, address): best fit = lower_bound
  AllocatorStats stats_;
};

}  // namespace pf
