#include "placeflow/distributed/server.h"

#include <algorithm>
#include <condition_variable>

#include "placeflow/core/logging.h"
#include "placeflow/distributed/grpc_worker_service.h"
#include "placeflow/distributed/rpc_util.h"

namespace pf {
namespace {

// The master service: tells a client session the cluster and every task's devices, waiting
// (bounded) for tasks that are not up yet.
class Master final : public rpc::MasterService::CallbackService {
 public:
  Master(const ClusterSpec& cluster, Worker* local, std::string job, int task,
         const ClusterOptions& options)
      : cluster_(cluster), local_(local), job_(std::move(job)), task_(task), options_(options) {}
  // Before serving: the cluster with the port bound for this task (the spec said port 0).
  void set_cluster(ClusterSpec cluster) { cluster_ = std::move(cluster); }

  grpc::ServerUnaryReactor* GetCluster(grpc::CallbackServerContext* ctx,
                                       const rpc::GetClusterRequest* req,
                                       rpc::GetClusterResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    if (!Authorized(ctx, reactor, options_.token, "GetCluster")) return reactor;
    for (const auto& [job, tasks] : cluster_.jobs()) {
      rpc::JobProto* jp = resp->mutable_cluster()->add_job();
      jp->set_name(job);
      for (const std::string& a : tasks) jp->add_address(a);
    }
    resp->set_job(job_);
    resp->set_task(task_);
    // Every other task answers GetStatus (waiting for it to come up, until the deadline).
    if (Status s = OtherTasksHaveRealPorts(); !s.ok()) {
      reactor->Finish(ToGrpc(s));
      return reactor;
    }
    auto state = std::make_shared<State>();
    const double wait_s = std::clamp(req->wait_s(), 0.1, 24 * 3600.0);
    for (const auto& [job, tasks] : cluster_.jobs()) {
      for (size_t i = 0; i < tasks.size(); ++i) {
        if (job == job_ && static_cast<int>(i) == task_) continue;
        auto poll = std::make_unique<Poll>();
        poll->name = fmt::format("/job:{}/replica:0/task:{}", job, i);
        poll->address = tasks[i];
        auto channel = NewChannel(tasks[i], options_);
        if (!channel.ok()) {
          reactor->Finish(ToGrpc(channel.status()));
          return reactor;
        }
        poll->stub = rpc::WorkerService::NewStub(*channel);
        state->polls.push_back(std::move(poll));
      }
    }
    auto finish = [this, state, reactor, resp, wait_s] {
      local_->ListDevices(resp->mutable_device());
      for (auto& p : state->polls) {
        if (!p->status.ok()) {
          bool waited = p->status.code() == Code::kDeadlineExceeded;
          Status s = errors::Unavailable(
              waited ? fmt::format("Timed out after {} s waiting for task {} at {} to answer "
                                   "(is its server started? same TLS settings?): ",
                                   wait_s, p->name, p->address)
                     : fmt::format("Task {} at {} did not answer: ", p->name, p->address),
              p->status.message());
          if (p->status.code() == Code::kUnauthenticated) s = p->status;
          return reactor->Finish(ToGrpc(s));
        }
        for (const auto& d : p->resp.device()) *resp->add_device() = d;
      }
      reactor->Finish(grpc::Status::OK);
    };
    state->remaining = static_cast<int>(state->polls.size());
    if (state->polls.empty()) {
      finish();
      return reactor;
    }
    const auto deadline =
        std::chrono::system_clock::now() + std::chrono::milliseconds(int64_t(wait_s * 1000));
    for (auto& p : state->polls) {
      Poll* raw = p.get();
      raw->ctx.set_wait_for_ready(true);  // retry connecting (with backoff) until the deadline
      raw->ctx.set_deadline(deadline);
      AddToken(&raw->ctx, options_);
      raw->stub->async()->GetStatus(&raw->ctx, &raw->req, &raw->resp,
                                    [state, raw, finish](grpc::Status s) {
                                      raw->status = FromGrpc(s, "GetStatus");
                                      if (state->remaining.fetch_sub(1) == 1) finish();
                                    });
    }
    return reactor;
  }

 private:
  // One other task's GetStatus call, and all of them.
  struct Poll {
    std::string name, address;
    grpc::ClientContext ctx;
    rpc::GetStatusRequest req;
    rpc::GetStatusResponse resp;
    std::unique_ptr<rpc::WorkerService::Stub> stub;
    Status status;
  };
  struct State {
    std::vector<std::unique_ptr<Poll>> polls;
    std::atomic<int> remaining{0};
  };

