// The step pipeline every kind of session shares: plan a signature (prune -> place -> partition
// -> remap) once, build each partition's executor with kernels from one cache. The in-process
// Session runs the partitions itself; the cluster master plans and ships the partitions to the
// tasks, whose workers build the executors with the same KernelCache.
//
//   PF_ASSIGN_OR_RETURN(pf::StepPlan plan,
//                       pf::PlanSignature(feeds, fetches, targets, devices, plan_options));
//   for (pf::Partitions::Part& part : plan.partitions.parts) ...  // one executor per part
//   pf::KernelCache kernels;   // lives as long as the session (or the worker's graph)
//   auto k = kernels.Get(node, device);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "placeflow/devices/device_set.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/placer/partition.h"
#include "placeflow/placer/placer.h"

namespace pf {

struct PlanOptions {
  PlacerOptions placer;
  bool remap = true;  // run the remapper (callers pass RemappingEnabled(their option))
  bool log_device_placement = false;
  // Runs after partitioning, before the placement log and the remapper (the master annotates
  // collectives that cross tasks here). Optional.
  std::function<Status(const std::vector<Node*>& nodes, const Placement&, Partitions*)>
      after_partition;
};

// A planned signature: what each device runs, with the fetches mapped onto the partitions.
struct StepPlan {
  std::vector<Node*> nodes;  // the pruned graph
  Placement placement;
  Partitions partitions;             // remapped when PlanOptions::remap
  std::map<Output, int> feed_index;  // fed tensor -> its place in the call's feeds
  std::vector<int> fetch_from_feed;  // per fetch: the feed it returns, or -1
  // The indices (in the call's fetch list) of the fetches computed on `part`, not fed.
  std::vector<int> FetchesOn(const Partitions::Part& part,
                             const std::vector<Output>& fetches) const;
};

// Prune, check collectives, place, partition, [after_partition], log, remap. `logged` holds the
// nodes already in the placement log (node name -> device); new placements are added to it.
StatusOr<StepPlan> PlanSignature(const std::vector<Output>& feeds,
                                 const std::vector<Output>& fetches,
                                 const std::vector<Operation>& targets, const DeviceSet& devices,
                                 const PlanOptions& options,
                                 std::map<std::string, std::string>* logged);

// Kernels by (node name, op, device): partitions copy nodes under their user-graph names, a
// stateful kernel (a random op) keeps its state across signatures, and a fused node that took
// the name of a node it replaced (the remapper's rule) gets a kernel of its own. Thread-safe.
class KernelCache {
 public:
  StatusOr<OpKernel*> Get(const Node& node, Device* device);

 private:
  std::mutex mu_;
  std::map<std::tuple<std::string, std::string, const Device*>, std::unique_ptr<OpKernel>> kernels_;
};

}  // namespace pf
