// Worker: what one task of a cluster does for the masters, without the transport. It owns the
// task's devices (variables live in their resource managers, so they outlive client sessions),
// registers the partitions a master sends, runs them per step, and hands the step's tensors to
// other tasks. distributed/grpc_worker_service.h serves it over gRPC; the methods that wait
// (a step, a tensor not sent yet) call `done` later and hold no thread meanwhile.
//
//   pf::Worker worker(cluster, "worker", 1, options);   // creates /job:worker/.../task:1 devices
//   auto call = std::make_shared<pf::RunGraphCall>();    // request header + feeds
//   worker.RunGraphAsync(call, [call](const pf::Status& s) { /* call->fetches */ });
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "placeflow/devices/device_set.h"
#include "placeflow/distributed/cluster_spec.h"
#include "placeflow/distributed/rpc.pb.h"
#include "placeflow/executor/session.h"

namespace pf {

class PeerChannels;
class StepRendezvous;

// One RunGraph: the request's header and its feeds (host tensors, in the header's order) in,
// the response's header (trace) and the fetches (host tensors, in the partitions' order) out.
struct RunGraphCall {
  rpc::RunGraphRequest request;
  std::vector<Tensor> feeds;
  rpc::RunGraphResponse response;
  std::vector<Tensor> fetches;
};

class Worker {
 public:
  Worker(ClusterSpec cluster, std::string job, int task, ClusterOptions options,
         int cpu_devices = 1);
  ~Worker();

  const std::string& task_name() const { return task_name_; }  // "/job:J/replica:0/task:T"
  const DeviceSet& devices() const { return devices_; }
  const ClusterOptions& options() const { return options_; }
  // Before serving only: the cluster with the port bound for this task (its spec said port 0).
  void set_cluster(ClusterSpec cluster);
  void ListDevices(google::protobuf::RepeatedPtrField<rpc::DeviceProto>* out) const;

  void GetStatus(rpc::GetStatusResponse* resp) const;
  // Builds the executors of the request's partitions. Errors name the task.
  Status RegisterGraph(const rpc::RegisterGraphRequest& req, rpc::RegisterGraphResponse* resp);
  void DeregisterGraph(const rpc::DeregisterGraphRequest& req);
  // Runs one step of a registered graph; `done` gets its status once every partition finished
  // (call->fetches and call->response filled when OK). Before the step starts, errors come at
  // once: an unknown handle (Reason::kGraphNotRegistered), a step that already ended or was
  // aborted, too few feeds.
  void RunGraphAsync(std::shared_ptr<RunGraphCall> call, std::function<void(Status)> done);
  void AbortStep(const rpc::AbortStepRequest& req);
  void CleanupStep(const rpc::CleanupStepRequest& req);
  // Another task's RecvTensor: `done` gets the host value this task's _Send left under
  // `req.key()` in step `req.step_id()`, when it is sent.
  void RecvTensorAsync(const rpc::RecvTensorRequest& req,
                       std::function<void(const Status&, const Tensor&)> done);
  // Aborts every step in progress on this task (the server is stopping).
  void AbortAllSteps(const Status& status);

 private:
  struct Registration;
  struct Run;
  // The rendezvous of step `step_id` on this task (made by whichever comes first: the step's
  // RunGraph or another task's RecvTensor), or null when the step already ended here.
  std::shared_ptr<StepRendezvous> FindOrCreateStep(int64_t step_id);
  std::shared_ptr<StepRendezvous> EndStep(int64_t step_id);
  StatusOr<std::shared_ptr<Registration>> Register(const rpc::RegisterGraphRequest& req);
  // The steps of RunGraphAsync.
  StatusOr<std::shared_ptr<Run>> StartRun(const RunGraphCall& call);
  Status StageFeeds(RunGraphCall* call, Run* run);
  Status FinishRun(Run* run, RunGraphCall* call);

  ClusterSpec cluster_;
  std::string job_;
  int task_;
  std::string task_name_;
  ClusterOptions options_;
  uint64_t incarnation_;
  DeviceSet devices_;
  std::unique_ptr<PeerChannels> peers_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Registration>> graphs_;
  int64_t next_graph_ = 0;
  std::map<int64_t, std::shared_ptr<StepRendezvous>> steps_;
  std::set<int64_t> ended_;          // recently ended steps: a late RecvTensor fails at once
  std::deque<int64_t> ended_order_;  // oldest first, bounded
};

}  // namespace pf
