// GPU discovery and creation that work with and without the CUDA build.
//
//   int n = pf::CudaDeviceCount();   // 0 without CUDA, without a driver or without a GPU
//   bool built = pf::BuiltWithCuda();
//   auto gpus = pf::CreateGpuDevices(plan, options);   // one Device per planned (logical) GPU
#pragma once

#include <memory>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/devices/device.h"
#include "placeflow/devices/device_manager.h"

namespace pf {

int CudaDeviceCount();
constexpr bool BuiltWithCuda() {
#ifdef PF_WITH_CUDA
  return true;
#else
  return false;
#endif
}

// The GPU devices of `plan` (devices/cuda/gpu_device.h); an empty list without CUDA.
StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const std::vector<GpuDevicePlan>& plan, const GpuOptions& options);

}  // namespace pf
