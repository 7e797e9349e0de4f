#include "placeflow/devices/device_manager.h"

#include <cstdlib>
#include <set>
#include <sstream>

#include "placeflow/core/logging.h"

namespace pf {

StatusOr<std::vector<GpuDevicePlan>> PlanGpuDevices(int physical_count, const GpuOptions& options) {
  std::vector<int> visible;
  if (options.visible_device_list.empty()) {
    for (int i = 0; i < physical_count; ++i) visible.push_back(i);
  } else {
    std::stringstream ss(options.visible_device_list);
    std::string item;
    std::set<int> seen;
    while (std::getline(ss, item, ',')) {
      int id = -1;
      try {
        size_t used = 0;
        id = std::stoi(item, &used);
        if (used != item.size()) id = -1;
      } catch (const std::exception&) {
      }
      if (id < 0)
        return errors::InvalidArgument("Could not parse entry in 'visible_device_list': '", item,
                                       "'. visible_device_list = ", options.visible_device_list);
      if (id >= physical_count) {
        return errors::InvalidArgument("'visible_device_list' listed an invalid GPU id '", id,
                                       "' but visible device count is ", physical_count);
      }
      if (!seen.insert(id).second) {
        return errors::InvalidArgument("visible_device_list contained a duplicate entry: ",
                                       options.visible_device_list);
      }
      visible.push_back(id);
    }
  }
  const auto& logical = options.logical_devices_memory_mb;
  if (!logical.empty() && logical.size() != visible.size()) {
    return errors::InvalidArgument(
        "The number of GPUs in visible_device_list (", visible.size(),
        ") doesn't match the number of elements in the logical devices list (", logical.size(),
        ")");
  }
  std::vector<GpuDevicePlan> plan;
  for (size_t v = 0; v < visible.size(); ++v) {
    std::vector<double> parts =
        logical.empty() || logical[v].empty() ? std::vector<double>{0.0} : logical[v];
    for (double mb : parts) {
      if (mb < 0)
        return errors::InvalidArgument("Logical device memory must be positive, got ", mb, " MiB");
      if (options.max_count >= 0 && static_cast<int>(plan.size()) >= options.max_count) return plan;
      plan.push_back({static_cast<int>(plan.size()), visible[v], mb});
    }
  }
  return plan;
}

bool AllowGrowthFromEnv(bool configured) {
  const char* env = std::getenv("PF_FORCE_GPU_ALLOW_GROWTH");
  if (env == nullptr) return configured;
  const std::string v = env;
  if (v == "true") return true;
  if (v == "false") return false;
  PF_LOG_ERROR(
      "Invalid value for PF_FORCE_GPU_ALLOW_GROWTH: '{}' (expected true or false); using "
      "allow_growth={}",
      v, configured);
  return configured;
}

}  // namespace pf
