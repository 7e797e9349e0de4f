// Fake devices for placer tests: any type, any id, a priority, host memory underneath (a
// FAKE_GPU claims its own memory all the same).
#pragma once

#include "placeflow/devices/device_set.h"
#include "placeflow/graph/kernel.h"

namespace pf::testing {

class FakeDevice : public Device {
 public:
  // `uses_host_memory`: what the device claims, so that a FAKE_GPU gets a GPU's staging and
  // HostMemory copies in partitions (its allocator is the host's all the same).
  FakeDevice(std::string type, int id, int priority, bool uses_host_memory)
      : Device(std::move(type), id), priority_(priority), uses_host_memory_(uses_host_memory) {}
  Allocator* GetAllocator() override { return CpuAllocator(); }
  int priority() const override { return priority_; }
  bool uses_host_memory() const override { return uses_host_memory_; }

 private:
  int priority_;
  bool uses_host_memory_;
};

// `cpus` CPU devices and `gpus` devices of type FAKE_GPU (priority 200), added out of order.
inline DeviceSet FakeDeviceSet(int cpus, int gpus) {
  DeviceSet set;
  for (int i = std::max(cpus, gpus) - 1; i >= 0; --i) {
    if (i < gpus) set.Add(std::make_unique<FakeDevice>("FAKE_GPU", i, 200, false));
    if (i < cpus) set.Add(std::make_unique<FakeDevice>("CPU", i, 100, true));
  }
  return set;
}

// A kernel for fake devices' registrations: placement and partitioning only ask whether it
// exists (and what memory its arguments use); running it is an error.
class FakeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override {
    return errors::Internal("fake kernel ", name(), " ran");
  }
};

}  // namespace pf::testing
