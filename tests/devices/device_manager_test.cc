// GPU device planning (TensorFlow's visible_device_list and virtual devices), without GPUs.
#include "placeflow/devices/device_manager.h"

#include "placeflow/devices/gpu_probe.h"
#include "tests/testing/test_util.h"

namespace pf::device_manager_test {
namespace {

using Catch::Matchers::Contains;

std::vector<std::tuple<int, int, double>> Flat(const std::vector<GpuDevicePlan>& plan) {
  std::vector<std::tuple<int, int, double>> out;
  for (const auto& p : plan) out.emplace_back(p.id, p.physical_id, p.memory_mb);
  return out;
}

TEST_CASE("GPU planning: visible devices, logical splits, caps", "[devices]") {
  CHECK(PlanGpuDevices(0, {})->empty());  // no driver or no GPU: zero devices, no error
  CHECK(Flat(*PlanGpuDevices(2, {})) ==
        std::vector<std::tuple<int, int, double>>{{0, 0, 0}, {1, 1, 0}});
  GpuOptions reorder;
  reorder.visible_device_list = "1,0";
  CHECK(Flat(*PlanGpuDevices(2, reorder)) ==
        std::vector<std::tuple<int, int, double>>{{0, 1, 0}, {1, 0, 0}});
  GpuOptions split;
  split.visible_device_list = "1";
  split.logical_devices_memory_mb = {{4096, 2048}};
  CHECK(Flat(*PlanGpuDevices(2, split)) ==
        std::vector<std::tuple<int, int, double>>{{0, 1, 4096}, {1, 1, 2048}});
  GpuOptions two_split;
  two_split.logical_devices_memory_mb = {{1000, 1000}, {}};
  CHECK(Flat(*PlanGpuDevices(2, two_split)) ==
        std::vector<std::tuple<int, int, double>>{{0, 0, 1000}, {1, 0, 1000}, {2, 1, 0}});
  GpuOptions capped;
  capped.max_count = 1;
  CHECK(PlanGpuDevices(4, capped)->size() == 1);
  GpuOptions none;
  none.max_count = 0;
  CHECK(PlanGpuDevices(4, none)->empty());
}

TEST_CASE("GPU planning: bad options are clear errors", "[devices]") {
  GpuOptions bad;
  bad.visible_device_list = "0,3";
  CHECK_THAT(
      PlanGpuDevices(2, bad).status().message(),
      Contains("'visible_device_list' listed an invalid GPU id '3' but visible device count is 2"));
  bad.visible_device_list = "1,1";
  CHECK_THAT(PlanGpuDevices(2, bad).status().message(), Contains("duplicate entry"));
  bad.visible_device_list = "x";
  CHECK_THAT(PlanGpuDevices(2, bad).status().message(),
             Contains("Could not parse entry in 'visible_device_list': 'x'"));
  GpuOptions mismatch;
  mismatch.logical_devices_memory_mb = {{100}};
  CHECK_THAT(PlanGpuDevices(2, mismatch).status().message(),
             Contains("doesn't match the number of elements"));
  // A session on this machine sees no GPU and says so with no error.
  Graph g;
  SessionOptions opts;
  opts.visible_device_list = "0";
  if (CudaDeviceCount() == 0) {
    CHECK_THROWS_WITH(
        Session(g, opts),
        Contains(
            "'visible_device_list' listed an invalid GPU id '0' but visible device count is 0"));
  }
  Session plain(g);
  CHECK(plain.devices().devices().size() == 1);
}

TEST_CASE("GPU probe: only 'no device' or 'no driver' means no GPU; an old driver is an error",
          "[devices][probe]") {
  GpuProbe ok = InterpretGpuProbe(CudaCountResult::kOk, 2, "", 13000, 13000);
  CHECK(ok.status.ok());
  CHECK(ok.count == 2);
  GpuProbe none = InterpretGpuProbe(CudaCountResult::kNoDevice, 0,
                                    "no CUDA-capable device is "
                                    "detected (cudaErrorNoDevice)",
                                    13000, 13000);
  CHECK(none.status.ok());
  CHECK(none.count == 0);
  // No driver at all: cudaDriverGetVersion reports 0 (this machine, CI).
  GpuProbe no_driver = InterpretGpuProbe(CudaCountResult::kOtherError, 0,
                                         "CUDA driver version is insufficient for CUDA runtime "
                                         "version (cudaErrorInsufficientDriver)",
                                         0, 13000);
  CHECK(no_driver.status.ok());
  CHECK(no_driver.count == 0);
  // An R535 driver (CUDA 12.2) under a CUDA 13 runtime: GPUs exist but cannot be used.
  GpuProbe old = InterpretGpuProbe(CudaCountResult::kOtherError, 0,
                                   "CUDA driver version is insufficient for CUDA runtime version "
                                   "(cudaErrorInsufficientDriver)",
                                   12020, 13000);
  REQUIRE_FALSE(old.status.ok());
  CHECK(old.count == 0);
  CHECK_THAT(old.status.message(), Contains("cudaErrorInsufficientDriver"));
  CHECK_THAT(old.status.message(), Contains("driver supports CUDA 12.2, runtime CUDA 13.0"));
  CHECK_THAT(old.status.message(), Contains("driver of branch R580 or newer"));
  CHECK_THAT(old.status.message(), Contains("cuda-compat-13"));
  // Another failure with a recent enough driver: still an error, without the driver advice.
  GpuProbe broken =
      InterpretGpuProbe(CudaCountResult::kOtherError, 0,
                        "initialization error (cudaErrorInitializationError)", 13000, 13000);
  REQUIRE_FALSE(broken.status.ok());
  CHECK_THAT(broken.status.message(), Contains("cudaErrorInitializationError"));
  CHECK_THAT(broken.status.message(), !Contains("R580"));
  // This machine's probe (no GPU on CI) is never an error.
  if (!BuiltWithCuda()) CHECK(ProbeGpus().status.ok());
}

TEST_CASE("PF_FORCE_GPU_ALLOW_GROWTH overrides allow_growth; bad values are ignored", "[devices]") {
  const char* saved = std::getenv("PF_FORCE_GPU_ALLOW_GROWTH");
  const std::string restore = saved ? saved : "";
  unsetenv("PF_FORCE_GPU_ALLOW_GROWTH");
  CHECK(AllowGrowthFromEnv(false) == false);
  CHECK(AllowGrowthFromEnv(true) == true);
  setenv("PF_FORCE_GPU_ALLOW_GROWTH", "true", 1);
  CHECK(AllowGrowthFromEnv(false) == true);
  setenv("PF_FORCE_GPU_ALLOW_GROWTH", "false", 1);
  CHECK(AllowGrowthFromEnv(true) == false);
  setenv("PF_FORCE_GPU_ALLOW_GROWTH", "yes please", 1);
  CHECK(AllowGrowthFromEnv(false) == false);
  CHECK(AllowGrowthFromEnv(true) == true);
  if (saved) {
    setenv("PF_FORCE_GPU_ALLOW_GROWTH", restore.c_str(), 1);
  } else {
    unsetenv("PF_FORCE_GPU_ALLOW_GROWTH");
  }
}

}  // namespace
}  // namespace pf::device_manager_test
