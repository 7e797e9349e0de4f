// The step pipeline every kind of session shares: plan a signature (prune -> place -> partition
// -> remap) once, build each partition's executor with kernels from one cache, and per step:
// stage the feeds, run the partitions, sync their devices, hand out the fetches. The in-process
// Session does all of it; the cluster master plans and ships the partitions to the tasks, whose
// workers do the rest with the same functions.
//
//   PF_ASSIGN_OR_RETURN(pf::StepPlan plan,
//                       pf::PlanSignature(feeds, fetches, targets, devices, plan_options));
//   pf::KernelCache kernels;   // lives as long as the session (or the worker's graph)
//   PF_ASSIGN_OR_RETURN(pf::PreparedPart part, pf::PreparePart(spec, &kernels));  // per part
//   pf::RunPartitionsAsync(parts, feeds, &fetches, step_id, &group, pool, done);
//   PF_ASSIGN_OR_RETURN(pf::Tensor out, pf::FetchedValue(fetches[0][0], part, 0, host));
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "placeflow/devices/device_set.h"
#include "placeflow/executor/executor.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/placer/partition.h"
#include "placeflow/placer/placer.h"

namespace pf {

struct PlanOptions {
  PlacerOptions placer;
  bool remap = true;  // run the remapper (callers pass RemappingEnabled(their option))
  // DT_HALF or DT_BFLOAT16: run AutoMixedPrecision on every partition before the remapper
  // (callers pass MixedPrecisionType(their option)).
  DType mixed_precision = DT_INVALID;
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

// Prune, check collectives, place, partition, [after_partition], log, [mixed precision], remap.
// `logged` holds the nodes already in the placement log (node name -> device); new placements are
// added to it.
StatusOr<StepPlan> PlanSignature(const std::vector<Output>& feeds,
                                 const std::vector<Output>& fetches,
                                 const std::vector<Operation>& targets, const DeviceSet& devices,
                                 const PlanOptions& options,
                                 std::map<std::string, std::string>* logged);

// Kernels by (node name, op, type attr T, device): partitions copy nodes under their user-graph
// names, a stateful kernel (a random op) keeps its state across signatures, and a fused node
// that took the name of a node it replaced (the remapper's rule) or a node the mixed-precision
// rewrite converted in one signature and not in another gets a kernel of its own. Thread-safe.
class KernelCache {
 public:
  StatusOr<OpKernel*> Get(const Node& node, Device* device);

 private:
  std::mutex mu_;
  std::map<std::tuple<std::string, std::string, DType, const Device*>, std::unique_ptr<OpKernel>>
      kernels_;
};

// One partition, ready to run: its executor and how its feeds come in and its fetches go out.
struct PreparedPart {
  Device* device = nullptr;
  std::unique_ptr<Executor> executor;
  std::vector<bool> feed_on_host;  // per executor feed: used in host memory (FeedStaysOnHost)
  // Per executor fetch: the variable it may be a view of ({nullptr, ""} when none, or when the
  // variable lives in another task: what arrives from there is a copy).
  struct Variable {
    Device* device = nullptr;
    std::string name;
  };
  std::vector<Variable> fetch_variable;
};

// Builds a partition's executor with kernels from `kernels` (which must outlive it). `spec`
// holds the partition's nodes, all on `device`; its feeds are the partition's _Arg outputs.
// `fetch_variable` is as in PreparedPart (empty: none may view a variable).
StatusOr<PreparedPart> PreparePart(ExecutorSpec spec, Device* device, KernelCache* kernels,
                                   std::vector<PreparedPart::Variable> fetch_variable = {});

// A feed as its partition's executor takes it: host values are copied onto a device with its
// own memory (asynchronously, ordered before the step's kernels on its compute stream).
StatusOr<Tensor> StagedFeed(const PreparedPart& part, int k, const Tensor& value, Device* host);

using PartTensors = std::vector<std::vector<Tensor>>;  // per partition, in its executor's order

// Starts every partition's executor within `group`: the first on this thread, the others on
// `pool` (an executor runs cheap nodes inline and hands expensive ones to the pool, so a long
// step does not hold the caller's thread; an executor with a pool of its own,
// ExecutorSpec::own_pool, starts on that pool instead). They meet through the group's rendezvous,
// and the first error anywhere aborts the others. `done` runs once, on some thread, when all
// finished. `feeds` and `fetches` must live until then.
void RunPartitionsAsync(const std::vector<const PreparedPart*>& parts, const PartTensors& feeds,
                        PartTensors* fetches, int64_t step_id, StepGroup* group, ThreadPool* pool,
                        std::function<void()> done);

// A step ends when the streams of its devices are done: asynchronous GPU errors show here. The
// first error, naming the device.
Status SyncDevices(const std::vector<const PreparedPart*>& parts);

// Fetch `k` of `part` as the caller gets it: in host memory, and a snapshot, as in TensorFlow:
// never a view of a variable that a later step updates in place. The copy holds the variable's
// lock, which its updates (Assign*, Apply*) take too, so a step training concurrently cannot
// tear it.
StatusOr<Tensor> FetchedValue(Tensor t, const PreparedPart& part, int k, Device* host);

}  // namespace pf
