#include "placeflow/core/tracking_allocator.h"

#include <fmt/format.h>

namespace pf {
namespace {

void RaiseTo(std::atomic<int64_t>* max, int64_t value) {
  int64_t cur = max->load(std::memory_order_relaxed);
  while (value > cur && !max->compare_exchange_weak(cur, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

TrackingAllocator::TrackingAllocator(Allocator* base, std::string device, int64_t limit)
    : base_(base), device_(std::move(device)) {
  set_limit(limit);
}

TrackingAllocator::Ptr TrackingAllocator::Create(Allocator* base, std::string device,
                                                 int64_t limit) {
  return Ptr(new TrackingAllocator(base, std::move(device), limit));
}

void TrackingAllocator::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

std::string TrackingAllocator::Name() const {
  return fmt::format("{} of {}", base_->Name(), device_);
}

void* TrackingAllocator::Allocate(size_t bytes) {
  const auto n = static_cast<int64_t>(bytes);
  const int64_t limit = limit_.load(std::memory_order_relaxed);
  int64_t now = in_use_.load(std::memory_order_relaxed);
  // Reserve first, so that concurrent requests never pass the limit together.
  do {
    if (n < 0 || (limit > 0 && n > limit - now)) {
      num_ooms_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  } while (!in_use_.compare_exchange_weak(now, now + n, std::memory_order_relaxed));
  void* p = base_->Allocate(bytes);
  if (p == nullptr) {
    in_use_.fetch_sub(n, std::memory_order_relaxed);
    num_ooms_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  refs_.fetch_add(1, std::memory_order_relaxed);
  num_allocs_.fetch_add(1, std::memory_order_relaxed);
  RaiseTo(&peak_, now + n);
  RaiseTo(&largest_, n);
  return p;
}

void TrackingAllocator::Free(void* ptr, size_t bytes) {
  base_->Free(ptr, bytes);
  in_use_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  Unref();  // may delete this: the last allocation of an allocator whose owner is gone
}

std::string TrackingAllocator::DescribeFailure(size_t bytes) const {
  const int64_t limit = limit_.load(), in_use = in_use_.load();
  if (limit <= 0) return base_->DescribeFailure(bytes);
  return fmt::format(
      "memory limit of {} bytes (SessionOptions::device_memory): {} bytes requested, {} in "
      "use, {} free",
      limit, bytes, in_use, limit > in_use ? limit - in_use : 0);
}

AllocatorStats TrackingAllocator::Stats() const {
  AllocatorStats s;
  s.num_allocs = num_allocs_.load();
  s.num_ooms = num_ooms_.load();
  s.bytes_in_use = in_use_.load();
  s.peak_bytes_in_use = peak_.load();
  s.largest_alloc_size = largest_.load();
  s.bytes_limit = limit_.load();
  return s;
}

}  // namespace pf
