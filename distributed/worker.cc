#include "placeflow/distributed/worker.h"

#include <grpcpp/generic/generic_stub.h>

#include <mutex>
#include <random>

#include "placeflow/core/logging.h"
#include "placeflow/devices/copy_registry.h"
#include "placeflow/devices/device_manager.h"
#include "placeflow/devices/gpu_probe.h"
#include "placeflow/distributed/coding.h"
#include "placeflow/distributed/rpc_util.h"
#include "placeflow/executor/executor.h"
#include "placeflow/executor/prepared_step.h"
#include "placeflow/executor/rendezvous.h"
#include "placeflow/executor/subgraph.h"

namespace pf {

namespace {
constexpr size_t kEndedStepsKept = 4096;
constexpr char kRecvTensorMethod[] = "/pf.rpc.WorkerService/RecvTensor";
// Large tensors travel in chunks of this size over up to kStreams connections per peer.
constexpr int64_t kChunkBytes = int64_t{8} << 20;
constexpr int kStreams = 4;
}  // namespace

// The rendezvous of one step on one task: keys sent from this task's devices meet in a local
// table; a Recv of a key sent by another task pulls it from that task with RecvTensor.
// Aborting wakes local waiters and cancels the pulls in flight.
class StepRendezvous : public Rendezvous, public std::enable_shared_from_this<StepRendezvous> {
 public:
  StepRendezvous(Worker* worker, int64_t step_id) : worker_(worker), step_id_(step_id) {}

  Status Send(const std::string& key, const Tensor& value) override {
    return local_.Send(key, value);
  }

  void RecvAsync(const std::string& key, DoneCallback done) override {
    // Keys start with the sending device's full name, "/job:J/replica:0/task:T/device:...".
    const std::string& self = worker_->task_name();
    if (key.compare(0, self.size(), self) == 0 && key.compare(self.size(), 8, "/device:") == 0)
      return local_.RecvAsync(key, std::move(done));
    DeviceName src;
    DeviceName::Parse(Rendezvous::SendDevice(key), &src);
    PullFromPeer(src, key, std::move(done));
  }

  void StartAbort(const Status& status) override {
    std::vector<std::shared_ptr<grpc::ClientContext>> calls;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (aborted_.ok()) aborted_ = status.ok() ? errors::Aborted("Step aborted") : status;
      for (auto& [ptr, ctx] : in_flight_) calls.push_back(ctx);
    }
    local_.StartAbort(status);
    for (auto& c : calls) c->TryCancel();
  }

  Status aborted() {
    std::lock_guard<std::mutex> lock(mu_);
    return aborted_;
  }

  // For another task's RecvTensor: the value this task's _Send left under `key`, in host
  // memory (a GPU tensor is copied once per step and key, however many chunks are pulled).
  void RecvLocal(const std::string& key, Device* src, Device* host, DoneCallback done) {
    auto self = shared_from_this();
    local_.RecvAsync(
        key, [self, key, src, host, done = std::move(done)](const Status& s, const Tensor& t) {
          if (!s.ok() || t.InHostMemory()) return done(s, t);
          bool ready = false;
          Status status;
          Tensor value;
          {
            std::lock_guard<std::mutex> lock(self->mu_);
            HostCopy& copy = self->host_copies_[key];
            if (copy.ready) {
              ready = true;
              status = copy.status;
              value = copy.value;
            } else {
              copy.waiters.push_back(done);
              if (copy.waiters.size() > 1) return;  // the first waiter's copy is under way
            }
          }
          if (ready) return done(status, value);
          CopyRegistry::Global()->CopyAsync(t, src, host, [self, key](StatusOr<Tensor> h) {
            std::vector<DoneCallback> waiters;
            Status status = h.status();
            Tensor value = h.ok() ? *h : Tensor();
            {
              std::lock_guard<std::mutex> lock(self->mu_);
              HostCopy& copy = self->host_copies_[key];
              copy.ready = true;
              copy.status = status;
              copy.value = value;
              waiters.swap(copy.waiters);
            }
            for (auto& w : waiters) w(status, value);
          });
        });
  }

 private:
  struct Call {
    std::shared_ptr<grpc::ClientContext> ctx = std::make_shared<grpc::ClientContext>();
    grpc::ByteBuffer request, response;
  };

