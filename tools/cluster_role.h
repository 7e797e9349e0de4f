// pf-train's cluster role, whether or not this build has the cluster runtime: the task a process
// plays in a ps/worker cluster (tools/cluster_train.cc on gRPC), or, in a build without gRPC
// (PF_WITH_GRPC off), a stub (tools/cluster_role_stub.cc) whose functions say so. pf-train's
// steps use only this interface, so they hold no #ifdef.
//
//   if (!pf::cluster::ClusterAvailable()) ...;     // the flags are a usage error then
//   auto task = pf::cluster::JoinCluster({"worker", 0, "h:2222", "h:2223,h:2224"});
//   root = task->Place(root);                        // variables on the ps tasks
//   pf::SessionOptions o;  o.target = task->target();
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "placeflow/core/status.h"
#include "placeflow/graph/graph.h"
#include "placeflow/graph/scope.h"

namespace pf {
class Session;
}  // namespace pf

namespace pf::cluster {

struct TaskFlags {
  std::string job_name;  // ps | worker
  int task_index = 0;
  std::string ps_hosts, worker_hosts;  // "h:p,h:p"
};

// One task of a cluster: its server and, for a worker, where its ops go.
class ClusterRole {
 public:
  virtual ~ClusterRole() = default;
  virtual bool is_ps() const = 0;
  // Worker 0: initialises (or restores) the variables and writes the checkpoints.
  virtual bool is_chief() const = 0;
  virtual int index() const = 0;
  virtual int num_workers() const = 0;
  // The session target of this task's server ("grpc://...").
  virtual std::string target() const = 0;
  // `root` with variables on the ps tasks and every other op on this worker.
  virtual Scope Place(const Scope& root) const = 0;
  // Serves until killed (a ps task's whole life).
  virtual int Serve() = 0;
  // A non-chief's start-up: waits until every variable of `g` is initialised (by the chief),
  // printing what it waits for; throws after `timeout_s`.
  virtual void WaitForChief(Session& sess, Graph& g, double timeout_s = 120) const = 0;
  // A worker's answer to a failed training step: waits (up to `timeout_s`) until the ps tasks
  // answer again and every variable is initialised; the chief calls `restore` to bring back
  // variables a restarted ps lost (the last checkpoint, else the initialisers). Returns true
  // when the step may be tried again, false for errors that are not a task coming back.
  virtual bool RecoverStep(Session& sess, Graph& g, const Error& error,
                           const std::function<void()>& restore, double timeout_s = 120) const = 0;
};

// Whether this build has the cluster runtime; without it the functions below throw
// Unimplemented.
bool ClusterAvailable();
// Starts this process's task of the cluster (its server). Throws pf::Error for bad flags or an
// address that cannot be bound.
std::unique_ptr<ClusterRole> JoinCluster(const TaskFlags& flags);
// --local-cluster "ps=1,worker=2": runs this program once per task with the task flags added
// (free loopback ports), prefixes every line of their output with the task, waits for the
// workers, then stops the ps tasks. Ctrl-C stops them all. Returns the first failing worker's
// exit code, or 0.
int RunLocalCluster(const std::string& spec, int argc, char** argv);

}  // namespace pf::cluster
