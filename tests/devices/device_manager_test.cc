// GPU device planning (TensorFlow's visible_device_list and virtual devices), without GPUs.
#include "placeflow/devices/device_manager.h"

#include "placeflow/devices/gpu_probe.h"
#include "tests/testing/test_util.h"

namespace pf {
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

}  // namespace
}  // namespace pf
