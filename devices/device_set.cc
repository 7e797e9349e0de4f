#include "placeflow/devices/device_set.h"

#include <fmt/ranges.h>

#include <algorithm>

namespace pf {

void DeviceSet::Add(std::unique_ptr<Device> device) {
  sorted_.push_back(device.get());
  owned_.push_back(std::move(device));
  std::stable_sort(sorted_.begin(), sorted_.end(), [](const Device* a, const Device* b) {
    if (a->priority() != b->priority()) return a->priority() > b->priority();
    const DeviceName& x = a->parsed_name();
    const DeviceName& y = b->parsed_name();
    if (x.type != y.type) return x.type < y.type;
    return x.id < y.id;
  });
}

Device* DeviceSet::Find(std::string_view full_name) const {
  for (Device* d : sorted_) {
    if (d->name() == full_name) return d;
  }
  return nullptr;
}

Device* DeviceSet::host() const {
  Device* host = nullptr;
  for (Device* d : sorted_) {
    if (d->device_type() == kDeviceCpu &&
        (host == nullptr || d->parsed_name().id < host->parsed_name().id))
      host = d;
  }
  return host;
}

std::vector<Device*> DeviceSet::Matching(const DeviceName& spec) const {
  std::vector<Device*> out;
  for (Device* d : sorted_) {
    if (DeviceName::IsSpecification(spec, d->parsed_name())) out.push_back(d);
  }
  return out;
}

std::string DeviceSet::NamesForError() const {
  std::vector<std::string> names;
  for (const Device* d : sorted_) names.push_back(d->name());
  return fmt::format("{}", fmt::join(names, ", "));
}

std::vector<std::string> DeviceSet::DeviceTypes() const {
  std::vector<std::string> types;
  for (const Device* d : sorted_) {
    if (std::find(types.begin(), types.end(), d->device_type()) == types.end())
      types.push_back(d->device_type());
  }
  return types;
}

}  // namespace pf
