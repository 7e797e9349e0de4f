// The client side of a cluster session (Session with target "grpc://host:port"): the master
// runs in the client process. It asks the target's master service for the cluster's devices,
// places and partitions each signature with the same placer and partitioner as one process,
// registers every task's partitions on that task once, and runs a step by asking every task
// to run its partitions under one step id. The first error aborts the step on every task.
#include <fmt/ranges.h>
#include <grpcpp/generic/generic_stub.h>

#include <atomic>
#include <condition_variable>
#include <random>

#include "placeflow/core/logging.h"
#include "placeflow/distributed/coding.h"
#include "placeflow/distributed/rpc.grpc.pb.h"
#include "placeflow/distributed/rpc_util.h"
#include "placeflow/executor/frames.h"
#include "placeflow/executor/mixed_precision.h"
#include "placeflow/executor/prepared_step.h"
#include "placeflow/executor/remapper.h"
#include "placeflow/executor/subgraph.h"
#include "placeflow/graph/graph_def.h"
#include "placeflow/io/proto/graph.pb.h"
#include "placeflow/placer/partition.h"

namespace pf {
namespace {

// A device of another process: what the placer and partitioner need (name, type, priority,
// memory kind, its task's incarnation); kernels never run on it here.
class RemoteDevice final : public Device {
 public:
  RemoteDevice(const DeviceName& n, const rpc::DeviceProto& p)
      : Device(n.type, n.id, n.job, n.replica, n.task), proto_(p), incarnation_(p.incarnation()) {}
  Allocator* GetAllocator() override { return CpuAllocator(); }
  std::string Description() const override { return proto_.description(); }
  int priority() const override { return proto_.priority(); }
  bool uses_host_memory() const override { return proto_.uses_host_memory(); }
  uint64_t incarnation() const override { return incarnation_.load(); }
  // Its task restarted: graphs partitioned from now on carry the new incarnation.
  void Reincarnate(uint64_t incarnation) { incarnation_ = incarnation; }

 private:
  rpc::DeviceProto proto_;
  std::atomic<uint64_t> incarnation_;
};

struct Task {
  std::string name, address;
  std::unique_ptr<rpc::WorkerService::Stub> stub;
  std::unique_ptr<grpc::GenericStub> raw;  // RunGraph (raw messages)
};

// Sends `req` and forgets it (AbortStep, CleanupStep): the call owns its state. `start` begins
// the asynchronous call: start(context, request, response, on_done).
template <typename Req, typename Resp, typename Start>
void FireAndForget(const ClusterOptions& options, const Req& req, Start start) {
  struct Call {
    grpc::ClientContext ctx;
    Req req;
    Resp resp;
  };
  auto* call = new Call;
  call->req = req;
  AddToken(&call->ctx, options);
  call->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  start(&call->ctx, &call->req, &call->resp, [call](grpc::Status) { delete call; });
}

class MasterSession final : public SessionBackend {
 public:
  static StatusOr<std::unique_ptr<SessionBackend>> Create(Graph& graph,
                                                          const SessionOptions& options) {
    auto s = std::unique_ptr<MasterSession>(new MasterSession(graph, options));
    PF_RETURN_IF_ERROR(s->Connect());
    return std::unique_ptr<SessionBackend>(std::move(s));
  }

  ~MasterSession() override {
    // Best effort: tasks drop this session's finished steps and graphs.
    for (const auto& [task, steps] : ended_steps_) {
      for (int64_t id : steps) {
        rpc::CleanupStepRequest req;
        req.set_step_id(id);
        auto* stub = tasks_.at(task).stub.get();
        FireAndForget<rpc::CleanupStepRequest, rpc::CleanupStepResponse>(
            options_.cluster, req, [stub](auto... a) { stub->async()->CleanupStep(a...); });
      }
    }
    for (const auto& prepared : cache_.Clear()) Deregister(*prepared);
  }