  // A RecvTensor response: its header and a reader positioned at its bytes.
  struct Chunk {
    rpc::RecvTensorHeader header;
    RawReader reader;
    // Copies the bytes to their offset in `t`.
    // Copies the bytes to their place in `t`: exactly the chunk at `offset` that was asked for.
    Status ReadInto(const Tensor& t, int64_t offset) {
      const int64_t total = static_cast<int64_t>(t.TotalBytes());
      const int64_t want = std::min(kChunkBytes, total - offset);
      const int64_t n = static_cast<int64_t>(reader.remaining());
      Shape shape;
      if (auto parsed = ShapeFromProto(header.shape()); parsed.ok()) shape = *parsed;
      if (t.dtype() != header.dtype() || shape != t.shape() || header.offset() != offset ||
          n != want) {
        return errors::Internal("A RecvTensor response holds ", n, " bytes at ", header.offset(),
                                " of a ", DTypeName(static_cast<DType>(header.dtype())), " ",
                                shape.ToString(), " tensor; expected ", want, " bytes at ", offset,
                                " of a ", DTypeName(t.dtype()), " ", t.shape().ToString());
      }
      return reader.Read(static_cast<char*>(t.raw_data()) + offset, n)
                 ? Status::OK()
                 : errors::Internal("A RecvTensor response is truncated");
    }
  };
  using FetchCallback = std::function<void(Status, Chunk*)>;

  // Pulls `key` from task `src`: the first chunk on the task's main connection; a tensor larger
  // than a chunk has the rest pulled in chunks over kStreams connections at once (one TCP
  // stream does not fill a machine's copy bandwidth), each copied straight into the tensor.
  void PullFromPeer(const DeviceName& src, const std::string& key, DoneCallback done) {
    auto self = shared_from_this();
    Fetch(src, key, 0, 0, [self, src, key, done](Status s, Chunk* r) {
      StatusOr<Tensor> t =
          s.ok() ? NewTensorFor(r->header.dtype(), r->header.shape()) : StatusOr<Tensor>(s);
      const int64_t have = t.ok() ? static_cast<int64_t>(r->reader.remaining()) : 0;
      if (t.ok()) s = r->ReadInto(*t, 0);
      if (!t.ok() || !s.ok()) return done(t.ok() ? s : t.status(), Tensor());
      const int64_t total = static_cast<int64_t>(t->TotalBytes());
      if (have >= total) return done(Status::OK(), *t);
      struct Gather {
        Tensor t;
        std::atomic<int> left{0};
        std::mutex mu;
        Status status;
      };
      auto g = std::make_shared<Gather>();
      g->t = *t;
      const int chunks = static_cast<int>((total - have + kChunkBytes - 1) / kChunkBytes);
      g->left = chunks;
      for (int c = 0; c < chunks; ++c) {
        const int64_t offset = have + c * kChunkBytes;
        self->Fetch(src, key, offset, c % kStreams, [g, done, offset](Status s, Chunk* r) {
          if (s.ok()) s = r->ReadInto(g->t, offset);
          if (!s.ok()) {
            std::lock_guard<std::mutex> lock(g->mu);
            if (g->status.ok()) g->status = s;
          }
          if (g->left.fetch_sub(1) == 1) done(g->status, g->status.ok() ? g->t : Tensor());
        });
      }
    });
  }

