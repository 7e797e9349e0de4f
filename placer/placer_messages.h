// The placer's error texts, TensorFlow's (colocation_graph.cc): a colocation group's debug info
// and the texts for a group that no device can take. Internal to placer/.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "placeflow/devices/device_set.h"
#include "placeflow/graph/graph.h"
#include "placeflow/graph/kernel.h"

namespace pf::placer_internal {

using TypePriorities = std::vector<std::pair<std::string, int>>;  // device type, kernel priority

// What the error texts need to know about a colocation group.
struct GroupInfo {
  std::vector<const Node*> members;  // in node order
  DeviceName requested;              // the members' requests, merged
  DeviceName assigned;               // the members' assigned devices, merged
  TypePriorities supported;          // types with a kernel for every member, best first
};

// "\nColocation Debug Info:\n..." : per op its supported device types ("TestAssign: GPU CPU"),
// then each member with its requested and assigned device.
std::string ColocationDebugInfo(const GroupInfo& g, const DeviceSet& devices,
                                const KernelRegistry& registry);

// "[ name, name ]": every device, sorted by name, as TensorFlow lists them.
std::string SortedDeviceList(const DeviceSet& devices, const char* open = "[ ",
                             const char* close = " ]");

// " The requested device appears to be a GPU, but CUDA is not enabled." when `spec` asks for a
// GPU and this build has no CUDA or the machine no GPU; else "".
std::string GpuNotEnabledNote(const DeviceName& spec);

}  // namespace pf::placer_internal
