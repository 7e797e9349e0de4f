// Fake devices for placer tests: any type, any id, a priority, host memory underneath.
#pragma once

#include "placeflow/devices/device_set.h"
#include "placeflow/graph/kernel.h"

namespace pf::testing {

class FakeDevice : public Device {
 public:
  FakeDevice(std::string type, int id, int priority)
      : Device(std::move(type), id), priority_(priority) {}
  Allocator* GetAllocator() override { return CpuAllocator(); }
  int priority() const override { return priority_; }

 private:
  int priority_;
};

// `cpus` CPU devices and `gpus` devices of type FAKE_GPU (priority 200), added out of order.
inline DeviceSet FakeDeviceSet(int cpus, int gpus) {
  DeviceSet set;
  for (int i = std::max(cpus, gpus) - 1; i >= 0; --i) {
    if (i < gpus) set.Add(std::make_unique<FakeDevice>("FAKE_GPU", i, 200));
    if (i < cpus) set.Add(std::make_unique<FakeDevice>("CPU", i, 100));
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
