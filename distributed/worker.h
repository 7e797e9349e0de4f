// Worker: the worker service of one task. It owns the task's devices (variables live in their
// resource managers, so they outlive client sessions), registers partitions sent by masters,
// runs them per step, and serves the step's tensors to other tasks (RecvTensor). Every handler
// uses gRPC's callback API: a RunGraph or a RecvTensor waiting for its value holds no thread.
//
//   pf::Worker worker(cluster, "worker", 1, options);   // creates /job:worker/.../task:1 devices
//   builder.RegisterService(&worker);
#pragma once

#include <grpcpp/generic/generic_stub.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "placeflow/devices/device_set.h"
#include "placeflow/distributed/cluster_spec.h"
#include "placeflow/distributed/rpc.grpc.pb.h"
#include "placeflow/executor/session.h"

namespace pf {

class StepRendezvous;

// RunGraph and RecvTensor are raw (a header and tensor bytes as slices, distributed/coding.h).
class Worker final : public rpc::WorkerService::WithRawCallbackMethod_RunGraph<
                         rpc::WorkerService::WithRawCallbackMethod_RecvTensor<
                             rpc::WorkerService::CallbackService>> {
 public:
  Worker(ClusterSpec cluster, std::string job, int task, ClusterOptions options,
         int cpu_devices = 1);
  ~Worker() override;

  const std::string& task_name() const { return task_name_; }  // "/job:J/replica:0/task:T"
  const DeviceSet& devices() const { return devices_; }
  void ListDevices(google::protobuf::RepeatedPtrField<rpc::DeviceProto>* out) const;

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const rpc::GetStatusRequest* req,
                                      rpc::GetStatusResponse* resp) override;
  grpc::ServerUnaryReactor* RegisterGraph(grpc::CallbackServerContext* ctx,
                                          const rpc::RegisterGraphRequest* req,
                                          rpc::RegisterGraphResponse* resp) override;
  grpc::ServerUnaryReactor* DeregisterGraph(grpc::CallbackServerContext* ctx,
                                            const rpc::DeregisterGraphRequest* req,
                                            rpc::DeregisterGraphResponse* resp) override;
  grpc::ServerUnaryReactor* RunGraph(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                     grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* AbortStep(grpc::CallbackServerContext* ctx,
                                      const rpc::AbortStepRequest* req,
                                      rpc::AbortStepResponse* resp) override;
  grpc::ServerUnaryReactor* CleanupStep(grpc::CallbackServerContext* ctx,
                                        const rpc::CleanupStepRequest* req,
                                        rpc::CleanupStepResponse* resp) override;
  grpc::ServerUnaryReactor* RecvTensor(grpc::CallbackServerContext* ctx,
                                       const grpc::ByteBuffer* req,
                                       grpc::ByteBuffer* resp) override;

  // The generic stub of another task for RecvTensor on connection `stream` (made once each).
  StatusOr<std::shared_ptr<grpc::GenericStub>> PeerStub(const std::string& job, int task,
                                                        int stream, std::string* address);
  const ClusterOptions& options() const { return options_; }
  // Aborts every step in progress on this task (the server is stopping).
  void AbortAllSteps(const Status& status);

 private:
  struct Registration;
  // The rendezvous of step `step_id` on this task (made by whichever comes first: the step's
  // RunGraph or another task's RecvTensor), or null when the step already ended here.
  std::shared_ptr<StepRendezvous> FindOrCreateStep(int64_t step_id);
  std::shared_ptr<StepRendezvous> EndStep(int64_t step_id);
  StatusOr<std::shared_ptr<Registration>> Register(const rpc::RegisterGraphRequest& req);

  ClusterSpec cluster_;
  std::string job_;
  int task_;
  std::string task_name_;
  ClusterOptions options_;
  uint64_t incarnation_;
  DeviceSet devices_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Registration>> graphs_;
  int64_t next_graph_ = 0;
  std::map<int64_t, std::shared_ptr<StepRendezvous>> steps_;
  std::set<int64_t> ended_;          // recently ended steps: a late RecvTensor fails at once
  std::deque<int64_t> ended_order_;  // oldest first, bounded
  std::map<std::pair<std::string, int>, std::shared_ptr<grpc::GenericStub>> peers_;
};

}  // namespace pf
