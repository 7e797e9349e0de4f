// GPU discovery and creation that work with and without the CUDA build.
//
//   int n = pf::CudaDeviceCount();   // 0 without CUDA, without a driver or without a GPU
//   const pf::GpuProbe& p = pf::ProbeGpus();   // why there are none, driver and runtime versions
//   bool built = pf::BuiltWithCuda();
//   auto gpus = pf::CreateGpuDevices(plan, options);   // one Device per planned (logical) GPU
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/devices/device.h"
#include "placeflow/devices/device_manager.h"

namespace pf {

constexpr bool BuiltWithCuda() {
#ifdef PF_WITH_CUDA
  return true;
#else
  return false;
#endif
}

// What the CUDA runtime said when asked for its GPUs (once per process). "No GPU" is only
// cudaErrorNoDevice or no driver at all; any other failure (an NVIDIA driver older than the
// runtime, a broken installation) is `status`, logged once at error level: GPU tests fail on
// it instead of reporting themselves skipped.
struct GpuProbe {
  int count = 0;
  Status status;                 // OK, or why GPUs that may exist cannot be used
  int driver_version = 0;        // cudaDriverGetVersion: the CUDA version the driver supports
  int runtime_version = 0;       // cudaRuntimeGetVersion: the runtime this build links
  std::string Versions() const;  // "driver supports CUDA 12.8, runtime CUDA 13.0"
};
const GpuProbe& ProbeGpus();
int CudaDeviceCount();  // ProbeGpus().count
// The backend's probe, uncached (devices/cuda/gpu_device.cc, or gpu_probe_none.cc).
GpuProbe RunGpuProbe();

// The outcome of cudaGetDeviceCount, interpreted (CUDA-free, so it is tested without a GPU).
enum class CudaCountResult { kOk, kNoDevice, kOtherError };
GpuProbe InterpretGpuProbe(CudaCountResult result, int count, const std::string& error,
                           int driver_version, int runtime_version);

// The GPU devices of `plan` (devices/cuda/gpu_device.h); an empty list without CUDA.
StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const std::vector<GpuDevicePlan>& plan, const GpuOptions& options);

}  // namespace pf
