#include "placeflow/devices/device.h"

#include <cstring>

namespace pf {

VarState* ResourceMgr::LookupOrCreateVar(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = vars_[name];
  if (!slot) slot = std::make_unique<VarState>();
  return slot.get();
}

VarState* ResourceMgr::LookupVar(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : it->second.get();
}

std::vector<std::string> ResourceMgr::VarNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, v] : vars_) names.push_back(name);
  return names;
}

std::shared_ptr<Resource> ResourceMgr::LookupOrCreate(
    const std::string& name, const std::function<std::shared_ptr<Resource>()>& make) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Resource>& slot = resources_[name];
  if (!slot) slot = make();
  return slot;
}

Status Device::CopyWithinDevice(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return Status::OK();
}

Device::Device(std::string type, int id, std::string job, int replica, int task)
    : name_(DeviceName::FullName(job, replica, task, type, id)) {
  DeviceName::Parse(name_, &parsed_);
}

void Device::SetTask(const std::string& job, int replica, int task) {
  name_ = DeviceName::FullName(job, replica, task, parsed_.type, parsed_.id);
  DeviceName::Parse(name_, &parsed_);
}

}  // namespace pf
