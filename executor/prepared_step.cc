#include "placeflow/executor/prepared_step.h"

#include <algorithm>
#include <set>

#include "placeflow/core/logging.h"
#include "placeflow/devices/copy_registry.h"
#include "placeflow/executor/mixed_precision.h"
#include "placeflow/executor/remapper.h"
#include "placeflow/executor/subgraph.h"

namespace pf {
namespace {

// The outputs of `part`'s nodes that the caller fetches.
std::set<Output> FetchedFrom(const Partitions::Part& part, const std::vector<Output>& fetches,
                             const StepPlan& plan) {
  std::set<Output> fetched;
  for (const Output& f : fetches) {
    auto it = plan.partitions.copy_of.find(f.node);
    auto where = plan.placement.device.find(f.node);
    if (it != plan.partitions.copy_of.end() && where != plan.placement.device.end() &&
        where->second == part.device)
      fetched.insert(Output(it->second, f.index));
  }
  return fetched;
}

// The mixed-precision rewrite on every partition: fetched outputs stay float32.
void MixedPrecisionPartitions(const std::vector<Output>& fetches, DType target, bool log,
                              StepPlan* plan) {
  for (Partitions::Part& part : plan->partitions.parts) {
    MixedPrecisionReport r = AutoMixedPrecision(&part, target, FetchedFrom(part, fetches, *plan));
    if (log && !r.converted.empty())
      PF_LOG_INFO("{}", MixedPrecisionLogLine(r, target, part.device->name()));
  }
}

// The remapper on every partition: a fetched output is never absorbed into a fusion.
void RemapPartitions(const std::vector<Output>& fetches, bool log, StepPlan* plan) {
  for (Partitions::Part& part : plan->partitions.parts) {
    const std::set<Output> fetched = FetchedFrom(part, fetches, *plan);
    for (const Fusion& f : Remap(&part, fetched, &plan->partitions.copy_of)) {
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
  if (options.mixed_precision != DT_INVALID)
    MixedPrecisionPartitions(fetches, options.mixed_precision, options.log_device_placement, &plan);
  if (options.remap) RemapPartitions(fetches, options.log_device_placement, &plan);
  return plan;
}

StatusOr<OpKernel*> KernelCache::Get(const Node& node, Device* device) {
  std::lock_guard<std::mutex> lock(mu_);
  const DType t = node.HasAttr("T") ? node.attr<DType>("T") : DT_INVALID;
  auto& slot = kernels_[{node.name(), node.op(), t, device}];
  if (!slot) {
    PF_ASSIGN_OR_RETURN(slot, KernelRegistry::Global()->Create(node, device->device_type()));
  }
  return slot.get();
}

StatusOr<PreparedPart> PreparePart(ExecutorSpec spec, Device* device, KernelCache* kernels,
                                   std::vector<PreparedPart::Variable> fetch_variable) {
  PreparedPart part;
  part.device = device;
  for (const Node* n : spec.nodes) spec.device[n] = device;
  for (const Output& arg : spec.feeds)
    part.feed_on_host.push_back(FeedStaysOnHost(*arg.node, *device));
  fetch_variable.resize(spec.fetches.size());
  part.fetch_variable = std::move(fetch_variable);
  auto source = [kernels](const Node& n, Device* d) { return kernels->Get(n, d); };
  PF_ASSIGN_OR_RETURN(part.executor, Executor::Create(spec, source));
  return part;
}

StatusOr<Tensor> StagedFeed(const PreparedPart& part, int k, const Tensor& value, Device* host) {
  if (part.feed_on_host[k]) return value;
  return CopyRegistry::Global()->Copy(value, host, part.device);
}

void RunPartitionsAsync(const std::vector<const PreparedPart*>& parts, const PartTensors& feeds,
                        PartTensors* fetches, int64_t step_id, StepGroup* group, ThreadPool* pool,
                        std::function<void()> done) {
  if (parts.empty()) return done();
  if (parts.size() == 1) {  // the common case: nothing to count
    return parts[0]->executor->RunAsync(feeds[0], &(*fetches)[0], step_id, group, std::move(done));
  }
  struct Countdown {
    std::atomic<int> remaining;
    std::function<void()> done;
  };
  auto countdown = std::make_shared<Countdown>();
  countdown->remaining = static_cast<int>(parts.size());
  countdown->done = std::move(done);
  auto finished = [countdown] {
    if (countdown->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) countdown->done();
  };
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i]->executor->own_pool()) {  // starts on its device's own threads
      parts[i]->executor->RunAsync(feeds[i], &(*fetches)[i], step_id, group, finished);
      continue;
    }
    pool->Schedule([part = parts[i], feed = &feeds[i], out = &(*fetches)[i], step_id, group,
                    finished] { part->executor->RunAsync(*feed, out, step_id, group, finished); });
  }
  parts[0]->executor->RunAsync(feeds[0], &(*fetches)[0], step_id, group, finished);
}

Status SyncDevices(const std::vector<const PreparedPart*>& parts) {
  Status synced = Status::OK();
  for (const PreparedPart* part : parts) {
    Status s = part->device->Sync();
    if (synced.ok() && !s.ok()) {
      synced =
          s.WithSuffix(fmt::format("\n\t (while finishing the step on {})", part->device->name()));
    }
  }
  return synced;
}

StatusOr<Tensor> FetchedValue(Tensor t, const PreparedPart& part, int k, Device* host) {
  if (!t.IsInitialized()) return t;
  if (!t.InHostMemory()) return CopyRegistry::Global()->Copy(t, part.device, host);  // a copy
  const PreparedPart::Variable& v = part.fetch_variable[k];
  if (v.device == nullptr) return t;
  VarState* var = v.device->resource_mgr()->LookupVar(v.name);
  std::unique_lock<std::mutex> lock;
  if (var != nullptr) lock = std::unique_lock<std::mutex>(var->mu);
  return t.Clone();
}

}  // namespace pf
