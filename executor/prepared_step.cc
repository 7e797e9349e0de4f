#include "placeflow/executor/prepared_step.h"

#include <algorithm>
#include <set>

#include "placeflow/core/logging.h"
#include "placeflow/executor/remapper.h"
#include "placeflow/executor/subgraph.h"

namespace pf {
namespace {

// The remapper on every partition: a fetched output is never absorbed into a fusion.
void RemapPartitions(const std::vector<Output>& fetches, bool log, StepPlan* plan) {
  auto& copy_of = plan->partitions.copy_of;
  for (Partitions::Part& part : plan->partitions.parts) {
    std::set<Output> fetched;
    for (const Output& f : fetches) {
      auto it = copy_of.find(f.node);
      auto where = plan->placement.device.find(f.node);
      if (it != copy_of.end() && where != plan->placement.device.end() &&
          where->second == part.device)
        fetched.insert(Output(it->second, f.index));
    }
    for (const Fusion& f : Remap(&part, fetched, &copy_of)) {
      if (log) PF_LOG_INFO("{}", FusionLogLine(f, part.device->name()));
    }
  }
}

}  // namespace

std::vector<int> StepPlan::FetchesOn(const Partitions::Part& part,
                                     const std::vector<Output>& fetches) const {
  std::vector<int> out;
  for (size_t i = 0; i < fetches.size(); ++i) {
    if (fetch_from_feed[i] < 0 && placement.device.at(fetches[i].node) == part.device)
      out.push_back(static_cast<int>(i));
  }
  return out;
}

StatusOr<StepPlan> PlanSignature(const std::vector<Output>& feeds,
                                 const std::vector<Output>& fetches,
                                 const std::vector<Operation>& targets, const DeviceSet& devices,
                                 const PlanOptions& options,
                                 std::map<std::string, std::string>* logged) {
  StepPlan plan;
  for (size_t i = 0; i < feeds.size(); ++i) plan.feed_index[feeds[i]] = static_cast<int>(i);
  for (const Output& f : fetches) {
    auto it = plan.feed_index.find(f);
    plan.fetch_from_feed.push_back(it == plan.feed_index.end() ? -1 : it->second);
  }
  plan.nodes = Prune(feeds, fetches, targets);
  PF_RETURN_IF_ERROR(CheckCollectivesComplete(plan.nodes));
  // The placer reports fallbacks and its first error in the order it is given: graph order.
  std::vector<Node*> in_graph_order = plan.nodes;
  std::sort(in_graph_order.begin(), in_graph_order.end(),
            [](const Node* a, const Node* b) { return a->id() < b->id(); });
  PF_ASSIGN_OR_RETURN(plan.placement, Place(in_graph_order, devices, options.placer));
  const std::set<Output> fed(feeds.begin(), feeds.end());
  PF_ASSIGN_OR_RETURN(plan.partitions, Partition(plan.nodes, plan.placement.device, fed));
  if (options.after_partition)
    PF_RETURN_IF_ERROR(options.after_partition(plan.nodes, plan.placement, &plan.partitions));
  if (options.log_device_placement) {
    EmitPlacementLog(
        PlacementLogText(plan.nodes, plan.placement, plan.partitions.send_recv_pairs, *logged));
  }
  for (const auto& [n, d] : plan.placement.device) (*logged)[n->name()] = d->name();
  if (options.remap) RemapPartitions(fetches, options.log_device_placement, &plan);
  return plan;
}

StatusOr<OpKernel*> KernelCache::Get(const Node& node, Device* device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = kernels_[{node.name(), node.op(), device}];
  if (!slot) {
    PF_ASSIGN_OR_RETURN(slot, KernelRegistry::Global()->Create(node, device->device_type()));
  }
  return slot.get();
}

}  // namespace pf
