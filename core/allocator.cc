#include "placeflow/core/allocator.h"

#include <cstdlib>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace pf {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kCacheMin = 4 << 10;  // blocks from here up go to the shared cache

// Blocks under kCacheMin are kept per thread by 64-byte size class, with no lock: a step
// allocates many small outputs (scalars, shapes, biases), and glibc's aligned_alloc and free
// for them were ~30% of a chain of scalar ops (perf, executor_chain). Bounded per thread; a
// block freed on another thread than the one that allocated it lands in that thread's cache.
class SmallBlockCache {
 public:
  static constexpr size_t kClasses = kCacheMin / kAlign;
  static constexpr int kPerClass = 16;

  ~SmallBlockCache() {
    for (size_t c = 0; c < kClasses; ++c)
      for (int i = 0; i < count_[c]; ++i) std::free(blocks_[c][i]);
    destroyed_ = true;
  }
  // The calling thread's cache, or null while the thread exits (after its destructor ran).
  static SmallBlockCache* ForThisThread() {
    if (destroyed_) return nullptr;
    thread_local SmallBlockCache cache;
    return &cache;
  }
  // `rounded` is a multiple of kAlign below kCacheMin.
  void* Pop(size_t rounded) {
    const size_t c = rounded / kAlign;
    return count_[c] > 0 ? blocks_[c][--count_[c]] : nullptr;
  }
  bool Push(void* p, size_t rounded) {
    const size_t c = rounded / kAlign;
    if (count_[c] == kPerClass) return false;
    blocks_[c][count_[c]++] = p;
    return true;
  }

 private:
  static thread_local bool destroyed_;
  void* blocks_[kClasses][kPerClass];
  int count_[kClasses] = {};
};
thread_local bool SmallBlockCache::destroyed_ = false;

// Blocks from kCacheMin up to kThreadMax are also kept per thread, a few of them by exact size
// (kSlots, at most kThreadBytes in all), before the shared cache: with the shared cache alone,
// two threads running independent chains of 4096-float ops (executor_wide) took each other's
// freed outputs, so every output was written into lines the other core held, and each node ran
// 1.3x slower than on one thread when the two vCPUs sat far apart (issue 34).
class MediumBlockCache {
 public:
  static constexpr size_t kThreadMax = 64 << 10;
  static constexpr size_t kThreadBytes = 256 << 10;
  static constexpr int kSlots = 8;

  ~MediumBlockCache() {
    for (int i = 0; i < count_; ++i) std::free(blocks_[i].p);
    destroyed_ = true;
  }
  static MediumBlockCache* ForThisThread() {
    if (destroyed_) return nullptr;
    thread_local MediumBlockCache cache;
    return &cache;
  }
  // The most recently freed block of exactly `rounded` bytes, or null.
  void* Pop(size_t rounded) {
    for (int i = count_ - 1; i >= 0; --i) {
      if (blocks_[i].bytes != rounded) continue;
      void* p = blocks_[i].p;
      for (int j = i; j + 1 < count_; ++j) blocks_[j] = blocks_[j + 1];
      --count_;
      bytes_ -= rounded;
      return p;
    }
    return nullptr;
  }
  bool Push(void* p, size_t rounded) {
    if (count_ == kSlots || bytes_ + rounded > kThreadBytes) return false;
    blocks_[count_++] = {p, rounded};
    bytes_ += rounded;
    return true;
  }

 private:
  struct Block {
    void* p;
    size_t bytes;
  };
  static thread_local bool destroyed_;
  Block blocks_[kSlots];
  int count_ = 0;
  size_t bytes_ = 0;
};
thread_local bool MediumBlockCache::destroyed_ = false;

// Large blocks are kept for reuse by exact size: a training loop allocates the same sizes
// every step, and a fresh multi-megabyte block from the OS costs a page fault per 4 KiB
// (measured: ~40% of an mlp_seed000 forward pass before this cache).
class HostAllocator final : public Allocator {
 public:
  std::string Name() const override { return "cpu"; }
  void* Allocate(size_t bytes) override {
    if (bytes > kMaxBytes) return nullptr;  // rounding up would wrap to a small block
    const size_t rounded = Round(bytes);
    if (rounded < kCacheMin) {
      SmallBlockCache* cache = SmallBlockCache::ForThisThread();
      if (void* p = cache != nullptr ? cache->Pop(rounded) : nullptr) return p;
    } else {
      if (rounded <= MediumBlockCache::kThreadMax) {
        MediumBlockCache* cache = MediumBlockCache::ForThisThread();
        if (void* p = cache != nullptr ? cache->Pop(rounded) : nullptr) return p;
      }
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(rounded);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= rounded;
        return p;
      }
    }
    return std::aligned_alloc(kAlign, rounded);
  }
  void Free(void* ptr, size_t bytes) override {
    const size_t rounded = Round(bytes);
    if (rounded < kCacheMin) {
      SmallBlockCache* cache = SmallBlockCache::ForThisThread();
      if (cache != nullptr && cache->Push(ptr, rounded)) return;
    } else {
      if (rounded <= MediumBlockCache::kThreadMax) {
        MediumBlockCache* cache = MediumBlockCache::ForThisThread();
        if (cache != nullptr && cache->Push(ptr, rounded)) return;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_bytes_ + rounded <= kCacheMax) {
        free_[rounded].push_back(ptr);
        cached_bytes_ += rounded;
        return;
      }
    }
    std::free(ptr);
  }

 private:
  static constexpr size_t kMaxBytes = std::numeric_limits<size_t>::max() / 2;
  static constexpr size_t kCacheMax = size_t{2} << 30;
  static size_t Round(size_t bytes) {
    return bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
  }

  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

}  // namespace

Allocator* CpuAllocator() {
  static HostAllocator* allocator = new HostAllocator();
  return allocator;
}

std::shared_ptr<Buffer> Buffer::Allocate(Allocator* allocator, size_t bytes) {
  void* p = allocator->Allocate(bytes);
  if (p == nullptr) return nullptr;
  return std::make_shared<Buffer>(allocator, p, bytes);
}

}  // namespace pf
