// The host CPU device: host memory, the shared thread pool, priority 100 (always last).
#include <thread>

#include "devices/device.h"

namespace pf {
namespace {

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(int id) : Device(kDeviceCpu, id) {}
  Allocator* GetAllocator() override { return CpuAllocator(); }
  int priority() const override { return 100; }
  std::string Description() const override {
    return fmt::format("device: {}, cores: {}", parsed_name().id, std::thread::hardware_concurrency());
  }
};

}  // namespace

std::unique_ptr<Device> NewCpuDevice(int id) { return std::make_unique<CpuDevice>(id); }

}  // namespace pf
