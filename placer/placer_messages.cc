#include "placeflow/placer/placer_messages.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "placeflow/devices/gpu_probe.h"

namespace pf::placer_internal {
namespace {

std::string JoinTypes(const TypePriorities& types, const char* sep) {
  std::vector<std::string> names;
  for (const auto& [type, priority] : types) names.push_back(type);
  return fmt::format("{}", fmt::join(names, sep));
}

}  // namespace

std::string ColocationDebugInfo(const GroupInfo& g, const DeviceSet& devices,
                                const KernelRegistry& registry) {
  std::string s = fmt::format(
      "\nColocation Debug Info:\nColocation group had the following types and supported "
      "devices: \nRoot Member(requested_device_name_='{}' assigned_device_name_='{}' "
      "supported_device_types_=[{}])",
      g.requested.ToString(), g.assigned.ToString(), JoinTypes(g.supported, ", "));
  // One line per op (sorted, so the text is stable), as TensorFlow's: "TestAssign: GPU CPU".
  std::map<std::string, std::string> types_of_op;
  for (const Node* n : g.members) {
    types_of_op.emplace(n->op(),
                        JoinTypes(registry.PrioritizedTypes(*n, devices.DeviceTypes()), " "));
  }
  for (const auto& [op, types] : types_of_op) s += fmt::format("\n{}: {}", op, types);
  s += "\n\nColocation members, user-requested devices, and framework assigned devices, if any:";
  for (const Node* n : g.members) {
    s += fmt::format("\n  {} ({}) {}", n->name(), n->op(), n->requested_device());
    if (!n->assigned_device().empty())
      s += fmt::format(" framework assigned device={}", n->assigned_device());
  }
  return s + "\n";
}

std::string SortedDeviceList(const DeviceSet& devices, const char* open, const char* close) {
  std::vector<std::string> names;
  for (const Device* d : devices.devices()) names.push_back(d->name());
  std::sort(names.begin(), names.end());
  return fmt::format("{}{}{}", open, fmt::join(names, ", "), close);
}

std::string GpuNotEnabledNote(const DeviceName& spec) {
  std::string type = spec.type;
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!spec.has_type || type != "gpu") return "";
  if (BuiltWithCuda() && CudaDeviceCount() > 0) return "";
  return " The requested device appears to be a GPU, but CUDA is not enabled.";
}

}  // namespace pf::placer_internal
