// The devices of this process, as a session or a cluster task makes them: CPU:0 .. CPU:n-1 and
// a GPU device per planned (logical) GPU. No GPU without a CUDA build, a driver or a GPU (never
// an error); bad GPU options are errors.
//
//   pf::LocalDeviceOptions o;  o.cpu_devices = 2;  o.gpu.visible_device_list = "0";
//   for (auto& d : pf::CreateLocalDevices(o).ValueOrThrow()) devices.Add(std::move(d));
#pragma once

#include <memory>
#include <vector>

#include "placeflow/core/thread_pool.h"
#include "placeflow/devices/device.h"
#include "placeflow/devices/device_manager.h"

namespace pf {

struct LocalDeviceOptions {
  int cpu_devices = 1;         // at least one
  ThreadPool* pool = nullptr;  // the CPU devices' inter-op pool (default: ThreadPool::Default())
  // Per CPU device, by id, when not empty: its pool (in place of `pool`) and its allocator (null:
  // the host's). Both must outlive the devices (the allocators, every tensor they allocate).
  std::vector<ThreadPool*> cpu_pools;
  std::vector<Allocator*> cpu_allocators;
  GpuOptions gpu;  // gpu.max_count == 0: no GPU, and the driver is not probed
};

StatusOr<std::vector<std::unique_ptr<Device>>> CreateLocalDevices(
    const LocalDeviceOptions& options);

}  // namespace pf
