// pf-train's cluster modes (seed articles 001 and 002): one task of a ps/worker cluster, or a
// whole local cluster of pf-train processes on loopback.
//
//   pf-train --job_name ps --task_index 0 --ps_hosts h:2222 --worker_hosts h:2223,h:2224
//   pf-train --job_name worker --task_index 1 --ps_hosts ... --worker_hosts ... --model mnist_mlp
//   pf-train --local-cluster ps=1,worker=2 --model mnist_mlp --epochs 2
//
// Between-graph replication: every worker builds the model under a ReplicaDeviceSetter
// (variables on the ps tasks), opens a session on its own server and trains on its own batches.
// Asynchronous by default: updates land on the ps without coordination. With --sync_replicas
// the optimizer is a SyncReplicasOptimizer: each update averages --replicas_to_aggregate
// gradients (default: one per worker) and the chief runs the update loop. Worker 0 is the
// chief: it initialises (or restores) the variables and writes the checkpoints; the others wait
// until every variable is initialised.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "placeflow/core/status.h"
#include "placeflow/graph/graph.h"
#include "placeflow/graph/scope.h"

namespace pf {
class Server;
class Session;
}  // namespace pf

namespace pf::cluster {

struct TaskFlags {
  std::string job_name;  // ps | worker
  int task_index = 0;
  std::string ps_hosts, worker_hosts;  // "h:p,h:p"
};

// This process's task: its server (started by the constructor) and, for a worker, where its
// ops go. Throws pf::Error for bad flags or an address that cannot be bound.
class Task {
 public:
  explicit Task(const TaskFlags& flags);
  ~Task();
  bool is_ps() const { return flags_.job_name == "ps"; }
  bool is_chief() const { return flags_.job_name == "worker" && flags_.task_index == 0; }
  int index() const { return flags_.task_index; }
  int num_workers() const { return num_workers_; }
  std::string target() const;
  // `root` with variables on the ps tasks and every other op on this worker.
  Scope Place(const Scope& root) const;
  // Serves until killed (a ps task's whole life).
  int Serve();
  // A non-chief's start-up: waits until every variable of `g` is initialised (by the chief),
  // printing what it waits for; throws after `timeout_s`.
  void WaitForChief(Session& sess, Graph& g, double timeout_s = 120) const;
  // A worker's answer to a failed training step: waits (up to `timeout_s`) until the ps tasks
  // answer again and every variable is initialised; the chief calls `restore` to bring back
  // variables a restarted ps lost (the last checkpoint, else the initialisers). Returns true
  // when the step may be tried again, false for errors that are not a task coming back.
  bool RecoverStep(Session& sess, Graph& g, const Error& error,
                   const std::function<void()>& restore, double timeout_s = 120) const;

 private:
  TaskFlags flags_;
  int num_ps_ = 0, num_workers_ = 0;
  std::unique_ptr<Server> server_;
};

// --local-cluster "ps=1,worker=2": runs this program once per task with the task flags added
// (free loopback ports), prefixes every line of their output with the task, waits for the
// workers, then stops the ps tasks. Ctrl-C stops them all. Returns the first failing worker's
// exit code, or 0.
int RunLocalCluster(const std::string& spec, int argc, char** argv);

}  // namespace pf::cluster
