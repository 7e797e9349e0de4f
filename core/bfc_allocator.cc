#include "placeflow/core/bfc_allocator.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace pf {

std::string AllocatorStats::DebugString() const {
  return fmt::format(
      "Limit: {}\nInUse: {}\nMaxInUse: {}\nNumAllocs: {}\nMaxAllocSize: {}\nReserved: {}\nRegions: "
      "{}\n"
      "RegionsReleased: {}\nNumOOMs: {}",
      bytes_limit, bytes_in_use, peak_bytes_in_use, num_allocs, largest_alloc_size, bytes_reserved,
      num_regions, num_regions_released, num_ooms);
}

BfcAllocator::BfcAllocator(std::unique_ptr<SubAllocator> sub, size_t memory_limit,
                           BfcOptions options)
    : sub_(std::move(sub)), limit_(memory_limit), options_(std::move(options)) {
  stats_.bytes_limit = static_cast<int64_t>(limit_);
}

BfcAllocator::~BfcAllocator() {
  for (auto& [id, r] : regions_) sub_->Free(r.ptr, r.size);
}

size_t BfcAllocator::RoundUp(size_t bytes) {
  if (bytes == 0) return kMinAllocation;
  return (bytes + kMinAllocation - 1) / kMinAllocation * kMinAllocation;
}

void BfcAllocator::InsertFree(Chunk* c) { free_.insert({c->size, c->ptr}); }
void BfcAllocator::EraseFree(Chunk* c) { free_.erase({c->size, c->ptr}); }

BfcAllocator::Chunk* BfcAllocator::FindFree(size_t rounded) {
  auto it = free_.lower_bound({rounded, nullptr});
  if (it == free_.end()) return nullptr;
  Chunk* c = chunks_.at(it->second).get();
  free_.erase(it);
  // Split off the tail when it is big enough to be a chunk of its own.
  if (c->size - rounded >= kMinAllocation) {
    auto rest = std::make_unique<Chunk>();
    rest->ptr = c->ptr + rounded;
    rest->size = c->size - rounded;
    rest->region = c->region;
    rest->prev = c;
    rest->next = c->next;
    if (c->next) c->next->prev = rest.get();
    c->next = rest.get();
    c->size = rounded;
    InsertFree(rest.get());
    chunks_[rest->ptr] = std::move(rest);
  }
  return c;
}

bool BfcAllocator::Extend(size_t rounded) {
  const size_t reserved = static_cast<size_t>(stats_.bytes_reserved);
  if (reserved >= limit_) return false;
  const size_t available = limit_ - reserved;
  if (rounded > available) return false;
  size_t want = options_.allow_growth ? std::max(rounded, next_region_size_) : available;
  want = std::min(RoundUp(want), available);
  if (want < rounded) return false;
  void* p = sub_->Alloc(want);
  // The device may hold less than the limit says: try smaller regions, down to the request.
  while (p == nullptr && want > rounded) {
    want = std::max(rounded, RoundUp(want / 2));
    p = sub_->Alloc(want);
  }
  if (p == nullptr) return false;
  // Capped at the limit: regions given back and taken again must not double it forever.
  if (options_.allow_growth)
    next_region_size_ = std::min(std::max(next_region_size_, want) * 2, limit_);
  const size_t id = next_region_id_++;
  regions_[id] = {static_cast<char*>(p), want};
  auto c = std::make_unique<Chunk>();
  c->ptr = static_cast<char*>(p);
  c->size = want;
  c->region = id;
  InsertFree(c.get());
  chunks_[c->ptr] = std::move(c);
  stats_.bytes_reserved += static_cast<int64_t>(want);
  stats_.num_regions = static_cast<int64_t>(regions_.size());
  return true;
}

