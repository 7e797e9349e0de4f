#include "placeflow/devices/device_factory.h"

#include <algorithm>

#include "placeflow/devices/gpu_probe.h"

namespace pf {

StatusOr<std::vector<std::unique_ptr<Device>>> CreateLocalDevices(
    const LocalDeviceOptions& options) {
  std::vector<std::unique_ptr<Device>> devices;
  for (int i = 0; i < std::max(1, options.cpu_devices); ++i) {
    const auto at = static_cast<size_t>(i);
    devices.push_back(
        NewCpuDevice(i, at < options.cpu_pools.size() ? options.cpu_pools[at] : options.pool,
                     at < options.cpu_allocators.size() ? options.cpu_allocators[at] : nullptr));
  }
  const int physical = options.gpu.max_count == 0 ? 0 : CudaDeviceCount();
  PF_ASSIGN_OR_RETURN(std::vector<GpuDevicePlan> plan, PlanGpuDevices(physical, options.gpu));
  PF_ASSIGN_OR_RETURN(auto gpus, CreateGpuDevices(plan, options.gpu));
  for (auto& d : gpus) devices.push_back(std::move(d));
  return devices;
}

}  // namespace pf
