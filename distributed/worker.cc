#include "placeflow/distributed/worker.h"

#include <random>

#include "placeflow/core/logging.h"
#include "placeflow/devices/copy_registry.h"
#include "placeflow/devices/device_factory.h"
#include "placeflow/distributed/step_rendezvous.h"
#include "placeflow/executor/executor.h"
#include "placeflow/executor/prepared_step.h"
#include "placeflow/graph/graph_def.h"

namespace pf {

namespace {
constexpr size_t kEndedStepsKept = 4096;

int64_t UnixMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// A graph registered by a master: one executor per device partition of one signature.
struct Worker::Registration {
  struct Part : PreparedPart {
    std::unique_ptr<Graph> graph;  // what the executor runs
  };
  std::vector<Part> parts;
  std::vector<const PreparedPart*> part_list;  // parts, for the shared step functions
  KernelCache kernels;  // by (name, op, device), as the in-process Session keys them
};

// One step of a registered graph on this task: it lives until the last partition finishes.
struct Worker::Run {
  std::shared_ptr<Registration> reg;
  std::shared_ptr<StepRendezvous> step;
  std::unique_ptr<RunMetadata> trace;  // when the client asked for one
  int64_t start_unix_us = 0;
  std::unique_ptr<StepGroup> group;
  PartTensors feeds, fetches;
};

Worker::Worker(ClusterSpec cluster, std::string job, int task, ClusterOptions options,
               int cpu_devices)
    : cluster_(std::move(cluster)),
      job_(std::move(job)),
      task_(task),
      task_name_(fmt::format("/job:{}/replica:0/task:{}", job_, task_)),
      options_(std::move(options)),
      incarnation_(std::random_device()() * (uint64_t{1} << 32) + std::random_device()()),
      peers_(std::make_unique<PeerChannels>(cluster_, options_)) {
  LocalDeviceOptions local;
  local.cpu_devices = cpu_devices;
  for (auto& d : CreateLocalDevices(local).ValueOrThrow()) {
    d->SetTask(job_, 0, task_);
    d->set_incarnation(incarnation_);
    devices_.Add(std::move(d));
  }
}

Worker::~Worker() = default;

void Worker::set_cluster(ClusterSpec cluster) {
  cluster_ = std::move(cluster);
  peers_ = std::make_unique<PeerChannels>(cluster_, options_);
}

void Worker::ListDevices(google::protobuf::RepeatedPtrField<rpc::DeviceProto>* out) const {
  for (const Device* d : devices_.devices()) {
    rpc::DeviceProto* p = out->Add();
    p->set_name(d->name());
    p->set_type(d->device_type());
    p->set_description(d->Description());
    p->set_priority(d->priority());
    p->set_uses_host_memory(d->uses_host_memory());
    p->set_incarnation(d->incarnation());
  }
}

void Worker::GetStatus(rpc::GetStatusResponse* resp) const {
  ListDevices(resp->mutable_device());
  resp->set_incarnation(incarnation_);
}

std::shared_ptr<StepRendezvous> Worker::FindOrCreateStep(int64_t step_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_.count(step_id)) return nullptr;
  auto& step = steps_[step_id];
  if (!step) step = std::make_shared<StepRendezvous>(peers_.get(), task_name_, step_id);
  return step;
}

void Worker::AbortAllSteps(const Status& status) {
  std::vector<std::shared_ptr<StepRendezvous>> steps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, step] : steps_) steps.push_back(step);
  }
  for (auto& step : steps) step->StartAbort(status);
}

std::shared_ptr<StepRendezvous> Worker::EndStep(int64_t step_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<StepRendezvous> step;
  if (auto it = steps_.find(step_id); it != steps_.end()) {
    step = it->second;
    steps_.erase(it);
  }
  if (ended_.insert(step_id).second) ended_order_.push_back(step_id);
  if (ended_order_.size() > kEndedStepsKept) {
    ended_.erase(ended_order_.front());
    ended_order_.pop_front();
  }
  return step;
}