  Status Run(const FeedDict& feeds, const std::vector<Output>& fetches,
             const std::vector<Operation>& targets, std::vector<Tensor>* outputs,
             const RunOptions& run_options, RunMetadata* metadata) override {
    const std::string key = SignatureKey(feeds, fetches, targets);
    PF_ASSIGN_OR_RETURN(auto prepared, Prepare(key, feeds, fetches, targets));
    RunMetadata* trace = run_options.trace ? metadata : nullptr;
    Status s = RunStep(*prepared, feeds, outputs, trace, run_options.timeout_in_ms);
    if (IsTaskRestart(s)) {
      // A task restarted: it lost its graphs (those of every signature), and the other tasks'
      // graphs name its old incarnation. The step is not retried here (the other tasks may
      // have run part of it: updates would apply twice); later calls learn the tasks'
      // incarnations and register again.
      std::vector<std::shared_ptr<const Prepared>> stale;
      {
        std::lock_guard<std::mutex> lock(mu_);
        stale = cache_.Clear();
        refresh_incarnations_ = true;
      }
      for (const auto& p : stale) Deregister(*p);
      return s.WithSuffix(" (this session registers its graphs again on the next call)")
          .WithReason(Reason::kTaskRestarted);
    }
    return s;
  }

  std::map<std::string, std::string> DevicePlacement() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return placement_;
  }
  const DeviceSet& devices() const override { return devices_; }
  size_t num_cached_signatures() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return cache_.size();
  }

 private:
  struct TaskPart {
    std::string task;          // "/job:J/replica:0/task:T"
    std::string handle;        // its registered graph
    std::vector<int> feeds;    // session feed index per RunGraph feed
    std::vector<int> fetches;  // session fetch index per RunGraph fetch
  };
  struct Prepared {
    std::vector<TaskPart> tasks;
    std::vector<int> fetch_from_feed;
  };

  MasterSession(Graph& graph, const SessionOptions& options)
      : graph_(graph), options_(options), rng_(std::random_device()()) {}