void* BfcAllocator::Allocate(size_t bytes) {
  // No device has half the address space; rounding such a size up would wrap to a small one.
  if (bytes > std::numeric_limits<size_t>::max() / 2) return nullptr;
  const size_t rounded = RoundUp(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  Chunk* c = FindFree(rounded);
  if (c == nullptr && Extend(rounded)) c = FindFree(rounded);
  // Cached but wholly free regions may be what stands in the way of a bigger one.
  if (c == nullptr && ReleaseFreeRegionsLocked(rounded) && Extend(rounded)) c = FindFree(rounded);
  if (c == nullptr) {
    ++stats_.num_ooms;
    return nullptr;
  }
  c->in_use = true;
  ++stats_.num_allocs;
  stats_.bytes_in_use += static_cast<int64_t>(c->size);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.largest_alloc_size = std::max(stats_.largest_alloc_size, static_cast<int64_t>(c->size));
  return c->ptr;
}

void BfcAllocator::Free(void* ptr, size_t) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = chunks_.find(static_cast<char*>(ptr));
  if (it == chunks_.end() || !it->second->in_use) return;  // not ours, or a double free
  Chunk* c = it->second.get();
  c->in_use = false;
  stats_.bytes_in_use -= static_cast<int64_t>(c->size);
  // Coalesce with free neighbours.
  if (c->next && !c->next->in_use) {
    Chunk* n = c->next;
    EraseFree(n);
    c->size += n->size;
    c->next = n->next;
    if (n->next) n->next->prev = c;
    chunks_.erase(n->ptr);
  }
  if (c->prev && !c->prev->in_use) {
    Chunk* p = c->prev;
    EraseFree(p);
    p->size += c->size;
    p->next = c->next;
    if (c->next) c->next->prev = p;
    chunks_.erase(c->ptr);
    c = p;
  }
  InsertFree(c);
}

void BfcAllocator::ReleaseFreeRegions() {
  std::lock_guard<std::mutex> lock(mu_);
  ReleaseFreeRegionsLocked(0);
}

bool BfcAllocator::ReleaseFreeRegionsLocked(size_t needed) {
  // A region is free when its first chunk is free and spans the whole region.
  std::vector<size_t> free_ids;
  size_t free_bytes = 0;
  for (const auto& [id, r] : regions_) {
    const Chunk* c = chunks_.at(r.ptr).get();
    if (!c->in_use && c->size == r.size) {
      free_ids.push_back(id);
      free_bytes += r.size;
    }
  }
  const size_t unreserved = limit_ - static_cast<size_t>(stats_.bytes_reserved);
  if (free_ids.empty() || unreserved + free_bytes < needed) return false;
  for (size_t id : free_ids) {
    const Region r = regions_.at(id);
    EraseFree(chunks_.at(r.ptr).get());
    chunks_.erase(r.ptr);
    sub_->Free(r.ptr, r.size);
    stats_.bytes_reserved -= static_cast<int64_t>(r.size);
    ++stats_.num_regions_released;
    regions_.erase(id);
  }
  stats_.num_regions = static_cast<int64_t>(regions_.size());
  return true;
}

std::vector<BfcAllocator::RegionSummary> BfcAllocator::Regions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RegionSummary> out;
  for (const auto& [id, r] : regions_) {
    RegionSummary s;
    s.size = r.size;
    for (const Chunk* c = chunks_.at(r.ptr).get(); c != nullptr; c = c->next) {
      if (c->in_use) {
        s.bytes_in_use += c->size;
      } else {
        ++s.free_chunks;
        s.largest_free_chunk = std::max(s.largest_free_chunk, c->size);
      }
    }
    out.push_back(s);
  }
  return out;
}

AllocatorStats BfcAllocator::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

size_t BfcAllocator::LargestFreeChunkLocked() const {
  return free_.empty() ? 0 : free_.rbegin()->first;
}

size_t BfcAllocator::LargestFreeChunk() const {
  std::lock_guard<std::mutex> lock(mu_);
  return LargestFreeChunkLocked();
}

size_t BfcAllocator::FreeBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_ - static_cast<size_t>(stats_.bytes_in_use);
}

std::string BfcAllocator::DescribeFailure(size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t reserved = static_cast<size_t>(stats_.bytes_reserved);
  return fmt::format(
      "requested {} bytes ({} rounded); {} bytes free of a {} byte limit ({} in use, {} cached, "
      "largest "
      "free chunk {} bytes, {} not yet reserved)",
      bytes, RoundUp(bytes), limit_ - static_cast<size_t>(stats_.bytes_in_use), limit_,
      stats_.bytes_in_use, reserved - static_cast<size_t>(stats_.bytes_in_use),
      LargestFreeChunkLocked(), limit_ > reserved ? limit_ - reserved : 0);
}

}  // namespace pf
