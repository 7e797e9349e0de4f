// The rendezvous of one step on one task, and the connections it pulls tensors over. Keys sent
// from this task's devices meet in a local table; a Recv of a key sent by another task pulls it
// from that task with RecvTensor (raw, distributed/coding.h): the first chunk on the task's main
// connection, the rest of a large tensor in chunks over several connections at once. Aborting
// wakes local waiters and cancels the pulls in flight.
//
//   pf::PeerChannels peers(cluster, options);
//   auto step = std::make_shared<pf::StepRendezvous>(&peers, "/job:worker/replica:0/task:1", id);
//   pf::StepGroup group(nullptr, step.get());    // the step's executors meet here
//   step->RecvLocal(key, src, host, done);       // serves another task's RecvTensor
#pragma once

#include <grpcpp/generic/generic_stub.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "placeflow/core/device_name.h"
#include "placeflow/devices/device.h"
#include "placeflow/distributed/cluster_spec.h"
#include "placeflow/executor/rendezvous.h"
#include "placeflow/executor/session.h"

namespace pf {

// The generic stubs to the cluster's other tasks, one per (address, connection), made once.
class PeerChannels {
 public:
  PeerChannels(ClusterSpec cluster, ClusterOptions options)
      : cluster_(std::move(cluster)), options_(std::move(options)) {}
  // The stub of task /job:`job`/task:`task` on connection `stream`; `address` is set to its
  // address (for errors).
  StatusOr<std::shared_ptr<grpc::GenericStub>> Stub(const std::string& job, int task, int stream,
                                                    std::string* address);
  const ClusterOptions& options() const { return options_; }

 private:
  ClusterSpec cluster_;
  ClusterOptions options_;
  std::mutex mu_;
  std::map<std::pair<std::string, int>, std::shared_ptr<grpc::GenericStub>> stubs_;
};

class StepRendezvous : public Rendezvous, public std::enable_shared_from_this<StepRendezvous> {
 public:
  // `task_name` is "/job:J/replica:0/task:T", the task this step runs on.
  StepRendezvous(PeerChannels* peers, std::string task_name, int64_t step_id)
      : peers_(peers), task_name_(std::move(task_name)), step_id_(step_id) {}

  Status Send(const std::string& key, const Tensor& value) override;
  void RecvAsync(const std::string& key, DoneCallback done) override;
  void StartAbort(const Status& status) override;
  Status aborted();

  // For another task's RecvTensor: the value this task's _Send left under `key`, in host
  // memory (received and, from a GPU, copied once per step and key, however many chunks are
  // pulled; held until the step ends).
  void RecvLocal(const std::string& key, Device* src, Device* host, DoneCallback done);

 private:
  struct Call;
  struct Chunk;
  using FetchCallback = std::function<void(Status, Chunk*)>;
  struct HostCopy {
    bool ready = false;
    Status status;
    Tensor value;
    std::vector<DoneCallback> waiters;
  };

  // Pulls `key` from task `src` (all chunks) into a new host tensor.
  void PullFromPeer(const DeviceName& src, const std::string& key, DoneCallback done);
  // One RecvTensor call for the bytes of `key` from `offset` (a chunk) on connection `stream`.
  void Fetch(const DeviceName& src, const std::string& key, int64_t offset, int stream,
             FetchCallback callback);
  // The first RecvLocal of `key` received its value (copied to host memory): every call's.
  void Finish(const std::string& key, const Status& status, const Tensor& value);

  PeerChannels* peers_;
  std::string task_name_;
  int64_t step_id_;
  LocalRendezvous local_;
  std::mutex mu_;
  Status aborted_;
  std::map<Call*, std::shared_ptr<grpc::ClientContext>> in_flight_;
  std::map<std::string, HostCopy> host_copies_;
};

}  // namespace pf