StatusOr<std::shared_ptr<Worker::Registration>> Worker::Register(
    const rpc::RegisterGraphRequest& req) {
  auto reg = std::make_shared<Registration>();
  for (const rpc::PartitionProto& pp : req.partition()) {
    Device* device = devices_.Find(pp.device());
    if (device == nullptr) {
      return errors::InvalidArgument("Device ", pp.device(), " is not on task ", task_name_,
                                     " (its devices: ", devices_.NamesForError(), ")");
    }
    Registration::Part part;
    ExecutorSpec spec;
    spec.devices = &devices_;
    spec.dead_tensors = req.dead_tensors();
    PF_ASSIGN_OR_RETURN(part.graph, PlacedGraphFromProto(pp.graph()));
    std::set<const Node*> args;
    for (const std::string& arg : pp.feed()) {
      PF_ASSIGN_OR_RETURN(Output o, FindOutput(*part.graph, arg));
      spec.feeds.push_back(o);
      args.insert(o.node);
    }
    for (Node* n : part.graph->nodes())
      if (!args.count(n)) spec.nodes.push_back(n);  // the executor runs all but the feeds' _Args
    std::vector<PreparedPart::Variable> variables;
    for (int k = 0; k < pp.fetch_size(); ++k) {
      PF_ASSIGN_OR_RETURN(Output o, FindOutput(*part.graph, pp.fetch(k)));
      spec.fetches.push_back(o);
      PreparedPart::Variable& v = variables.emplace_back();
      if (k < pp.fetch_variable_size() && !pp.fetch_variable(k).name().empty()) {
        v.device = devices_.Find(pp.fetch_variable(k).device());  // null: not on this task
        v.name = pp.fetch_variable(k).name();
      }
    }
    PF_ASSIGN_OR_RETURN(static_cast<PreparedPart&>(part),
                        PreparePart(std::move(spec), device, &reg->kernels, std::move(variables)));
    reg->parts.push_back(std::move(part));
  }
  for (const Registration::Part& p : reg->parts) reg->part_list.push_back(&p);
  return reg;
}

Status Worker::RegisterGraph(const rpc::RegisterGraphRequest& req,
                             rpc::RegisterGraphResponse* resp) {
  auto reg = Register(req);
  if (!reg.ok()) return reg.status().WithSuffix(fmt::format(" (on task {})", task_name_));
  std::lock_guard<std::mutex> lock(mu_);
  std::string handle = fmt::format("{:x}/{}", incarnation_, next_graph_++);
  graphs_[handle] = std::move(reg).value();
  resp->set_graph_handle(handle);
  return Status::OK();
}

void Worker::DeregisterGraph(const rpc::DeregisterGraphRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  graphs_.erase(req.graph_handle());
}

StatusOr<std::shared_ptr<Worker::Run>> Worker::StartRun(const RunGraphCall& call) {
  const rpc::RunGraphRequest& req = call.request;
  auto run = std::make_shared<Run>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = graphs_.find(req.graph_handle()); it != graphs_.end()) run->reg = it->second;
  }
  if (!run->reg) {
    return errors::NotFound("Graph handle ", req.graph_handle(), " is not registered on task ",
                            task_name_, " (the task restarted?)")
        .WithReason(Reason::kGraphNotRegistered);
  }
  for (int64_t ended : req.ended_step()) EndStep(ended);
  run->step = FindOrCreateStep(req.step_id());
  if (!run->step)
    return errors::Aborted("Step ", req.step_id(), " already ended on task ", task_name_);
  // An aborted step runs none of its nodes (no side effects).
  PF_RETURN_IF_ERROR(run->step->aborted());
  if (req.trace()) run->trace = std::make_unique<RunMetadata>();
  run->start_unix_us = UnixMicros();
  run->group = std::make_unique<StepGroup>(run->trace.get(), run->step.get());
  return run;
}

Status Worker::StageFeeds(RunGraphCall* call, Run* run) {
  const std::vector<Registration::Part>& parts = run->reg->parts;
  run->feeds.resize(parts.size());
  run->fetches.resize(parts.size());
  size_t next = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (size_t k = 0; k < parts[i].feed_on_host.size(); ++k, ++next) {
      if (next >= call->feeds.size()) {
        return errors::InvalidArgument("RunGraph of graph ", call->request.graph_handle(),
                                       " on task ", task_name_, ": ", call->feeds.size(),
                                       " feeds for partitions that take more");
      }
      PF_ASSIGN_OR_RETURN(
          Tensor t, StagedFeed(parts[i], static_cast<int>(k), call->feeds[next], devices_.host()));
      run->feeds[i].push_back(std::move(t));
    }
  }
  return Status::OK();
}

