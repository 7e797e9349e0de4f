// Loading the CUDA backend library (devices/gpu_backend.cc): the PF_CUDA_BACKEND switch, the
// decision, the path beside the core, the warning text when it does not load, and that a
// process that did not load it has neither CUDA libraries mapped nor GPU kernels registered.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "placeflow/devices/gpu_probe.h"
#include "placeflow/graph/kernel.h"
#include "tests/testing/test_util.h"

namespace pf::gpu_backend_test {
namespace {

namespace in = gpu_backend_internal;
using State = GpuBackendLoad::State;
namespace fs = std::filesystem;

TEST_CASE("PF_CUDA_BACKEND: unset or auto, 0, 1, or a path", "[devices][gpu_backend]") {
  CHECK(in::ParseRequest(nullptr) == in::Request::kAuto);
  CHECK(in::ParseRequest("") == in::Request::kAuto);
  CHECK(in::ParseRequest("auto") == in::Request::kAuto);
  CHECK(in::ParseRequest("0") == in::Request::kNever);
  CHECK(in::ParseRequest("1") == in::Request::kAlways);
  CHECK(in::ParseRequest("/opt/pf/lib/libplaceflow_cuda.so.0") == in::Request::kPath);
}

TEST_CASE("The backend loads by default only when built and a driver is present",
          "[devices][gpu_backend]") {
  // Decide(already_registered, request, built_with_cuda, driver_present)
  CHECK(in::Decide(false, in::Request::kAuto, true, true) == State::kLoaded);
  CHECK(in::Decide(false, in::Request::kAuto, true, false) == State::kNoDriver);
  CHECK(in::Decide(false, in::Request::kAuto, false, true) == State::kNotBuilt);
  CHECK(in::Decide(false, in::Request::kAuto, false, false) == State::kNotBuilt);
  // 0 forbids it even with a driver; 1 and a path force it even without one.
  CHECK(in::Decide(false, in::Request::kNever, true, true) == State::kDisabled);
  CHECK(in::Decide(false, in::Request::kAlways, true, false) == State::kLoaded);
  CHECK(in::Decide(false, in::Request::kPath, false, false) == State::kLoaded);
  // A program that links the backend has it whatever the switch says: no second copy.
  CHECK(in::Decide(true, in::Request::kNever, true, false) == State::kLinked);
  CHECK(in::Decide(true, in::Request::kAuto, true, false) == State::kLinked);
}

TEST_CASE("The backend is looked for beside the core library", "[devices][gpu_backend]") {
  const fs::path path = in::DefaultLibraryPath();
  CHECK(path.filename() == "libplaceflow_cuda.so.0");
  REQUIRE(path.is_absolute());
  CHECK(fs::exists(path.parent_path() / "libplaceflow.so.0"));
  // A CUDA build puts its backend there (the build tree's top folder, or <prefix>/lib).
  if (BuiltWithCuda()) CHECK(fs::exists(path));
}

TEST_CASE("A backend that does not load is named with dlerror, as TensorFlow does",
          "[devices][gpu_backend]") {
  const std::string path = "/nonexistent/libplaceflow_cuda.so.0";
  Status s = in::OpenLibrary(path);
  CHECK(s.code() == Code::kUnavailable);
  CHECK(s.message() ==
        "Could not load dynamic library '/nonexistent/libplaceflow_cuda.so.0'; dlerror: "
        "/nonexistent/libplaceflow_cuda.so.0: cannot open shared object file: No such file or "
        "directory");
  // A file that is not a shared library.
  const fs::path bad = fs::temp_directory_path() / fmt::format("pf_not_a_lib_{}.so", getpid());
  std::ofstream(bad) << std::string(256, 'x');  // longer than an ELF header
  s = in::OpenLibrary(bad.string());
  fs::remove(bad);
  CHECK_THAT(s.message(),
             Catch::Contains("Could not load dynamic library '" + bad.string() + "'; dlerror: ") &&
                 Catch::Contains("invalid ELF header"));
}

std::string Maps() {
  std::ifstream in("/proc/self/maps");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_CASE("This process loads the backend only when it should, and then has its kernels",
          "[devices][gpu_backend]") {
  const GpuProbe& probe = ProbeGpus();  // decides the load
  const GpuBackendLoad& load = LoadGpuBackend();
  CHECK(probe.backend == load.ToString());
  if (std::getenv("PF_CUDA_BACKEND") == nullptr) {
    // pf_tests does not link the backend: the default decision, from build and driver alone.
    const bool driver = in::DriverPresent(nullptr);
    const State expected = !BuiltWithCuda() ? State::kNotBuilt
                           : driver         ? State::kLoaded
                                            : State::kNoDriver;
    INFO(load.ToString());
    CHECK(load.state == expected);
  }
  bool gpu_identity = false, gpu_matmul = false;
  for (const KernelDef* k : KernelRegistry::Global()->KernelsForOp("Identity"))
    gpu_identity |= k->device_type() == kDeviceGpu;
  for (const KernelDef* k : KernelRegistry::Global()->KernelsForOp("MatMul"))
    gpu_matmul |= k->device_type() == kDeviceGpu;
  const std::string maps = Maps();
  const bool has_backend = load.state == State::kLoaded || load.state == State::kLinked;
  INFO(load.ToString());
  // The core's GPU kernels (Identity) and the backend's (MatMul) exist together or not at all.
  CHECK(gpu_identity == has_backend);
  CHECK(gpu_matmul == has_backend);
  CHECK((maps.find("libplaceflow_cuda.so") != std::string::npos) == has_backend);
  if (!has_backend) {
    CHECK(maps.find("libcublas") == std::string::npos);
    CHECK(maps.find("libcudnn") == std::string::npos);
    CHECK(maps.find("libnccl") == std::string::npos);
    CHECK(CudaDeviceCount() == 0);
    CHECK_THAT(CreateGpuDevices({GpuDevicePlan{}}, GpuOptions()).status().message(),
               Catch::StartsWith("No GPU devices can be created: the CUDA backend is "));
  }
}

TEST_CASE("Kernels registered with a backend exist once that backend is enabled",
          "[devices][gpu_backend]") {
  KernelRegistry* r = KernelRegistry::Global();
  auto count = [&](const char* type) {
    int n = 0;
    for (const KernelDef* k : r->KernelsForOp("TestBackendOnlyOp")) n += k->device_type() == type;
    return n;
  };
  KernelDef before("TestBackendOnlyOp", "TEST_BACKEND");
  before.factory = [](const Node&) -> std::unique_ptr<OpKernel> { return nullptr; };
  r->RegisterWithBackend(before);
  CHECK(count("TEST_BACKEND") == 0);
  r->EnableBackend("TEST_BACKEND");
  CHECK(count("TEST_BACKEND") == 1);
  r->EnableBackend("TEST_BACKEND");  // once only: nothing registered twice
  CHECK(count("TEST_BACKEND") == 1);
  r->RegisterWithBackend(before);  // after the backend: at once
  CHECK(count("TEST_BACKEND") == 2);
}

}  // namespace
}  // namespace pf::gpu_backend_test