  // One RecvTensor call for the bytes of `key` from `offset` (a chunk) on connection `stream`.
  void Fetch(const DeviceName& src, const std::string& key, int64_t offset, int stream,
             FetchCallback callback) {
    std::string address;
    auto stub = worker_->PeerStub(src.job, src.task, stream, &address);
    if (!stub.ok()) return callback(stub.status(), nullptr);
    auto call = std::make_shared<Call>();
    Status aborted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      aborted = aborted_;
      if (aborted.ok()) in_flight_[call.get()] = call->ctx;
    }
    if (!aborted.ok()) return callback(aborted, nullptr);  // not under mu_: it may abort
    AddToken(call->ctx.get(), worker_->options());
    rpc::RecvTensorRequest req;
    req.set_step_id(step_id_);
    req.set_key(key);
    req.set_offset(offset);
    req.set_max_bytes(kChunkBytes);
    grpc::Slice slice(req.SerializeAsString());
    call->request = grpc::ByteBuffer(&slice, 1);
    auto self = shared_from_this();
    (*stub)->UnaryCall(
        call->ctx.get(), kRecvTensorMethod, grpc::StubOptions(), &call->request, &call->response,
        [self, call, src, key, address, callback = std::move(callback)](grpc::Status st) {
          {
            std::lock_guard<std::mutex> lock(self->mu_);
            self->in_flight_.erase(call.get());
          }
          const auto what = [&] {
            return fmt::format("RecvTensor of '{}' from /job:{}/replica:0/task:{} ({})",
                               key.substr(key.rfind(';') + 1), src.job, src.task, address);
          };
          if (!st.ok()) return callback(FromGrpc(st, what()), nullptr);
          Chunk chunk;
          Status s = chunk.reader.Open(&call->response, &chunk.header);
          if (!s.ok()) return callback(s.WithSuffix(" (" + what() + ")"), nullptr);
          callback(Status::OK(), &chunk);
        });
  }

  Worker* worker_;
  int64_t step_id_;
  LocalRendezvous local_;
  std::mutex mu_;
  Status aborted_;
  std::map<Call*, std::shared_ptr<grpc::ClientContext>> in_flight_;
  struct HostCopy {
    bool ready = false;
    Status status;
    Tensor value;
    std::vector<DoneCallback> waiters;
  };
  std::map<std::string, HostCopy> host_copies_;
};

// A graph registered by a master: one executor per device partition of one signature.
struct Worker::Registration {
  struct Part {
    std::unique_ptr<Graph> graph;
    Device* device = nullptr;
    std::unique_ptr<Executor> executor;
    std::vector<bool> feed_on_host;
    std::vector<bool> snapshot;  // per fetch: copy before sending (may view a variable)
    // Per fetch: the variable of this partition it may view ("" when none or elsewhere); the
    // copy holds its lock, which the variable's updates take too.
    std::vector<std::string> snapshot_var;
  };
  std::vector<Part> parts;
  KernelCache kernels;  // by (name, op, device), as the in-process Session keys them
};

Worker::Worker(ClusterSpec cluster, std::string job, int task, ClusterOptions options,
               int cpu_devices)
    : cluster_(std::move(cluster)),
      job_(std::move(job)),
      task_(task),
      task_name_(fmt::format("/job:{}/replica:0/task:{}", job_, task_)),
      options_(std::move(options)),
      incarnation_(std::random_device()() * (uint64_t{1} << 32) + std::random_device()()) {
  std::vector<std::unique_ptr<Device>> made;
  for (int i = 0; i < std::max(1, cpu_devices); ++i) made.push_back(NewCpuDevice(i));
  GpuOptions gpu;
  auto plan = PlanGpuDevices(CudaDeviceCount(), gpu).ValueOrThrow();
  for (auto& d : CreateGpuDevices(plan, gpu).ValueOrThrow()) made.push_back(std::move(d));
  for (auto& d : made) {
    d->SetTask(job_, 0, task_);
    d->set_incarnation(incarnation_);
    devices_.Add(std::move(d));
  }
}

Worker::~Worker() = default;

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

StatusOr<std::shared_ptr<grpc::GenericStub>> Worker::PeerStub(const std::string& job, int task,
                                                              int stream, std::string* address) {
  PF_ASSIGN_OR_RETURN(*address, cluster_.TaskAddress(job, task));
  std::lock_guard<std::mutex> lock(mu_);
  auto& stub = peers_[{*address, stream}];
  if (!stub) {
    PF_ASSIGN_OR_RETURN(auto channel, NewChannel(*address, options_, stream));
    stub = std::make_shared<grpc::GenericStub>(channel);
  }
  return stub;
}

std::shared_ptr<StepRendezvous> Worker::FindOrCreateStep(int64_t step_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_.count(step_id)) return nullptr;
  auto& step = steps_[step_id];
  if (!step) step = std::make_shared<StepRendezvous>(this, step_id);
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

#define PF_CHECK_TOKEN(method)                                               \
  auto* reactor = ctx->DefaultReactor();                                     \
  if (grpc::Status st = CheckToken(ctx, options_.token, method); !st.ok()) { \
    reactor->Finish(st);                                                     \
    return reactor;                                                          \
  }

