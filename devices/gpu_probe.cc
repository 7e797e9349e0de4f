#include "placeflow/devices/gpu_probe.h"

#include <fmt/format.h>

#include "placeflow/core/logging.h"

namespace pf {

namespace {

std::string CudaVersion(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

// The oldest driver branch a runtime major version runs on (CUDA's minor-version
// compatibility): CUDA 13.x needs R580, 12.x R525, 11.x R450.
int MinimumDriverBranch(int runtime_version) {
  const int major = runtime_version / 1000;
  if (major >= 13) return 580;
  if (major == 12) return 525;
  return 450;
}

}  // namespace

std::string GpuProbe::Versions() const {
  if (runtime_version == 0) return "no CUDA runtime loaded";
  if (driver_version == 0)
    return fmt::format("no NVIDIA driver, runtime CUDA {}", CudaVersion(runtime_version));
  return fmt::format("driver supports CUDA {}, runtime CUDA {}", CudaVersion(driver_version),
                     CudaVersion(runtime_version));
}

GpuProbe InterpretGpuProbe(CudaCountResult result, int count, const std::string& error,
                           int driver_version, int runtime_version) {
  GpuProbe p;
  p.driver_version = driver_version;
  p.runtime_version = runtime_version;
  if (result == CudaCountResult::kOk) {
    p.count = count;
    return p;
  }
  // No device, or no driver at all (cudaDriverGetVersion reports 0): a machine without GPUs.
  if (result == CudaCountResult::kNoDevice || driver_version == 0) return p;
  std::string why;
  if (driver_version < runtime_version) {
    why = fmt::format(
        " The NVIDIA driver supports CUDA {} but this build's runtime is CUDA {}: install a driver "
        "of branch R{} or newer, build placeflow against the CUDA toolkit the driver supports "
        "(cmake -DCUDAToolkit_ROOT=...), or install the CUDA forward-compatibility package "
        "(cuda-compat-{}-*, data-center GPUs only).",
        CudaVersion(driver_version), CudaVersion(runtime_version),
        MinimumDriverBranch(runtime_version), runtime_version / 1000);
  }
  p.status = errors::Internal(
      "GPUs are present but cannot be used: cudaGetDeviceCount failed: ", error, " (", p.Versions(),
      ").", why, " Until this is fixed every GPU request runs on the CPU or fails.");
  return p;
}

const GpuProbe& ProbeGpus() {
  static const GpuProbe probe = [] {
    GpuProbe p = RunGpuProbe();
    // A backend that failed to load has warned already (gpu_backend.cc).
    const bool warned = LoadGpuBackend().state == GpuBackendLoad::State::kFailed;
    if (!p.status.ok() && !warned) PF_LOG_ERROR("{}", p.status.message());
    return p;
  }();
  return probe;
}

int CudaDeviceCount() { return ProbeGpus().count; }

}  // namespace pf
