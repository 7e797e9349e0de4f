// CPU-only build: no GPUs.
#include "placeflow/devices/gpu_probe.h"

namespace pf {

GpuProbe RunGpuProbe() { return GpuProbe(); }

StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const std::vector<GpuDevicePlan>& plan, const GpuOptions&) {
  if (!plan.empty()) return errors::Unimplemented("This build of placeflow has no CUDA backend");
  return std::vector<std::unique_ptr<Device>>();
}

}  // namespace pf