void Worker::RunGraphAsync(std::shared_ptr<RunGraphCall> call, std::function<void(Status)> done) {
  StatusOr<std::shared_ptr<Run>> started = StartRun(*call);
  if (!started.ok()) return done(started.status());
  std::shared_ptr<Run> run = std::move(started).value();
  if (Status s = StageFeeds(call.get(), run.get()); !s.ok()) return done(s);
  // The timeout holds the run while it fires (it may end the step); the step's end disarms it.
  run->group->SetTimeout(call->request.timeout_ms(), run);
  RunPartitionsAsync(run->reg->part_list, run->feeds, &run->fetches, call->request.step_id(),
                     run->group.get(), ThreadPool::Default(),
                     [this, run, call, done = std::move(done)] {
                       run->group->CancelTimeout();
                       done(FinishRun(run.get(), call.get()));
                     });
}

Status Worker::FinishRun(Run* run, RunGraphCall* call) {
  PF_RETURN_IF_ERROR(run->group->status());
  PF_RETURN_IF_ERROR(SyncDevices(run->reg->part_list));
  for (size_t i = 0; i < run->reg->parts.size(); ++i) {
    for (size_t k = 0; k < run->fetches[i].size(); ++k) {
      PF_ASSIGN_OR_RETURN(Tensor t, FetchedValue(std::move(run->fetches[i][k]), run->reg->parts[i],
                                                 static_cast<int>(k), devices_.host()));
      call->fetches.push_back(std::move(t));
    }
  }
  if (run->trace) {
    call->response.set_start_unix_us(run->start_unix_us);
    for (const NodeExecStats& n : run->trace->step_stats) {
      rpc::NodeStatsProto* p = call->response.add_stats();
      p->set_node(n.node);
      p->set_op(n.op);
      p->set_device(n.device);
      p->set_thread(n.thread);
      p->set_start_us(n.start_us);
      p->set_end_us(n.end_us);
      p->set_output_bytes(n.output_bytes);
    }
  }
  return Status::OK();
}

void Worker::AbortStep(const rpc::AbortStepRequest& req) {
  // Aborted, whatever the cause's code: the client reports the cause from the task where it
  // happened, not this task's reaction to it.
  if (auto step = FindOrCreateStep(req.step_id()))
    step->StartAbort(
        errors::Aborted("Step aborted because of an error on another task: ", req.message()));
}

void Worker::CleanupStep(const rpc::CleanupStepRequest& req) {
  // Wakes anything still waiting in the step (a RecvTensor of a step that failed elsewhere).
  if (auto step = EndStep(req.step_id())) step->StartAbort(errors::Aborted("Step ended"));
}

void Worker::RecvTensorAsync(const rpc::RecvTensorRequest& req,
                             std::function<void(const Status&, const Tensor&)> done) {
  Device* src = devices_.Find(std::string(Rendezvous::SendDevice(req.key())));
  if (src == nullptr) {  // nothing here will ever send it
    return done(errors::InvalidArgument("RecvTensor of '", req.key(),
                                        "': its sender is not a device of task ", task_name_),
                Tensor());
  }
  // A key made for this task's previous life (the master partitioned before the restart):
  // its tensor will never be sent. TensorFlow's message and code.
  if (const uint64_t want = Rendezvous::SendIncarnation(req.key());
      want != 0 && want != src->incarnation()) {
    return done(errors::Aborted("RecvTensor expects a different device incarnation: ", want,
                                " vs. ", src->incarnation(), ". Your worker job (\"", task_name_,
                                "\") was probably restarted. Check your worker job for the "
                                "reason why it was restarted.")
                    .WithReason(Reason::kStaleIncarnation),
                Tensor());
  }
  std::shared_ptr<StepRendezvous> step = FindOrCreateStep(req.step_id());
  if (!step) {
    return done(errors::Aborted("Step ", req.step_id(), " already ended on task ", task_name_),
                Tensor());
  }
  step->RecvLocal(req.key(), src, devices_.host(), std::move(done));
}

}  // namespace pf
