#include "placeflow/executor/session.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <unordered_set>

#include "placeflow/core/logging.h"
#include "placeflow/devices/copy_registry.h"
#include "placeflow/devices/device_factory.h"
#include "placeflow/executor/auto_placement.h"
#include "placeflow/executor/executor.h"
#include "placeflow/executor/frames.h"
#include "placeflow/executor/mixed_precision.h"
#include "placeflow/executor/prepared_step.h"
#include "placeflow/executor/remapper.h"
#include "placeflow/executor/subgraph.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/placer/partition.h"
#include "placeflow/placer/placer.h"

namespace pf {

// One prepared signature: the partitions of its pruned, placed subgraph and their executors.
struct Session::Prepared {
  struct Part : PreparedPart {
    std::vector<int> feeds;    // session feed index for each executor feed
    std::vector<int> fetches;  // session fetch index for each executor fetch
  };
  Partitions partitions;  // owns the partition graphs the executors run
  std::vector<Part> parts;
  std::vector<const PreparedPart*> part_list;  // parts, for the shared step functions
  std::vector<int> fetch_from_feed;            // per session fetch: the feed that answers it, or -1
};

namespace {

std::mutex& BackendMu() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, SessionBackendFactory>& Backends() {
  static auto* backends = new std::map<std::string, SessionBackendFactory>();
  return *backends;
}

}  // namespace

void RegisterSessionBackend(const std::string& scheme, SessionBackendFactory factory) {
  std::lock_guard<std::mutex> lock(BackendMu());
  Backends()[scheme] = std::move(factory);
}

Session::Session(Graph& graph, SessionOptions options)
    : graph_(graph),
      options_(std::move(options)),
      cache_(options_.max_cached_signatures),
      kernels_(std::make_unique<KernelCache>()) {
  if (options_.placement != "rules" && options_.placement != "auto") {
    throw Error(errors::InvalidArgument(
        "SessionOptions::placement must be \"rules\" or \"auto\", not '", options_.placement, "'"));
  }
  if (!options_.target.empty()) {
    SessionBackendFactory factory;
    bool has_grpc = false;
    {
      std::lock_guard<std::mutex> lock(BackendMu());
      for (const auto& [scheme, f] : Backends()) {
        if (options_.target.rfind(scheme, 0) == 0) factory = f;
      }
      has_grpc = Backends().count("grpc://") > 0;
    }
    if (options_.cpu_device_threads != 0 || !options_.device_memory.empty()) {
      throw Error(errors::InvalidArgument(
          "SessionOptions::cpu_device_threads and device_memory apply to in-process sessions "
          "(target \"\"), not to '",
          options_.target, "'"));
    }
    if (!factory) {
      throw Error(errors::InvalidArgument(
          "Session target '", options_.target,
          "' is not supported: use \"\" (this process) or \"grpc://host:port\" in a placeflow "
          "built with the cluster runtime (PF_WITH_GRPC; this build has it: ",
          has_grpc ? "yes" : "no", ")"));
    }
    if (options_.placement == "auto") {
      throw Error(errors::Unimplemented(
          "Automatic placement (SessionOptions::placement = \"auto\") runs in-process sessions; "
          "a cluster session's master places with the rules"));
    }
    backend_ = factory(graph_, options_).ValueOrThrow();
    pool_ = ThreadPool::Default();
    return;
  }
  if (options_.num_threads > 0) own_pool_ = std::make_unique<ThreadPool>(options_.num_threads - 1);
  pool_ = own_pool_ ? own_pool_.get() : ThreadPool::Default();
  CreateDevices();
  if (options_.log_device_placement) LogDeviceMapping(devices_);
  if (options_.placement == "auto") {
    // Devices sharing the session's pool get an equal share of it in the cost model.
    int cpus = 0;
    for (const Device* d : devices_.devices()) cpus += d->device_type() == kDeviceCpu;
    const int shared =
        options_.num_threads > 0 ? options_.num_threads : ThreadPool::Default()->num_threads() + 1;
    const int threads = options_.cpu_device_threads > 0 ? options_.cpu_device_threads
                                                        : std::max(1, shared / std::max(1, cpus));
    automatic_ = MakeAutomaticPlacement(options_.placement_options, devices_, threads,
                                        options_.device_memory)
                     .ValueOrThrow();
  }
}

Session::~Session() = default;

void Session::CreateDevices() {
  LocalDeviceOptions local;
  if (auto it = options_.device_count.find("CPU"); it != options_.device_count.end())
    local.cpu_devices = it->second;
  local.pool = pool_;
  local.gpu = options_.gpu_options;
  if (!options_.visible_device_list.empty())
    local.gpu.visible_device_list = options_.visible_device_list;
  if (!options_.gpu_logical_devices.empty())
    local.gpu.logical_devices_memory_mb = options_.gpu_logical_devices;
  if (auto it = options_.device_count.find("GPU"); it != options_.device_count.end())
    local.gpu.max_count = it->second;
  if (options_.cpu_device_threads < 0) {
    throw Error(errors::InvalidArgument("SessionOptions::cpu_device_threads is ",
                                        options_.cpu_device_threads,
                                        ": give a positive count, or 0 to share num_threads"));
  }
  for (int i = 0; i < std::max(1, local.cpu_devices); ++i) {
    if (options_.cpu_device_threads > 0) {
      cpu_pools_.push_back(std::make_unique<ThreadPool>(options_.cpu_device_threads));
      local.cpu_pools.push_back(cpu_pools_.back().get());
    }
    if (!options_.device_memory.empty()) {
      cpu_memory_.push_back(TrackingAllocator::Create(
          CpuAllocator(), DeviceName::FullName("localhost", 0, 0, kDeviceCpu, i)));
      local.cpu_allocators.push_back(cpu_memory_.back().get());
    }
  }
  for (auto& d : CreateLocalDevices(local).ValueOrThrow()) devices_.Add(std::move(d));
  ThrowIfError(ApplyMemoryLimits());
}

namespace {

// The CPU device a SessionOptions::device_memory entry names: "cpu:1", "/CPU:1",
// "/device:cpu:1", a full name.
StatusOr<Device*> MemoryLimitDevice(const DeviceSet& devices, const std::string& name) {
  std::string text = !name.empty() && name[0] == '/' ? name : "/" + name;
  DeviceName spec;
  bool parsed = DeviceName::Parse(text, &spec);
  if (!parsed) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    parsed = DeviceName::Parse(text, &spec);
  }
  std::transform(spec.type.begin(), spec.type.end(), spec.type.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  std::vector<Device*> found;
  if (parsed && !spec.IsEmpty()) found = devices.Matching(spec);
  if (found.size() == 1 && found[0]->device_type() == kDeviceCpu) return found[0];
  const std::string why = !parsed         ? "which is not a device name"
                          : found.empty() ? "which is no device of this session"
                          : found.size() > 1
                              ? fmt::format("which matches {} devices", found.size())
                              : "which is not a CPU device (gpu_options and gpu_logical_devices "
                                "set a GPU's memory)";
  return errors::InvalidArgument("SessionOptions::device_memory names '", name, "', ", why,
                                 "; this session's devices: ", devices.NamesForError());
}

}  // namespace

Status Session::ApplyMemoryLimits() {
  for (const auto& [name, bytes] : options_.device_memory) {
    PF_ASSIGN_OR_RETURN(Device * device, MemoryLimitDevice(devices_, name));
    if (bytes < 0) {
      return errors::InvalidArgument("SessionOptions::device_memory gives '", name, "' ", bytes,
                                     " bytes: a limit is positive (0: no limit, only measured)");
    }
    cpu_memory_.at(device->parsed_name().id)->set_limit(bytes);
  }
  return Status::OK();
}

std::pair<ThreadPool*, bool> Session::PoolFor(const Device* device) const {
  const int id = device->parsed_name().id;
  if (device->device_type() == kDeviceCpu && id >= 0 && id < static_cast<int>(cpu_pools_.size()))
    return {cpu_pools_[id].get(), true};
  return {pool_, false};
}

std::map<std::string, AllocatorStats> Session::DeviceMemoryStats() const {
  std::map<std::string, AllocatorStats> stats;
  for (const TrackingAllocator::Ptr& a : cpu_memory_) stats[a->device()] = a->Stats();
  return stats;
}

void Session::ResetPeakMemory() {
  for (const TrackingAllocator::Ptr& a : cpu_memory_) a->ResetPeak();
}

size_t Session::num_cached_signatures() const {
  if (backend_) return backend_->num_cached_signatures();
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

int64_t Session::num_evicted_signatures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.evicted();
}

std::vector<PlacementPrediction> Session::PlacementPredictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return predictions_;
}

