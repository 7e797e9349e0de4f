// TrackingAllocator: hands out another allocator's memory, counting the bytes in use and their
// peak, and refuses (nullptr) a request that would take the bytes in use past a limit. A CPU
// device with a SessionOptions::device_memory entry allocates through one, so its kernels' outputs
// and its variables fail with the usual ResourceExhausted ("OOM when allocating tensor ...")
// naming the device, the bytes asked, the limit and the bytes in use.
//
//   pf::TrackingAllocator::Ptr a = pf::TrackingAllocator::Create(pf::CpuAllocator(), "CPU:1",
//   4096); void* p = a->Allocate(1024);       // counted; nullptr when over the limit
//   a->Stats().peak_bytes_in_use;      // 1024
//   a->Free(p, 1024);
//
// Counts the bytes asked for (not the base allocator's rounding). The owner's Ptr may go before
// the memory it handed out (a fetched tensor outlives its session): the allocator then lives
// until the last of it is freed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "placeflow/core/allocator.h"
#include "placeflow/core/bfc_allocator.h"

namespace pf {

class TrackingAllocator final : public Allocator {
 public:
  struct Release {
    void operator()(TrackingAllocator* a) const { a->Unref(); }
  };
  using Ptr = std::unique_ptr<TrackingAllocator, Release>;
  // `device` names where the memory is, for errors; `limit` <= 0: none (only measured).
  static Ptr Create(Allocator* base, std::string device, int64_t limit = 0);

  std::string Name() const override;
  void* Allocate(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  bool host_accessible() const override { return base_->host_accessible(); }
  std::string DescribeFailure(size_t bytes) const override;

  const std::string& device() const { return device_; }
  void set_limit(int64_t limit) { limit_.store(limit > 0 ? limit : 0); }
  int64_t limit() const { return limit_.load(); }  // 0: none
  // num_allocs, num_ooms, bytes_in_use, peak_bytes_in_use, largest_alloc_size, bytes_limit.
  AllocatorStats Stats() const;
  // The peak starts again from the bytes in use now.
  void ResetPeak() { peak_.store(in_use_.load()); }

 private:
  TrackingAllocator(Allocator* base, std::string device, int64_t limit);
  ~TrackingAllocator() override = default;
  void Unref();

  Allocator* base_;
  std::string device_;
  std::atomic<int64_t> limit_{0};
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> largest_{0};
  std::atomic<int64_t> num_allocs_{0};
  std::atomic<int64_t> num_ooms_{0};
  std::atomic<int64_t> refs_{1};  // the owner's Ptr, and one per live allocation
};

}  // namespace pf
