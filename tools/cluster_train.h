// pf-train's cluster modes (seed articles 001 and 002): one task of a ps/worker cluster, or a
// whole local cluster of pf-train processes on loopback.
//
//   pf-train --job-name ps --task-index 0 --ps-hosts h:2222 --worker-hosts h:2223,h:2224
//   pf-train --job-name worker --task-index 1 --ps-hosts ... --worker-hosts ... --model mnist_mlp
//   pf-train --local-cluster ps=1,worker=2 --model mnist_mlp --epochs 2
//
// Between-graph replication: every worker builds the model under a ReplicaDeviceSetter
// (variables on the ps tasks), opens a session on its own server and trains on its own batches.
// Asynchronous by default: updates land on the ps without coordination. With --sync-replicas
// the optimizer is a SyncReplicasOptimizer: each update averages --replicas-to-aggregate
// gradients (default: one per worker) and the chief runs the update loop. Worker 0 is the
// chief: it initialises (or restores) the variables and writes the checkpoints; the others wait
// until every variable is initialised.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tools/cluster_role.h"

namespace pf {
class Server;
}  // namespace pf

namespace pf::cluster {

// This process's task: its server (started by the constructor) and, for a worker, where its
// ops go. Throws pf::Error for bad flags or an address that cannot be bound.
class Task : public ClusterRole {
 public:
  explicit Task(const TaskFlags& flags);
  ~Task() override;
  bool is_ps() const override { return flags_.job_name == "ps"; }
  bool is_chief() const override { return flags_.job_name == "worker" && flags_.task_index == 0; }
  int index() const override { return flags_.task_index; }
  int num_workers() const override { return num_workers_; }
  std::string target() const override;
  Scope Place(const Scope& root) const override;
  int Serve() override;
  void WaitForChief(Session& sess, Graph& g, double timeout_s = 120) const override;
  bool RecoverStep(Session& sess, Graph& g, const Error& error,
                   const std::function<void()>& restore, double timeout_s = 120) const override;

 private:
  TaskFlags flags_;
  int num_ps_ = 0, num_workers_ = 0;
  std::unique_ptr<Server> server_;
};

}  // namespace pf::cluster
