// GPU discovery and creation, the same in every build. The CUDA backend (devices/cuda/, the GPU
// kernels) is a separate library, libplaceflow_cuda.so, that the first ProbeGpus() or
// CreateGpuDevices() loads with dlopen, and only when an NVIDIA driver is present: a process on
// a machine without one never maps cudart, cuBLAS, cuDNN or NCCL (docs/gpu.md, "How the backend
// loads").
//
//   int n = pf::CudaDeviceCount();   // 0 without the backend, a driver or a GPU
//   const pf::GpuProbe& p = pf::ProbeGpus();   // why there are none, driver and runtime versions
//   bool built = pf::BuiltWithCuda();          // a CUDA backend was built with this library
//   auto gpus = pf::CreateGpuDevices(plan, options);   // one Device per planned (logical) GPU
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/devices/device.h"
#include "placeflow/devices/device_manager.h"

namespace pf {

// True when this library was built with its CUDA backend (libplaceflow_cuda.so beside it),
// whether or not it is loaded.
bool BuiltWithCuda();

// What the CUDA runtime said when asked for its GPUs (once per process). "No GPU" is only
// cudaErrorNoDevice or no driver at all; any other failure (an NVIDIA driver older than the
// runtime, a broken installation, a backend library that does not load) is `status`, logged
// once: GPU tests fail on it instead of reporting themselves skipped.
struct GpuProbe {
  int count = 0;
  Status status;                 // OK, or why GPUs that may exist cannot be used
  int driver_version = 0;        // cudaDriverGetVersion: the CUDA version the driver supports
  int runtime_version = 0;       // cudaRuntimeGetVersion: the runtime this build links
  std::string backend;           // GpuBackendLoad::ToString(): whether the backend loaded
  std::string Versions() const;  // "driver supports CUDA 12.8, runtime CUDA 13.0"
};
const GpuProbe& ProbeGpus();
int CudaDeviceCount();  // ProbeGpus().count
// The probe, uncached: the backend's, or an empty one without the backend.
GpuProbe RunGpuProbe();

// The outcome of cudaGetDeviceCount, interpreted (CUDA-free, so it is tested without a GPU).
enum class CudaCountResult { kOk, kNoDevice, kOtherError };
GpuProbe InterpretGpuProbe(CudaCountResult result, int count, const std::string& error,
                           int driver_version, int runtime_version);

// The GPU devices of `plan`; an empty list for an empty plan, an error for a plan without the
// backend.
StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const std::vector<GpuDevicePlan>& plan, const GpuOptions& options);

// ---- The CUDA backend library ----

// What the backend gives the core: it calls RegisterGpuBackend from a static initialiser, which
// runs inside dlopen (or at program start where a program links the backend). Registering also
// brings the core's GPU kernels to life (PF_REGISTER_KERNEL_WITH_BACKEND).
struct GpuBackend {
  GpuProbe (*probe)() = nullptr;
  StatusOr<std::vector<std::unique_ptr<Device>>> (*create_devices)(
      const std::vector<GpuDevicePlan>& plan, const GpuOptions& options) = nullptr;
};
void RegisterGpuBackend(const GpuBackend& backend);

// How this process came to have the backend or not: decided once, by the first probe.
struct GpuBackendLoad {
  enum class State {
    kNotBuilt,  // a CPU-only build, nothing asked for a backend
    kDisabled,  // PF_CUDA_BACKEND=0
    kNoDriver,  // libcuda.so.1 does not load: no NVIDIA driver, nothing loaded
    kLinked,    // the program links libplaceflow_cuda (the GPU tests): no dlopen
    kLoaded,    // dlopen(path) succeeded and the backend registered itself
    kFailed,    // it was to load and did not: `detail` says why; the process runs CPU only
  };
  State state = State::kNotBuilt;
  std::string path;              // the library given to dlopen (kLoaded, kFailed)
  std::string detail;            // kNoDriver: dlerror of libcuda.so.1; kFailed: the warning logged
  std::string ToString() const;  // "loaded /opt/pf/lib/libplaceflow_cuda.so.0", ...
};
const GpuBackendLoad& LoadGpuBackend();  // once per process; thread-safe

namespace gpu_backend_internal {

// PF_CUDA_BACKEND: unset, "" or "auto" loads the backend when a driver is present; "0" never
// loads it; "1" loads it even without a driver; anything else is the library's path, loaded
// even without a driver.
enum class Request { kAuto, kNever, kAlways, kPath };
Request ParseRequest(const char* env);
// The state the load ends in before any dlopen of the backend, or kLoaded when it must be
// tried (the caller then reports kLoaded or kFailed).
GpuBackendLoad::State Decide(bool already_registered, Request request, bool built_with_cuda,
                             bool driver_present);
// libplaceflow_cuda.so.0 in the folder this library was loaded from (dladdr): the build tree's
// top folder, or <prefix>/lib once installed.
std::string DefaultLibraryPath();
// dlopen(path, RTLD_NOW | RTLD_LOCAL); the handle is never closed. An error names the path and
// dlerror(), as TensorFlow's "Could not load dynamic library" does.
Status OpenLibrary(const std::string& path);
// Whether libcuda.so.1, the driver's user-space library, loads; `why` gets dlerror otherwise.
bool DriverPresent(std::string* why);

}  // namespace gpu_backend_internal

}  // namespace pf