  Status Connect() {
    const std::string address = options_.target.substr(std::strlen("grpc://"));
    if (address.ends_with(":0")) {  // it would wait for connect_timeout_s and fail
      return errors::InvalidArgument(
          "Session target '", options_.target,
          "' has port 0, which no server listens on: a server created with port 0 binds a free "
          "port, which its target() names");
    }
    PF_ASSIGN_OR_RETURN(auto channel, NewChannel(address, options_.cluster));
    auto master = rpc::MasterService::NewStub(channel);
    grpc::ClientContext ctx;
    AddToken(&ctx, options_.cluster);
    ctx.set_wait_for_ready(true);
    // The target waits `wait_s` for the other tasks; the client a little longer, so that the
    // target's answer (which names a missing task) arrives before the client gives up.
    const double wait_s = options_.cluster.connect_timeout_s;
    const double client_wait_s = wait_s + 2;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(client_wait_s * 1000)));
    rpc::GetClusterRequest req;
    req.set_wait_s(wait_s);
    rpc::GetClusterResponse resp;
    grpc::Status st = master->GetCluster(&ctx, req, &resp);
    if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return errors::Unavailable("Timed out after ", client_wait_s,
                                 " s waiting for the session target ", options_.target,
                                 " to answer (is its server started? do both sides use the "
                                 "same TLS settings and certificate authority?)");
    }
    PF_RETURN_IF_ERROR(FromGrpc(st, "Connecting to " + options_.target));
    for (const rpc::JobProto& job : resp.cluster().job()) {
      for (int i = 0; i < job.address_size(); ++i) {
        Task t;
        t.name = fmt::format("/job:{}/replica:0/task:{}", job.name(), i);
        t.address = job.address(i);
        // (the target's own address gets the cached channel made above)
        PF_ASSIGN_OR_RETURN(auto ch, NewChannel(t.address, options_.cluster));
        t.stub = rpc::WorkerService::NewStub(ch);
        t.raw = std::make_unique<grpc::GenericStub>(ch);
        std::string name = t.name;
        tasks_.emplace(name, std::move(t));
      }
    }
    for (const rpc::DeviceProto& d : resp.device()) {
      DeviceName n;
      if (!DeviceName::Parse(d.name(), &n) || !n.IsFullySpecified())
        return errors::Internal("The cluster reported a malformed device name '", d.name(), "'");
      devices_.Add(std::make_unique<RemoteDevice>(n, d));
    }
    default_task_.has_job = default_task_.has_replica = default_task_.has_task = true;
    default_task_.job = resp.job();
    default_task_.task = resp.task();
    if (options_.log_device_placement) LogDeviceMapping(devices_);
    return Status::OK();
  }

  static std::string TaskOf(const Device& d) {
    return fmt::format("/job:{}/replica:{}/task:{}", d.parsed_name().job, d.parsed_name().replica,
                       d.parsed_name().task);
  }

  StatusOr<std::shared_ptr<const Prepared>> Prepare(const std::string& key, const FeedDict& feeds,
                                                    const std::vector<Output>& fetches,
                                                    const std::vector<Operation>& targets) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto hit = cache_.Find(key)) return hit;
    if (refresh_incarnations_) {
      PF_RETURN_IF_ERROR(RefreshIncarnations());
      refresh_incarnations_ = false;
    }
    std::vector<Output> fed_list;
    for (const auto& [o, t] : feeds) fed_list.push_back(o);
    PlanOptions popts;
    popts.placer.allow_soft_placement = options_.allow_soft_placement;
    popts.placer.strict_placement = options_.strict_placement;
    popts.placer.default_task = default_task_;
    // The workers run the partitions as planned here, fused ops included.
    popts.remap = RemappingEnabled(options_.rewrite_options.remapping);
    PF_ASSIGN_OR_RETURN(popts.mixed_precision,
                        MixedPrecisionType(options_.rewrite_options.auto_mixed_precision));
    popts.log_device_placement = options_.log_device_placement;
    popts.after_partition = AnnotateCrossTaskCollectives;
    PF_ASSIGN_OR_RETURN(StepPlan plan,
                        PlanSignature(fed_list, fetches, targets, devices_, popts, &placement_));
    const Partitions& partitions = plan.partitions;
    auto prepared = std::make_shared<Prepared>();
    prepared->fetch_from_feed = plan.fetch_from_feed;
    std::map<std::string, std::pair<rpc::RegisterGraphRequest, TaskPart>> per_task;
    const bool dead_tensors = HasControlFlow(plan.nodes);
    for (const Partitions::Part& part : partitions.parts) {
      auto& [req, tp] = per_task[TaskOf(*part.device)];
      req.set_dead_tensors(dead_tensors);
      tp.task = TaskOf(*part.device);
      rpc::PartitionProto* pp = req.add_partition();
      pp->set_device(part.device->name());
      std::vector<const Node*> shipped(part.nodes.begin(), part.nodes.end());
      for (const auto& [user, arg] : part.args) shipped.push_back(arg.node);
      PF_RETURN_IF_ERROR(PlacedGraphToProto(shipped, pp->mutable_graph()));
      for (const auto& [user, arg] : part.args) {
        pp->add_feed(arg.name());
        tp.feeds.push_back(plan.feed_index.at(user));
      }
      for (int i : plan.FetchesOn(part, fetches)) {
        pp->add_fetch(Output(partitions.copy_of.at(fetches[i].node), fetches[i].index).name());
        rpc::FetchVariable* v = pp->add_fetch_variable();
        const Node* var = AliasedVariable(fetches[i]);
        auto where = var ? plan.placement.device.find(var) : plan.placement.device.end();
        if (where != plan.placement.device.end()) {  // not when fed
          v->set_device(where->second->name());
          v->set_name(var->name());
        }
        tp.fetches.push_back(static_cast<int>(i));
      }
    }
    for (auto& [task, entry] : per_task) {
      auto& [req, tp] = entry;
      grpc::ClientContext ctx;
      AddToken(&ctx, options_.cluster);
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(
                           static_cast<int64_t>(options_.cluster.connect_timeout_s * 1000)));
      rpc::RegisterGraphResponse resp;
      const Task& t = tasks_.at(task);
      Status s = FromGrpc(t.stub->RegisterGraph(&ctx, req, &resp),
                          fmt::format("RegisterGraph on task {} ({})", task, t.address));
      if (!s.ok()) {
        Deregister(*prepared);  // the tasks registered so far
        return s;
      }
      tp.handle = resp.graph_handle();
      prepared->tasks.push_back(std::move(tp));
    }
    // The bound counts the master's signatures too; the tasks drop what it pushed out.
    for (const auto& old : cache_.Insert(key, prepared)) Deregister(*old);
    return std::shared_ptr<const Prepared>(prepared);
  }

  // Every task's current incarnation (after a restart), onto its devices. A task that does not
  // answer fails the call (Unavailable): the next call tries again.
  Status RefreshIncarnations() {
    for (auto& [name, task] : tasks_) {
      grpc::ClientContext ctx;
      AddToken(&ctx, options_.cluster);
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(
                           static_cast<int64_t>(options_.cluster.connect_timeout_s * 1000)));
      rpc::GetStatusRequest req;
      rpc::GetStatusResponse resp;
      PF_RETURN_IF_ERROR(FromGrpc(task.stub->GetStatus(&ctx, req, &resp),
                                  fmt::format("GetStatus of task {} ({})", name, task.address)));
      for (Device* d : devices_.devices()) {
        if (TaskOf(*d) == name) static_cast<RemoteDevice*>(d)->Reincarnate(resp.incarnation());
      }
    }
    return Status::OK();
  }

  // Collectives whose participants span tasks meet through the step's rendezvous: each
  // participant's copy learns every rank's device (the group_devices attr).
  static Status AnnotateCrossTaskCollectives(const std::vector<Node*>& nodes,
                                             const Placement& placement, Partitions* partitions) {
    std::map<std::string, std::map<int64_t, const Node*>> groups;
    for (const Node* n : nodes) {
      if (n->HasAttr("group_key") && n->HasAttr("group_devices"))
        groups[n->attr<std::string>("group_key")][n->attr<int64_t>("rank")] = n;
    }
    for (const auto& [key, ranks] : groups) {
      std::vector<std::string> devices;
      std::set<std::string> tasks;
      for (const auto& [rank, n] : ranks) {
        if (rank != static_cast<int64_t>(devices.size())) {
          return errors::InvalidArgument("Collective '", key, "' has no rank ", devices.size(),
                                         " in this step (", n->name(), " is rank ", rank, ")");
        }
        devices.push_back(placement.device.at(n)->name());
        tasks.insert(TaskOf(*placement.device.at(n)));
      }
      if (tasks.size() < 2) continue;  // one task: the in-process table
      for (const auto& [rank, n] : ranks)
        partitions->copy_of.at(n)->SetAttr("group_devices", devices);
    }
    return Status::OK();
  }

  // One step's RunGraph calls, one per task, all in flight at once.
  struct StepCalls {
    struct Call {
      grpc::ClientContext ctx;
      grpc::ByteBuffer req, resp;
      Status status;
      std::vector<int64_t> ended;  // sent along; queued again if the call fails
    };
    explicit StepCalls(size_t n) : calls(n), remaining(n) {}
    std::vector<Call> calls;
    std::mutex mu;
    std::condition_variable cv;
    size_t remaining;
    bool aborted = false;
  };

  // `trace` (optional) gets every task's node stats on the client's time line: a task's times
  // are shifted by the difference of the tasks' wall clocks at step start (exact on one host,
  // as good as the clocks' synchronisation across hosts).
  Status RunStep(const Prepared& prepared, const FeedDict& feeds, std::vector<Tensor>* outputs,
                 RunMetadata* trace, int64_t timeout_ms) {
    const auto start = std::chrono::system_clock::now();
    if (trace) trace->step_stats.clear();
    int64_t step_id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      step_id = static_cast<int64_t>(rng_() >> 1);
    }
    StepCalls step(prepared.tasks.size());
    for (size_t i = 0; i < prepared.tasks.size(); ++i)
      StartRunGraph(prepared, i, feeds, step_id, trace != nullptr, timeout_ms, &step);
    {
      std::unique_lock<std::mutex> lock(step.mu);
      step.cv.wait(lock, [&] { return step.remaining == 0; });
    }
    QueueEndedSteps(prepared, step, step_id);
    if (step.aborted) CleanupNow(prepared, step_id);
    PF_RETURN_IF_ERROR(RootCause(step));
    PF_RETURN_IF_ERROR(ReadFetches(prepared, &step, outputs, trace, start));
    if (trace) {
      trace->step_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now() - start)
                           .count();
    }
    for (size_t i = 0; i < outputs->size(); ++i) {
      if (prepared.fetch_from_feed[i] >= 0)
        (*outputs)[i] = feeds[prepared.fetch_from_feed[i]].second;
    }
    return Status::OK();
  }

  // Sends task `i`'s RunGraph; its answer is recorded in `step`, and the first failure anywhere
  // aborts the step on every task.
  void StartRunGraph(const Prepared& prepared, size_t i, const FeedDict& feeds, int64_t step_id,
                     bool trace, int64_t timeout_ms, StepCalls* step) {
    const TaskPart& tp = prepared.tasks[i];
    StepCalls::Call& c = step->calls[i];
    AddToken(&c.ctx, options_.cluster);
    // Raw: the feeds' bytes go out as slices of the caller's tensors (no copy here).
    rpc::RunGraphRequest header;
    header.set_graph_handle(tp.handle);
    header.set_step_id(step_id);
    header.set_trace(trace);
    header.set_timeout_ms(timeout_ms);  // each task times its part; the first error aborts all
    {
      std::lock_guard<std::mutex> lock(mu_);
      c.ended.swap(ended_steps_[tp.task]);
    }
    for (int64_t ended : c.ended) header.add_ended_step(ended);
    std::vector<TensorRange> parts;
    for (int f : tp.feeds) {
      TensorMeta(feeds[f].second, header.add_feed());
      parts.push_back({feeds[f].second});
    }
    c.req = EncodeRaw(header, parts);
    const Task& task = tasks_.at(tp.task);
    const std::string what = fmt::format("Task {} ({})", tp.task, task.address);
    task.raw->UnaryCall(
        &c.ctx, "/pf.rpc.WorkerService/RunGraph", grpc::StubOptions(), &c.req, &c.resp,
        [this, &prepared, step, what, i, step_id](grpc::Status st) {
          Status s = FromGrpc(st, what);
          if (st.error_code() == grpc::StatusCode::UNAVAILABLE && !IsRemoteError(st)) {
            s = errors::Unavailable(
                what, " is unreachable or died during the step: ", st.error_message());
          }
          bool first_failure = false;
          {
            std::lock_guard<std::mutex> lock(step->mu);
            step->calls[i].status = s;
            if (!s.ok() && !step->aborted) first_failure = step->aborted = true;
          }
          if (first_failure) AbortEverywhere(prepared, step_id, s);
          std::lock_guard<std::mutex> lock(step->mu);
          if (--step->remaining == 0) step->cv.notify_all();
        });
  }

  void AbortEverywhere(const Prepared& prepared, int64_t step_id, const Status& s) {
    rpc::AbortStepRequest req;
    req.set_step_id(step_id);
    req.set_code(static_cast<int>(s.code()));
    req.set_message(s.message());
    for (const TaskPart& tp : prepared.tasks) {
      auto* stub = tasks_.at(tp.task).stub.get();
      FireAndForget<rpc::AbortStepRequest, rpc::AbortStepResponse>(
          options_.cluster, req, [stub](auto... a) { stub->async()->AbortStep(a...); });
    }
  }

  // Finished everywhere: each task drops the step with its next RunGraph. A task whose call
  // failed may not have seen the ended steps sent along: they are queued again.
  void QueueEndedSteps(const Prepared& prepared, const StepCalls& step, int64_t step_id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < step.calls.size(); ++i) {
      std::vector<int64_t>& queue = ended_steps_[prepared.tasks[i].task];
      if (!step.calls[i].status.ok())
        queue.insert(queue.end(), step.calls[i].ended.begin(), step.calls[i].ended.end());
      if (!step.aborted) queue.push_back(step_id);
    }
  }

  // The root cause wins over the aborts and cancellations it set off on other tasks; an abort
  // with a reason (a stale incarnation) is a root cause, not a derived abort.
  static Status RootCause(const StepCalls& step) {
    const auto derived = [](const Status& s) {
      return (s.code() == Code::kAborted || s.code() == Code::kCancelled) &&
             s.reason() == Reason::kNone;
    };
    Status first;
    for (const StepCalls::Call& c : step.calls) {
      if (!c.status.ok() && (first.ok() || (!derived(c.status) && derived(first))))
        first = c.status;
    }
    return first;
  }

  Status ReadFetches(const Prepared& prepared, StepCalls* step, std::vector<Tensor>* outputs,
                     RunMetadata* trace, std::chrono::system_clock::time_point start) {
    outputs->assign(prepared.fetch_from_feed.size(), Tensor());
    for (size_t i = 0; i < prepared.tasks.size(); ++i) {
      const TaskPart& tp = prepared.tasks[i];
      rpc::RunGraphResponse header;
      RawReader reader;
      PF_RETURN_IF_ERROR(reader.Open(&step->calls[i].resp, &header));
      if (header.fetch_size() != static_cast<int>(tp.fetches.size()))
        return errors::Internal("Task ", tp.task, " returned ", header.fetch_size(),
                                " fetches instead of ", tp.fetches.size());
      for (size_t k = 0; k < tp.fetches.size(); ++k) {
        PF_ASSIGN_OR_RETURN((*outputs)[tp.fetches[k]], ReadTensor(&reader, header.fetch(k)));
      }
      if (trace) AddTaskStats(header, start, trace);
    }
    return Status::OK();
  }

  // Best effort: every task of `prepared` drops its registered graph.
  void Deregister(const Prepared& prepared) {
    for (const TaskPart& t : prepared.tasks) {
      rpc::DeregisterGraphRequest req;
      req.set_graph_handle(t.handle);
      auto* stub = tasks_.at(t.task).stub.get();
      FireAndForget<rpc::DeregisterGraphRequest, rpc::DeregisterGraphResponse>(
          options_.cluster, req, [stub](auto... a) { stub->async()->DeregisterGraph(a...); });
    }
  }

  static void AddTaskStats(const rpc::RunGraphResponse& header,
                           std::chrono::system_clock::time_point client_start, RunMetadata* trace) {
    const int64_t shift =
        header.start_unix_us() -
        std::chrono::duration_cast<std::chrono::microseconds>(client_start.time_since_epoch())
            .count();
    for (const rpc::NodeStatsProto& p : header.stats()) {
      trace->step_stats.push_back({p.node(), p.op(), p.device(), p.thread(), p.start_us() + shift,
                                   p.end_us() + shift, p.output_bytes()});
    }
  }

  // Ends `step_id` on every task of `prepared` now (a failed step: something may still wait).
  void CleanupNow(const Prepared& prepared, int64_t step_id) {
    rpc::CleanupStepRequest cleanup;
    cleanup.set_step_id(step_id);
    for (const TaskPart& tp : prepared.tasks) {
      auto* stub = tasks_.at(tp.task).stub.get();
      FireAndForget<rpc::CleanupStepRequest, rpc::CleanupStepResponse>(
          options_.cluster, cleanup, [stub](auto... a) { stub->async()->CleanupStep(a...); });
    }
  }

  Graph& graph_;
  SessionOptions options_;
  DeviceSet devices_;
  DeviceName default_task_;
  std::map<std::string, Task> tasks_;
  mutable std::mutex mu_;
  SignatureCache<Prepared> cache_{options_.max_cached_signatures};
  std::map<std::string, std::string> placement_;
  std::map<std::string, std::vector<int64_t>> ended_steps_;  // per task, not yet sent
  bool refresh_incarnations_ = false;  // a task restarted: ask every task before partitioning
  std::mt19937_64 rng_;
};

const bool kRegistered = [] {
  RegisterSessionBackend("grpc://", &MasterSession::Create);
  return true;
}();

}  // namespace
}  // namespace pf
