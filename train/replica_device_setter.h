// ReplicaDeviceSetter: between-graph replication's device function (TensorFlow's
// tf.train.replica_device_setter). Every worker process builds the same graph under
// Apply(scope): each new variable goes to a ps task's CPU, round robin or to the ps task with the
// fewest bytes so far, and every other op to the worker device.
//
//   pf::train::ReplicaDeviceSetter setter(/*ps_tasks=*/2, "/job:worker/task:1");
//   pf::Scope s = setter.Apply(pf::Scope::Root(&g));
//   pf::Variable w = pf::GetVariable(s, "w", {784, 10});   // /job:ps/task:0/device:CPU:0
//   pf::Variable b = pf::GetVariable(s, "b", {10});        // /job:ps/task:1/device:CPU:0
//   pf::Output y = pf::ops::MatMul(s, x, w.value());       // /job:worker/task:1
//   // with a cluster: ReplicaDeviceSetter(cluster.num_tasks("ps"), worker_device)
//
// Optimizer slots and update ops follow their variable (they take it by reference), so the
// updates run on the ps. Reused variables keep their device and do not advance the choice.
#pragma once

#include <memory>
#include <string>

#include "placeflow/graph/scope.h"
#include "placeflow/graph/variable.h"

namespace pf::train {

enum class PsStrategy {
  kRoundRobin,    // variable i on ps task i % ps_tasks (TensorFlow's default)
  kGreedyBySize,  // each variable on the ps task holding the fewest bytes so far
};

class ReplicaDeviceSetter {
 public:
  // Throws pf::Error when ps_tasks < 1 or worker_device is malformed.
  ReplicaDeviceSetter(int ps_tasks, std::string worker_device,
                      PsStrategy strategy = PsStrategy::kRoundRobin, std::string ps_job = "ps");

  // `scope` with the worker device and a custom getter that puts new variables on the ps.
  Scope Apply(const Scope& scope) const;
  // The getter alone, for a variable scope whose ops are placed some other way.
  CustomGetter getter() const;
  // The ps device for a new variable of `bytes` (advances the choice).
  std::string NextPsDevice(int64_t bytes) const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared by every copy of the getter
  std::string worker_device_;
};

}  // namespace pf::train