std::map<std::string, std::string> Session::DevicePlacement() const {
  if (backend_) return backend_->DevicePlacement();
  std::lock_guard<std::mutex> lock(mu_);
  return placement_;
}

namespace {

Status CheckInGraph(const Graph& g, const Node* n, std::string_view what) {
  if (n == nullptr || g.FindNode(n->name()) != n) {
    return errors::InvalidArgument(what, " '", n ? n->name() : std::string("<null>"),
                                   "' is not an element of this graph.");
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::shared_ptr<const Session::Prepared>> Session::Prepare(
    const FeedDict& feeds, const std::vector<Output>& fetches,
    const std::vector<Operation>& targets) {
  const std::string key = SignatureKey(feeds, fetches, targets);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto hit = cache_.Find(key)) return hit;

  std::vector<Output> feed_outputs;
  for (const auto& [o, t] : feeds) feed_outputs.push_back(o);
  PlanOptions popts;
  popts.placer.allow_soft_placement = options_.allow_soft_placement;
  popts.placer.strict_placement = options_.strict_placement;
  popts.remap = RemappingEnabled(options_.rewrite_options.remapping);
  PF_ASSIGN_OR_RETURN(popts.mixed_precision,
                      MixedPrecisionType(options_.rewrite_options.auto_mixed_precision));
  popts.log_device_placement = options_.log_device_placement;
  if (automatic_) {
    PlanWholeGraph(graph_, devices_, popts.placer, automatic_.get());
    popts.placer.automatic = automatic_.get();
  }
  PF_ASSIGN_OR_RETURN(StepPlan plan,
                      PlanSignature(feed_outputs, fetches, targets, devices_, popts, &placement_));
  if (automatic_) {
    for (const auto& [n, d] : plan.placement.device) automatic_->planned[n->name()] = d->name();
    const Placement& p = plan.placement;
    std::string signature;
    for (const Output& f : fetches)
      signature += (signature.empty() ? "" : ",") + f.node->name() + ":" + std::to_string(f.index);
    for (const Operation& t : targets)
      signature += (signature.empty() ? "^" : ",^") + t.node->name();
    predictions_.push_back(
        {signature, p.algorithm, p.predicted_step_us, p.predicted_peak_bytes, p.planning_ms});
  }
  auto prepared = std::make_shared<Prepared>();
  prepared->fetch_from_feed = plan.fetch_from_feed;
  prepared->partitions = std::move(plan.partitions);
  const bool dead_tensors = HasControlFlow(plan.nodes);
  for (Partitions::Part& part : prepared->partitions.parts) {
    ExecutorSpec es;
    es.nodes = part.nodes;
    es.dead_tensors = dead_tensors;
    std::tie(es.pool, es.own_pool) = PoolFor(part.device);
    es.devices = &devices_;
    std::vector<int> feed_ids;
    for (const auto& [user, arg] : part.args) {
      es.feeds.push_back(arg);
      feed_ids.push_back(plan.feed_index.at(user));
    }
    std::vector<int> fetch_ids = plan.FetchesOn(part, fetches);
    std::vector<PreparedPart::Variable> variables;
    for (int i : fetch_ids) {
      es.fetches.emplace_back(prepared->partitions.copy_of.at(fetches[i].node), fetches[i].index);
      const Node* var = AliasedVariable(fetches[i]);
      auto where = var ? plan.placement.device.find(var) : plan.placement.device.end();
      variables.push_back(where == plan.placement.device.end()
                              ? PreparedPart::Variable{}
                              : PreparedPart::Variable{where->second, var->name()});
    }
    Prepared::Part p;
    PF_ASSIGN_OR_RETURN(static_cast<PreparedPart&>(p),
                        PreparePart(std::move(es), part.device, kernels_.get(), variables));
    p.feeds = std::move(feed_ids);
    p.fetches = std::move(fetch_ids);
    prepared->parts.push_back(std::move(p));
  }
  for (const Prepared::Part& p : prepared->parts) prepared->part_list.push_back(&p);
  cache_.Insert(key, prepared);  // an evicted signature a step still runs stays alive there
  return std::shared_ptr<const Prepared>(prepared);
}

Status Session::TryRun(const FeedDict& feeds, const std::vector<Output>& fetches,
                       const std::vector<Operation>& targets, std::vector<Tensor>* outputs,
                       const RunOptions& run_options, RunMetadata* metadata) {
  PF_RETURN_IF_ERROR(CheckFeeds(feeds));
  PF_RETURN_IF_ERROR(CheckFetchesAndTargets(fetches, targets));
  if (backend_) return backend_->Run(feeds, fetches, targets, outputs, run_options, metadata);
  PF_ASSIGN_OR_RETURN(auto prepared, Prepare(feeds, fetches, targets));
  StepGroup group(run_options.trace ? metadata : nullptr);
  if (group.stats()) {
    group.stats()->step_stats.clear();
    group.stats()->session_phases.clear();
  }
  group.SetTimeout(run_options.timeout_in_ms);
  auto phase = [&group, t0 = group.start()](const char* what) {
    if (group.stats() == nullptr) return;
    auto us = [t0](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration_cast<std::chrono::microseconds>(t - t0).count();
    };
    auto& phases = group.stats()->session_phases;
    const int64_t start = phases.empty() ? 0 : phases.back().end_us;
    phases.push_back({.node = what,
                      .op = "_SessionPhase",
                      .device = "session",
                      .start_us = start,
                      .end_us = us(std::chrono::steady_clock::now())});
  };
  PF_ASSIGN_OR_RETURN(PartTensors part_feeds, StageFeeds(*prepared, feeds));
  phase("stage feeds");
  PartTensors part_fetches(prepared->parts.size());
  RunPartitions(*prepared, part_feeds, &part_fetches, &group);
  phase("run executors");
  Status synced = SyncDevices(*prepared);
  phase("wait for devices");
  PF_RETURN_IF_ERROR(group.status());
  PF_RETURN_IF_ERROR(synced);
  Status collected = CollectFetches(*prepared, feeds, &part_fetches, outputs);
  phase("copy fetches");
  return collected;
}

Status Session::CheckFeeds(const FeedDict& feeds) const {
  for (size_t i = 0; i < feeds.size(); ++i) {
    const auto& [o, t] = feeds[i];
    PF_RETURN_IF_ERROR(CheckInGraph(graph_, o.node, "Feed tensor"));
    if (o.index < 0 || o.index >= o.node->num_outputs()) {
      return errors::InvalidArgument("Feed tensor '", o.name(), "' does not exist: node '",
                                     o.node->name(), "' has ", o.node->num_outputs(), " outputs");
    }
    for (size_t j = 0; j < i; ++j) {
      if (feeds[j].first == o)
        return errors::InvalidArgument("Tensor '", o.name(), "' is fed more than once");
    }
    if (t.dtype() != o.dtype()) {
      return errors::InvalidArgument("Cannot feed value of dtype ", DTypeName(t.dtype()),
                                     " for Tensor '", o.name(), "' with dtype ",
                                     DTypeName(o.dtype()));
    }
    if (!t.IsInitialized())
      return errors::InvalidArgument("Cannot feed an uninitialized tensor to '", o.name(), "'");
    if (!t.shape().IsCompatibleWith(o.shape())) {
      return errors::InvalidArgument("Cannot feed value of shape ", t.shape().ToString(),
                                     " for Tensor '", o.name(), "', which has shape '",
                                     o.shape().ToString(), "'");
    }
  }
  return Status::OK();
}

Status Session::CheckFetchesAndTargets(const std::vector<Output>& fetches,
                                       const std::vector<Operation>& targets) const {
  for (const Output& f : fetches) {
    PF_RETURN_IF_ERROR(CheckInGraph(graph_, f.node, "Fetch argument"));
    if (f.index < 0 || f.index >= f.node->num_outputs()) {
      return errors::InvalidArgument("Fetch argument '", f.name(), "' does not exist: node '",
                                     f.node->name(), "' (", f.node->op(), ") has ",
                                     f.node->num_outputs(), " outputs");
    }
  }
  for (const Operation& t : targets)
    PF_RETURN_IF_ERROR(CheckInGraph(graph_, t.node, "Target operation"));
  return Status::OK();
}

StatusOr<Session::PartTensors> Session::StageFeeds(const Prepared& prepared,
                                                   const FeedDict& feeds) {
  PartTensors part_feeds(prepared.parts.size());
  for (size_t i = 0; i < prepared.parts.size(); ++i) {
    const Prepared::Part& part = prepared.parts[i];
    for (size_t k = 0; k < part.feeds.size(); ++k) {
      PF_ASSIGN_OR_RETURN(Tensor t, StagedFeed(part, static_cast<int>(k),
                                               feeds[part.feeds[k]].second, devices_.host()));
      part_feeds[i].push_back(std::move(t));
    }
  }
  return part_feeds;
}

void Session::RunPartitions(const Prepared& prepared, const PartTensors& feeds,
                            PartTensors* fetches, StepGroup* group) {
  // Waits helping the pool. The count drops under the lock: the waiter checks it holding the
  // lock, so it cannot return (and destroy mu and cv) while `done` still uses them.
  struct Wait {
    std::atomic<int> remaining{1};
    std::mutex mu;
    std::condition_variable cv;
  } wait;
  // One pointer captured: the callback fits std::function's inline storage (no allocation).
  RunPartitionsAsync(prepared.part_list, feeds, fetches, next_step_id_.fetch_add(1), group, pool_,
                     [w = &wait] {
                       std::lock_guard<std::mutex> lock(w->mu);
                       w->remaining.fetch_sub(1, std::memory_order_acq_rel);
                       w->cv.notify_all();
                     });
  Executor::WaitHelping(pool_, &wait.remaining, &wait.mu, &wait.cv);
  if (group->stats()) {
    group->stats()->step_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::steady_clock::now() - group->start())
                                  .count();
  }
}

Status Session::SyncDevices(const Prepared& prepared) {
  return pf::SyncDevices(prepared.part_list);
}

Status Session::CollectFetches(const Prepared& prepared, const FeedDict& feeds,
                               PartTensors* part_fetches, std::vector<Tensor>* outputs) {
  outputs->assign(prepared.fetch_from_feed.size(), Tensor());
  for (size_t i = 0; i < prepared.parts.size(); ++i) {
    const Prepared::Part& part = prepared.parts[i];
    for (size_t k = 0; k < part.fetches.size(); ++k) {
      PF_ASSIGN_OR_RETURN((*outputs)[part.fetches[k]],
                          FetchedValue(std::move((*part_fetches)[i][k]), part, static_cast<int>(k),
                                       devices_.host()));
    }
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    if (prepared.fetch_from_feed[i] >= 0) (*outputs)[i] = feeds[prepared.fetch_from_feed[i]].second;
  }
  return Status::OK();
}

std::vector<Tensor> Session::Run(const FeedDict& feeds, const std::vector<Output>& fetches,
                                 const std::vector<Operation>& targets) {
  std::vector<Tensor> out;
  ThrowIfError(TryRun(feeds, fetches, targets, &out));
  return out;
}

std::vector<Tensor> Session::Run(const FeedDict& feeds, std::initializer_list<Fetch> fetches) {
  std::vector<Output> outputs;
  std::vector<Operation> targets;
  for (const Fetch& f : fetches) {
    if (f.target.node != nullptr) {
      targets.push_back(f.target);
    } else {
      outputs.push_back(f.output);
    }
  }
  std::vector<Tensor> values = Run(feeds, outputs, targets), out;
  size_t next = 0;
  for (const Fetch& f : fetches)
    out.push_back(f.target.node != nullptr ? Tensor() : values[next++]);
  return out;
}

std::vector<Tensor> Session::Run(const RunOptions& run_options, const FeedDict& feeds,
                                 const std::vector<Output>& fetches,
                                 const std::vector<Operation>& targets, RunMetadata* metadata) {
  std::vector<Tensor> out;
  ThrowIfError(TryRun(feeds, fetches, targets, &out, run_options, metadata));
  return out;
}

StatusOr<Output> Session::ResolveTensorName(const std::string& name) const {
  PF_ASSIGN_OR_RETURN(TensorName t, ParseTensorName(name));
  const std::string& node_name = t.node;
  const int index = t.index;
  Node* n = graph_.FindNode(node_name);
  if (n == nullptr) {
    return errors::NotFound("The name '", name,
                            "' refers to a Tensor which does not exist. The operation, '",
                            node_name, "', does not exist in the graph.");
  }
  if (index < 0 || index >= n->num_outputs()) {
    return errors::NotFound("The name '", name,
                            "' refers to a Tensor which does not exist. The operation, '",
                            node_name, "', exists but only has ", n->num_outputs(), " outputs.");
  }
  return Output(n, index);
}

std::vector<Tensor> Session::RunNamed(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                      const std::vector<std::string>& fetches,
                                      const std::vector<std::string>& targets) {
  FeedDict feed_dict;
  for (const auto& [name, t] : feeds)
    feed_dict.emplace_back(ResolveTensorName(name).ValueOrThrow(), t);
  std::vector<Output> fetch_outputs;
  for (const std::string& name : fetches)
    fetch_outputs.push_back(ResolveTensorName(name).ValueOrThrow());
  std::vector<Operation> ops;
  for (const std::string& name : targets) {
    Node* n = graph_.FindNode(name);
    if (n == nullptr)
      throw Error(errors::NotFound("The operation '", name, "' does not exist in the graph."));
    ops.emplace_back(n);
  }
  return Run(feed_dict, fetch_outputs, ops);
}

}  // namespace pf
