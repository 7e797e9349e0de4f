// The devices of a session, in priority order (GPUs before CPUs, then by name).
//
//   pf::DeviceSet devices;
//   devices.Add(pf::NewCpuDevice(0));
//   const pf::Device* d = devices.Find("/job:localhost/replica:0/task:0/device:CPU:0");
//   for (pf::Device* d : devices.Matching(spec)) ...   // spec: a parsed, possibly partial name
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "placeflow/devices/device.h"

namespace pf {

class DeviceSet {
 public:
  void Add(std::unique_ptr<Device> device);
  // Devices sorted by priority (highest first), then by name.
  const std::vector<Device*>& devices() const { return sorted_; }
  Device* Find(std::string_view full_name) const;
  // The first CPU device: where host memory lives (CPU devices are always present).
  Device* host() const;
  std::vector<Device*> Matching(const DeviceName& spec) const;
  // "/job:localhost/replica:0/task:0/device:CPU:0, ..." for error messages.
  std::string NamesForError() const;
  std::vector<std::string> DeviceTypes() const;  // distinct, in priority order

 private:
  std::vector<std::unique_ptr<Device>> owned_;
  std::vector<Device*> sorted_;
};

}  // namespace pf