grpc::ServerUnaryReactor* Worker::GetStatus(grpc::CallbackServerContext* ctx,
                                            const rpc::GetStatusRequest*,
                                            rpc::GetStatusResponse* resp) {
  PF_CHECK_TOKEN("GetStatus");
  ListDevices(resp->mutable_device());
  resp->set_incarnation(incarnation_);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

StatusOr<std::shared_ptr<Worker::Registration>> Worker::Register(
    const rpc::RegisterGraphRequest& req) {
  auto reg = std::make_shared<Registration>();
  for (const rpc::PartitionProto& pp : req.partition()) {
    Registration::Part part;
    part.device = devices_.Find(pp.device());
    if (part.device == nullptr) {
      return errors::InvalidArgument("Device ", pp.device(), " is not on task ", task_name_,
                                     " (its devices: ", devices_.NamesForError(), ")");
    }
    ExecutorSpec spec;
    PF_ASSIGN_OR_RETURN(part.graph, GraphFromProto(pp.graph(), &spec.nodes));
    for (const Node* n : part.graph->nodes()) spec.device[n] = part.device;
    for (const std::string& arg : pp.feed()) {
      PF_ASSIGN_OR_RETURN(Output o, FindOutput(*part.graph, arg));
      spec.feeds.push_back(o);
      part.feed_on_host.push_back(FeedStaysOnHost(*o.node, *part.device));
    }
    for (const std::string& f : pp.fetch()) {
      PF_ASSIGN_OR_RETURN(Output o, FindOutput(*part.graph, f));
      spec.fetches.push_back(o);
      const Node* var = AliasedVariable(o);
      part.snapshot_var.push_back(var ? var->name() : std::string());
    }
    for (int k = 0; k < pp.fetch_size(); ++k)
      part.snapshot.push_back(k < pp.fetch_snapshot_size() && pp.fetch_snapshot(k));
    spec.devices = &devices_;
    Registration* r = reg.get();
    auto kernels = [r](const Node& n, Device* d) { return r->kernels.Get(n, d); };
    PF_ASSIGN_OR_RETURN(part.executor, Executor::Create(spec, kernels));
    reg->parts.push_back(std::move(part));
  }
  return reg;
}

grpc::ServerUnaryReactor* Worker::RegisterGraph(grpc::CallbackServerContext* ctx,
                                                const rpc::RegisterGraphRequest* req,
                                                rpc::RegisterGraphResponse* resp) {
  PF_CHECK_TOKEN("RegisterGraph");
  auto reg = Register(*req);
  if (!reg.ok()) {
    reactor->Finish(ToGrpc(reg.status().WithSuffix(fmt::format(" (on task {})", task_name_))));
    return reactor;
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::string handle = fmt::format("{:x}/{}", incarnation_, next_graph_++);
  graphs_[handle] = std::move(reg).value();
  resp->set_graph_handle(handle);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* Worker::DeregisterGraph(grpc::CallbackServerContext* ctx,
                                                  const rpc::DeregisterGraphRequest* req,
                                                  rpc::DeregisterGraphResponse*) {
  PF_CHECK_TOKEN("DeregisterGraph");
  std::lock_guard<std::mutex> lock(mu_);
  graphs_.erase(req->graph_handle());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* Worker::RunGraph(grpc::CallbackServerContext* ctx,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* resp) {
  PF_CHECK_TOKEN("RunGraph");
  // Raw: the feeds' bytes follow the header; they are copied once, into the feed tensors.
  rpc::RunGraphRequest header;
  const rpc::RunGraphRequest* req = &header;
  RawReader reader;
  if (Status s = reader.Open(request, &header); !s.ok()) {
    reactor->Finish(ToGrpc(s));
    return reactor;
  }
  std::shared_ptr<Registration> reg;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = graphs_.find(req->graph_handle()); it != graphs_.end()) reg = it->second;
  }
  if (!reg) {
    reactor->Finish(
        ToGrpc(errors::NotFound("Graph handle ", req->graph_handle(), " is not registered on task ",
                                task_name_, " (the task restarted?)")
                   .WithReason(Reason::kGraphNotRegistered)));
    return reactor;
  }
  for (int64_t ended : req->ended_step()) EndStep(ended);
  std::shared_ptr<StepRendezvous> step = FindOrCreateStep(req->step_id());
  if (!step) {
    reactor->Finish(
        ToGrpc(errors::Aborted("Step ", req->step_id(), " already ended on task ", task_name_)));
    return reactor;
  }
  if (Status aborted = step->aborted(); !aborted.ok()) {
    reactor->Finish(ToGrpc(aborted));  // run none of its nodes (no side effects)
    return reactor;
  }
  // The step's state lives until the last partition finishes.
  struct Run {
    std::shared_ptr<Registration> reg;
    std::shared_ptr<StepRendezvous> step;
    std::unique_ptr<RunMetadata> trace;  // when the client asked for one
    int64_t start_unix_us = 0;
    std::unique_ptr<StepGroup> group;
    std::vector<std::vector<Tensor>> feeds, fetches;
    std::atomic<int> remaining{0};
  };
  auto run = std::make_shared<Run>();
  run->reg = reg;
  run->step = step;
  if (req->trace()) run->trace = std::make_unique<RunMetadata>();
  run->start_unix_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  run->group = std::make_unique<StepGroup>(run->trace.get(), step.get());
  // The timeout holds the run while it fires (it may end the step); the step's end disarms it.
  run->group->SetTimeout(req->timeout_ms(), run);
  run->feeds.resize(reg->parts.size());
  run->fetches.resize(reg->parts.size());
  int k = 0;
  for (size_t i = 0; i < reg->parts.size(); ++i) {
    const Registration::Part& part = reg->parts[i];
    for (size_t f = 0; f < part.feed_on_host.size(); ++f, ++k) {
      StatusOr<Tensor> t = k < req->feed_size() ? ReadTensor(&reader, req->feed(k))
                                                : errors::InvalidArgument("Too few feeds");
      if (t.ok() && !part.feed_on_host[f])
        t = CopyRegistry::Global()->Copy(*t, devices_.host(), part.device);
      if (!t.ok()) {
        reactor->Finish(ToGrpc(t.status()));
        return reactor;
      }
      run->feeds[i].push_back(std::move(t).value());
    }
  }
  run->remaining = static_cast<int>(reg->parts.size());
  auto finish = [this, run, reactor, resp] {
    run->group->CancelTimeout();
    Status s = run->group->status();
    for (const Registration::Part& part : run->reg->parts) {
      Status synced = part.device->Sync();
      if (s.ok() && !synced.ok()) s = synced;
    }
    rpc::RunGraphResponse header;
    std::vector<TensorRange> parts;
    for (size_t i = 0; s.ok() && i < run->reg->parts.size(); ++i) {
      const Registration::Part& part = run->reg->parts[i];
      for (size_t k = 0; k < run->fetches[i].size(); ++k) {
        Tensor& t = run->fetches[i][k];
        if (!t.InHostMemory()) {
          auto host = CopyRegistry::Global()->Copy(t, part.device, devices_.host());
          if (!host.ok()) {
            s = host.status();
            break;
          }
          t = std::move(host).value();
        } else if (part.snapshot[k]) {
          // May view a variable that a later step updates while this is sent.
          VarState* var = part.snapshot_var[k].empty()
                              ? nullptr
                              : part.device->resource_mgr()->LookupVar(part.snapshot_var[k]);
          std::unique_lock<std::mutex> lock;
          if (var != nullptr) lock = std::unique_lock<std::mutex>(var->mu);
          t = t.Clone();
        }
        TensorMeta(t, header.add_fetch());
        parts.push_back({t});
      }
    }
    if (run->trace) {
      header.set_start_unix_us(run->start_unix_us);
      for (const NodeExecStats& n : run->trace->step_stats) {
        rpc::NodeStatsProto* p = header.add_stats();
        p->set_node(n.node);
        p->set_op(n.op);
        p->set_device(n.device);
        p->set_thread(n.thread);
        p->set_start_us(n.start_us);
        p->set_end_us(n.end_us);
        p->set_output_bytes(n.output_bytes);
      }
    }
    if (s.ok()) *resp = EncodeRaw(header, parts);
    reactor->Finish(ToGrpc(s));
  };
  auto start = [run, finish, step_id = req->step_id()](size_t i) {
    run->reg->parts[i].executor->RunAsync(run->feeds[i], &run->fetches[i], step_id,
                                          run->group.get(), [run, finish] {
                                            if (run->remaining.fetch_sub(1) == 1) finish();
                                          });
  };
  // As Session::Run: other partitions start on the pool, the first on this thread (an
  // executor runs cheap nodes inline and hands expensive ones to the pool, so a long step
  // does not hold this gRPC thread; a thread hop costs ~100 us on a small VM).
  for (size_t i = 1; i < reg->parts.size(); ++i)
    ThreadPool::Default()->Schedule([start, i] { start(i); });
  if (reg->parts.empty()) {
    finish();
  } else {
    start(0);
  }
  return reactor;
}

grpc::ServerUnaryReactor* Worker::AbortStep(grpc::CallbackServerContext* ctx,
                                            const rpc::AbortStepRequest* req,
                                            rpc::AbortStepResponse*) {
  PF_CHECK_TOKEN("AbortStep");
  // Aborted, whatever the cause's code: the client reports the cause from the task where it
  // happened, not this task's reaction to it.
  if (auto step = FindOrCreateStep(req->step_id()))
    step->StartAbort(
        errors::Aborted("Step aborted because of an error on another task: ", req->message()));
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* Worker::CleanupStep(grpc::CallbackServerContext* ctx,
                                              const rpc::CleanupStepRequest* req,
                                              rpc::CleanupStepResponse*) {
  PF_CHECK_TOKEN("CleanupStep");
  // Wakes anything still waiting in the step (a RecvTensor of a step that failed elsewhere).
  if (auto step = EndStep(req->step_id())) step->StartAbort(errors::Aborted("Step ended"));
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* Worker::RecvTensor(grpc::CallbackServerContext* ctx,
                                             const grpc::ByteBuffer* req_bytes,
                                             grpc::ByteBuffer* resp) {
  PF_CHECK_TOKEN("RecvTensor");
  rpc::RecvTensorRequest req;
  grpc::Slice whole;
  if (!req_bytes->TrySingleSlice(&whole).ok() && !req_bytes->DumpToSingleSlice(&whole).ok()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unreadable request"));
    return reactor;
  }
  if (!req.ParseFromArray(whole.begin(), static_cast<int>(whole.size()))) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed request"));
    return reactor;
  }
  Device* src = devices_.Find(std::string(Rendezvous::SendDevice(req.key())));
  if (src == nullptr) {  // nothing here will ever send it
    reactor->Finish(ToGrpc(errors::InvalidArgument(
        "RecvTensor of '", req.key(), "': its sender is not a device of task ", task_name_)));
    return reactor;
  }
  // A key made for this task's previous life (the master partitioned before the restart):
  // its tensor will never be sent. TensorFlow's message and code.
  if (const uint64_t want = Rendezvous::SendIncarnation(req.key());
      want != 0 && want != src->incarnation()) {
    reactor->Finish(
        ToGrpc(errors::Aborted(
                   "RecvTensor expects a different device incarnation: ", want, " vs. ",
                   src->incarnation(), ". Your worker job (\"", task_name_,
                   "\") was probably restarted. Check your worker job for the reason why it was "
                   "restarted.")
                   .WithReason(Reason::kStaleIncarnation)));
    return reactor;
  }
  std::shared_ptr<StepRendezvous> step = FindOrCreateStep(req.step_id());
  if (!step) {
    reactor->Finish(
        ToGrpc(errors::Aborted("Step ", req.step_id(), " already ended on task ", task_name_)));
    return reactor;
  }
  const int64_t offset = req.offset(), max_bytes = req.max_bytes();
  step->RecvLocal(req.key(), src, devices_.host(),
                  [reactor, resp, offset, max_bytes](const Status& s, const Tensor& t) {
                    if (!s.ok()) return reactor->Finish(ToGrpc(s));
                    rpc::RecvTensorHeader header;
                    header.set_dtype(t.dtype());
                    ShapeToProto(t.shape(), header.mutable_shape());
                    header.set_offset(std::clamp<int64_t>(offset, 0, t.TotalBytes()));
                    *resp = EncodeRaw(header, {{t, offset, max_bytes > 0 ? max_bytes : -1}});
                    reactor->Finish(grpc::Status::OK);
                  });
  return reactor;
}

}  // namespace pf