  // A task at port 0 would be waited for until the deadline, in vain.
  Status OtherTasksHaveRealPorts() const {
    for (const auto& [job, tasks] : cluster_.jobs()) {
      for (size_t i = 0; i < tasks.size(); ++i) {
        if ((job != job_ || static_cast<int>(i) != task_) && tasks[i].ends_with(":0")) {
          return errors::InvalidArgument(
              "Task /job:", job, "/replica:0/task:", i, " has port 0 in the cluster spec (",
              tasks[i],
              "): only a server can bind port 0, for itself; the other tasks need its real port");
        }
      }
    }
    return Status::OK();
  }

  ClusterSpec cluster_;
  Worker* local_;
  std::string job_;
  int task_;
  ClusterOptions options_;
};

// `cluster` with task `task` of `job` at `address`.
ClusterSpec WithTaskAddress(const ClusterSpec& cluster, const std::string& job, int task,
                            const std::string& address) {
  ClusterSpec::Jobs jobs = cluster.jobs();
  jobs.at(job).at(task) = address;
  return ClusterSpec(std::move(jobs));
}

}  // namespace

struct Server::Impl {
  std::string address, target;
  ClusterSpec cluster;
  std::unique_ptr<Worker> worker;
  std::unique_ptr<GrpcWorkerService> worker_service;
  std::unique_ptr<Master> master;
  std::unique_ptr<grpc::Server> server;
  std::mutex mu;
  std::condition_variable stopped_cv;
  bool stopping = false, stopped = false;
};

Server::Server(const ClusterSpec& cluster, const std::string& job, int task, ServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->address = cluster.TaskAddress(job, task).ValueOrThrow();
  impl_->cluster = cluster;
  const std::string host = impl_->address.substr(0, impl_->address.rfind(':'));
  const bool any_port = impl_->address.substr(host.size() + 1) == "0";
  std::string bind = impl_->address;
  if (options.bind_all_interfaces) bind = "0.0.0.0" + bind.substr(bind.rfind(':'));
  auto creds = NewServerCredentials(options.cluster).ValueOrThrow();
  impl_->worker =
      std::make_unique<Worker>(cluster, job, task, options.cluster, options.cpu_devices);
  impl_->worker_service = std::make_unique<GrpcWorkerService>(impl_->worker.get());
  impl_->master =
      std::make_unique<Master>(cluster, impl_->worker.get(), job, task, options.cluster);
  grpc::ServerBuilder builder;
  SetCommonArguments(&builder);
  int port = 0;
  builder.AddListeningPort(bind, creds, &port);
  builder.RegisterService(impl_->worker_service.get());
  builder.RegisterService(impl_->master.get());
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || port == 0) {
    throw Error(errors::Unavailable("Server for task ", impl_->worker->task_name(),
                                    " could not listen on ", bind,
                                    " (the port is in use, or the host is not an address of "
                                    "this machine)"));
  }
  if (any_port) {
    // gRPC chose the port (selected_port): what this task's services tell others must name it,
    // as TF's GrpcServer does with its bound_port_. Nobody can reach this task before the
    // constructor returns the port, so the services are updated before their first call.
    impl_->address = fmt::format("{}:{}", host, port);
    impl_->cluster = WithTaskAddress(cluster, job, task, impl_->address);
    impl_->worker->set_cluster(impl_->cluster);
    impl_->master->set_cluster(impl_->cluster);
  }
  impl_->target = "grpc://" + impl_->address;
  PF_LOG_INFO("Started server {} for task {} ({} devices)", impl_->target,
              impl_->worker->task_name(), impl_->worker->devices().devices().size());
}

Server::~Server() { Stop(); }

std::string Server::target() const { return impl_->target; }
const ClusterSpec& Server::cluster() const { return impl_->cluster; }
const std::string& Server::task_name() const { return impl_->worker->task_name(); }
const DeviceSet& Server::devices() const { return impl_->worker->devices(); }

void Server::Join() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->stopped_cv.wait(lock, [this] { return impl_->stopped; });
}

void Server::Stop() {
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    if (impl_->stopping) {  // another caller is stopping it: wait until it is done
      impl_->stopped_cv.wait(lock, [this] { return impl_->stopped; });
      return;
    }
    impl_->stopping = true;
  }
  // Steps still waiting (a client died mid-step) would keep their calls, and Shutdown, open.
  impl_->worker->AbortAllSteps(
      errors::Unavailable("Task ", impl_->worker->task_name(), " is shutting down"));
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  impl_->server->Wait();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopped = true;
  }
  impl_->stopped_cv.notify_all();
}

}  // namespace pf
