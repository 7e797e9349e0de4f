// The host CPU device: host memory (or a session's allocator over it), the shared thread pool (or
// a pool of its own), priority 100 (always last).
#include <thread>

#include "placeflow/devices/device.h"

namespace pf {
namespace {

class CpuDevice final : public Device {
 public:
  CpuDevice(int id, ThreadPool* pool, Allocator* allocator)
      : Device(kDeviceCpu, id),
        pool_(pool ? pool : ThreadPool::Default()),
        allocator_(allocator ? allocator : CpuAllocator()) {}
  Allocator* GetAllocator() override { return allocator_; }
  ThreadPool* intra_op_pool() override { return pool_; }
  int priority() const override { return 100; }
  bool uses_host_memory() const override { return true; }
  std::string Description() const override {
    return fmt::format("device: {}, cores: {}", parsed_name().id,
                       std::thread::hardware_concurrency());
  }

 private:
  ThreadPool* pool_;
  Allocator* allocator_;
};

}  // namespace

std::unique_ptr<Device> NewCpuDevice(int id, ThreadPool* pool, Allocator* allocator) {
  return std::make_unique<CpuDevice>(id, pool, allocator);
}

}  // namespace pf
