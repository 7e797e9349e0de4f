// The host CPU device: host memory, the shared thread pool, priority 100 (always last).
#include <thread>

#include "placeflow/devices/device.h"

namespace pf {
namespace {

class CpuDevice final : public Device {
 public:
  CpuDevice(int id, ThreadPool* pool)
      : Device(kDeviceCpu, id), pool_(pool ? pool : ThreadPool::Default()) {}
  Allocator* GetAllocator() override { return CpuAllocator(); }
  ThreadPool* intra_op_pool() override { return pool_; }
  int priority() const override { return 100; }
  bool uses_host_memory() const override { return true; }
  std::string Description() const override {
    return fmt::format("device: {}, cores: {}", parsed_name().id,
                       std::thread::hardware_concurrency());
  }

 private:
  ThreadPool* pool_;
};

}  // namespace

std::unique_ptr<Device> NewCpuDevice(int id, ThreadPool* pool) {
  return std::make_unique<CpuDevice>(id, pool);
}

}  // namespace pf
