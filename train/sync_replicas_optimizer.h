// SyncReplicasOptimizer: synchronous data parallelism across the workers of a cluster
// (between-graph replication), TensorFlow's tf.train.SyncReplicasOptimizer.
//
//   pf::train::GradientDescent sgd(0.1);
//   pf::train::SyncReplicasOptimizer sync(sgd, /*replicas_to_aggregate=*/2);
//   pf::Operation train_op = sync.Minimize(s, loss, step);   // every worker, every step
//   // chief, once, after the variables are ready:  sync.chief_init_op(), sync.InitTokensOp(s)
//   // chief, on a thread of its own, in a loop:      sync.chief_update_op()
//   // every worker, after the variables are ready:  sync.local_step_init_op()
//
// A worker's step puts each gradient into its variable's accumulator (on the variable's ps
// task), tagged with the worker's local step, then waits for a token from the token queue (next
// to the global step) and takes its value as its new local step. The chief's update waits until
// every accumulator holds `replicas_to_aggregate` gradients of the current global step, applies
// their mean with the wrapped optimizer (which advances the global step), and puts
// max(total_num_replicas, replicas_to_aggregate) tokens with the new global step in the queue.
// Gradients from an older step arrive stale: the accumulator drops and counts them
// (num_dropped). With total_num_replicas > replicas_to_aggregate the extra workers are backups:
// each update uses the first gradients that arrive. The waits are asynchronous kernels (no
// thread is held); RunOptions.timeout_in_ms bounds them.
//
// One difference from TensorFlow: InitTokensOp's default puts in max(0, replicas_to_aggregate -
// total_num_replicas) tokens (the tokens progress needs), not replicas_to_aggregate, so the first
// step is as synchronous as the others instead of producing one round of stale gradients.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "placeflow/executor/session.h"
#include "placeflow/ops/ops.h"
#include "placeflow/train/optimizers.h"

namespace pf::train {

class SyncReplicasOptimizer {
 public:
  // `opt` must outlive ApplyGradients. total_num_replicas <= 0: replicas_to_aggregate. Throws
  // pf::Error for replicas_to_aggregate < 1.
  SyncReplicasOptimizer(Optimizer& opt, int replicas_to_aggregate, int total_num_replicas = 0);

  // Builds the worker's train op, the chief's ops and this worker's local step (a local
  // variable on `scope`'s device). Call once.
  Operation ApplyGradients(const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
                           const Variable& global_step);
  Operation Minimize(const Scope& scope, Output loss, const Variable& global_step);

  // What the chief runs in a loop (TensorFlow's chief queue runner): waits for the gradients,
  // applies them, hands out the next step's tokens.
  Operation chief_update_op() const { return chief_update_; }
  // Sets every accumulator's step to the global step: the chief runs it once the variables are
  // ready (and again after a restore or a failed update).
  Operation chief_init_op() const { return chief_init_; }
  // What the chief runs after an update failed because a task went away (SyncReplicasChief
  // does): chief_init_op, then a token with the global step for every worker, so workers
  // waiting for the update go on.
  Operation chief_rearm_op() const { return chief_rearm_; }
  // Sets this worker's local step to the global step (every worker, at start and after a
  // restore).
  Operation local_step_init_op() const { return local_step_init_; }
  // Puts `num_tokens` tokens with the global step in the queue (-1: the default above).
  Operation InitTokensOp(const Scope& scope, int num_tokens = -1) const;
  // Stale gradients dropped so far: worker steps whose gradients arrived for an older global
  // step (int64; every variable's accumulator drops the same ones, this counts them once).
  Output num_dropped() const { return num_dropped_; }
  // The global step right after chief_update_op's update (fetch it with chief_update_op).
  Output step_after_update() const { return step_after_update_; }
  const Variable& local_step() const { return local_step_; }
  // The train op's result: this worker's new local step, the global step of the update its
  // token came from (fetch it with the train op to know where training stands).
  Output next_local_step() const { return next_local_step_; }
  int replicas_to_aggregate() const { return replicas_to_aggregate_; }
  int total_num_replicas() const { return total_num_replicas_; }

 private:
  Optimizer& opt_;
  int replicas_to_aggregate_, total_num_replicas_;
  Variable global_step_, local_step_;
  ops::SharedResource tokens_;
  Operation chief_update_, chief_init_, chief_rearm_, local_step_init_;
  Output num_dropped_, step_after_update_, next_local_step_;
};

// The chief's update loop (TensorFlow's chief queue runner): runs chief_update_op on a thread of
// its own until the global step reaches `last_step` (0: no limit), Stop(), or an error that is
// not transient. An update that waits longer than `timeout_s` for gradients (a worker died and
// no backup covers it) is logged and tried again after chief_init_op; one that meets a task that
// went away (a ps restart) is tried again after chief_rearm_op: gradients the failed attempt
// already took are lost, and the waiting workers get a token each to hand in fresh ones.
class SyncReplicasChief {
 public:
  // `session` and `opt` must outlive this object.
  SyncReplicasChief(Session& session, const SyncReplicasOptimizer& opt, int64_t last_step = 0,
                    double timeout_s = 60);
  ~SyncReplicasChief();  // Stop()
  // Ends the loop after the current attempt (at most timeout_s) and joins the thread.
  void Stop();
  Status status() const;  // the error that ended the loop (OK when none)
  int64_t updates() const { return updates_.load(); }

 private:
  void Loop();
  Session& session_;
  const SyncReplicasOptimizer& opt_;
  int64_t last_step_;
  double timeout_s_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> updates_{0};
  mutable std::mutex mu_;
  Status status_;
  std::thread thread_;
};

}  // namespace pf::train
