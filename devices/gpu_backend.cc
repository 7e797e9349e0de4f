// Loading the CUDA backend (libplaceflow_cuda.so) at run time: see devices/gpu_probe.h.
#include <dlfcn.h>
#include <stdlib.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "placeflow/core/logging.h"
#include "placeflow/devices/gpu_probe.h"
#include "placeflow/graph/kernel.h"

// CMake defines it on this file alone in CUDA builds: every other core file compiles the same
// with and without CUDA.
#ifndef PF_CUDA_BACKEND_BUILT
#define PF_CUDA_BACKEND_BUILT 0
#endif

namespace pf {

namespace {

constexpr const char kLibraryName[] = "libplaceflow_cuda.so.0";

std::mutex g_backend_mu;
GpuBackend* g_backend = nullptr;  // set once, by RegisterGpuBackend; never freed

GpuBackend* Registered() {
  std::lock_guard<std::mutex> lock(g_backend_mu);
  return g_backend;
}

std::string DlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown error";
}

GpuBackendLoad Load() {
  namespace in = gpu_backend_internal;
  using State = GpuBackendLoad::State;
  GpuBackendLoad load;
  const char* env = std::getenv("PF_CUDA_BACKEND");
  const in::Request request = in::ParseRequest(env);
  std::string no_driver;
  // The driver is looked for only when it decides something (auto, with a backend built).
  const bool check_driver = request == in::Request::kAuto && BuiltWithCuda();
  const bool driver = check_driver && in::DriverPresent(&no_driver);
  load.state = in::Decide(Registered() != nullptr, request, BuiltWithCuda(), driver);
  if (load.state == State::kNoDriver) load.detail = no_driver;
  if (load.state != State::kLoaded) return load;
  load.path = request == in::Request::kPath ? std::string(env) : in::DefaultLibraryPath();
  Status s = in::OpenLibrary(load.path);
  if (s.ok() && Registered() == nullptr) {
    s = errors::Internal("Loaded '", load.path,
                         "' but it registered no GPU backend: not a placeflow CUDA backend");
  }
  if (!s.ok()) {
    load.state = State::kFailed;
    load.detail = std::string(s.message()) +
                  ". Skipping registering GPU devices: placeflow runs on the CPU only.";
    PF_LOG_WARN("{}", load.detail);
  }
  return load;
}

}  // namespace

bool BuiltWithCuda() { return PF_CUDA_BACKEND_BUILT != 0; }

void RegisterGpuBackend(const GpuBackend& backend) {
  {
    std::lock_guard<std::mutex> lock(g_backend_mu);
    if (g_backend != nullptr) return;  // the first wins: one backend per process
    g_backend = new GpuBackend(backend);
  }
  KernelRegistry::Global()->EnableBackend(kDeviceGpu);
}

const GpuBackendLoad& LoadGpuBackend() {
  static const GpuBackendLoad load = Load();
  return load;
}

std::string GpuBackendLoad::ToString() const {
  switch (state) {
    case State::kNotBuilt:
      return "not built (a CPU-only build of placeflow)";
    case State::kDisabled:
      return "disabled (PF_CUDA_BACKEND=0)";
    case State::kNoDriver:
      return "not loaded: no NVIDIA driver (" + detail + ")";
    case State::kLinked:
      return "linked into the program";
    case State::kLoaded:
      return "loaded " + path;
    case State::kFailed:
      return "failed: " + detail;
  }
  return "unknown";
}

GpuProbe RunGpuProbe() {
  const GpuBackendLoad& load = LoadGpuBackend();
  GpuProbe p;
  if (GpuBackend* b = Registered()) p = b->probe();
  if (load.state == GpuBackendLoad::State::kFailed) p.status = errors::Unavailable(load.detail);
  p.backend = load.ToString();
  return p;
}

StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const std::vector<GpuDevicePlan>& plan, const GpuOptions& options) {
  const GpuBackendLoad& load = LoadGpuBackend();
  if (GpuBackend* b = Registered()) return b->create_devices(plan, options);
  if (!plan.empty()) {
    return errors::Unimplemented("No GPU devices can be created: the CUDA backend is ",
                                 load.ToString());
  }
  return std::vector<std::unique_ptr<Device>>();
}

namespace gpu_backend_internal {

Request ParseRequest(const char* env) {
  if (env == nullptr) return Request::kAuto;
  const std::string v(env);
  if (v.empty() || v == "auto") return Request::kAuto;
  if (v == "0") return Request::kNever;
  if (v == "1") return Request::kAlways;
  return Request::kPath;
}

GpuBackendLoad::State Decide(bool already_registered, Request request, bool built_with_cuda,
                             bool driver_present) {
  using State = GpuBackendLoad::State;
  if (already_registered) return State::kLinked;
  switch (request) {
    case Request::kNever:
      return State::kDisabled;
    case Request::kAlways:
    case Request::kPath:
      return State::kLoaded;
    case Request::kAuto:
      break;
  }
  if (!built_with_cuda) return State::kNotBuilt;
  return driver_present ? State::kLoaded : State::kNoDriver;
}

std::string DefaultLibraryPath() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&LoadGpuBackend), &info) == 0 || info.dli_fname == nullptr)
    return kLibraryName;  // the loader's search path, then
  std::string dir(info.dli_fname);
  const size_t slash = dir.rfind('/');
  if (slash == std::string::npos) return kLibraryName;
  dir.resize(slash);
  // The folder as the kernel resolves it (an installed tool loads <prefix>/bin/../lib/...).
  if (char* real = realpath(dir.c_str(), nullptr)) {
    dir = real;
    std::free(real);
  }
  return dir + "/" + kLibraryName;
}

Status OpenLibrary(const std::string& path) {
  // RTLD_NOW: a symbol the backend needs and its cuBLAS/cuDNN/NCCL lack fails here, as a
  // warning, instead of killing the process at the first GPU step. RTLD_LOCAL: nothing looks
  // the backend's symbols up by name (it registers itself), so the CUDA libraries' symbols stay
  // out of the global scope, where they could clash with another CUDA library the host program
  // loads later; the core symbols the backend uses come from the libplaceflow already loaded.
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    return errors::Unavailable("Could not load dynamic library '", path, "'; dlerror: ", DlError());
  }
  return Status::OK();
}

bool DriverPresent(std::string* why) {
  // The driver's user-space library, where the CUDA runtime itself looks for it: present on
  // every driver install, in containers given GPUs and in WSL2 (where /dev/nvidiactl is not).
  // Lazy binding: only the check's cost, the runtime resolves what it uses. Kept open: the
  // runtime opens it again.
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr) return true;
  if (why != nullptr) *why = DlError();  // names libcuda.so.1
  return false;
}

}  // namespace gpu_backend_internal

}  // namespace pf
