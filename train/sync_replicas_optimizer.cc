#include "placeflow/train/sync_replicas_optimizer.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "placeflow/core/logging.h"

namespace pf::train {

SyncReplicasOptimizer::SyncReplicasOptimizer(Optimizer& opt, int replicas_to_aggregate,
                                             int total_num_replicas)
    : opt_(opt),
      replicas_to_aggregate_(replicas_to_aggregate),
      total_num_replicas_(total_num_replicas > 0 ? total_num_replicas : replicas_to_aggregate) {
  if (replicas_to_aggregate < 1) {
    throw Error(
        errors::InvalidArgument("SyncReplicasOptimizer: replicas_to_aggregate must be at "
                                "least 1, got ",
                                replicas_to_aggregate));
  }
}

Operation SyncReplicasOptimizer::ApplyGradients(const Scope& scope,
                                                const std::vector<GradAndVar>& grads_and_vars,
                                                const Variable& global_step) {
  if (chief_update_.node != nullptr) {
    throw Error(errors::FailedPrecondition(
        "SyncReplicasOptimizer::ApplyGradients was already called: it builds one train op"));
  }
  internal::VariablesWithGradients(grads_and_vars);  // warns about, or fails on, null ones
  global_step_ = global_step;
  Scope root = scope.NewSubScope("sync_replicas");
  local_step_ = LocalVariable(scope, "sync_rep_local_step", {}, nullptr, global_step.dtype());
  tokens_ = {"sync_token_q", global_step.dtype(), {}};
  const Scope at_step = root.ColocateWith(global_step.ref());

  std::vector<Operation> applies, set_steps;
  std::vector<GradAndVar> aggregated;
  Output required =
      ops::ConstInt(at_step.WithOpName("replicas_to_aggregate"), replicas_to_aggregate_);
  for (const auto& [g, v] : grads_and_vars) {
    if (g.node == nullptr) continue;
    const ops::SharedResource acc{v.name() + "/grad_accum", v.dtype(), v.shape()};
    Scope s = root.NewSubScope(v.name()).ColocateWith(v.ref());
    applies.push_back(
        ops::AccumulatorApplyGradient(s.WithOpName("apply_grad"), acc, local_step_.value(), g));
    aggregated.push_back(
        {ops::AccumulatorTakeGradient(s.WithOpName("take_grad"), acc, required), v});
    set_steps.push_back(
        ops::AccumulatorSetGlobalStep(s.WithOpName("set_global_step"), acc, global_step.value()));
    // Every accumulator drops the same worker steps: the first one counts them.
    if (!num_dropped_.node)
      num_dropped_ = ops::AccumulatorNumDropped(s.WithOpName("num_dropped"), acc);
  }

  // The chief's update: the mean of the aggregated gradients, then the next step's tokens.
  Operation update = opt_.ApplyGradients(scope, aggregated, &global_step);
  const Scope after = at_step.WithControlDependencies({update});
  Output step_now = ops::Identity(after.WithOpName("global_step_now"), global_step.ref());
  step_after_update_ = step_now;
  const int tokens_per_step = std::max(total_num_replicas_, replicas_to_aggregate_);
  Output tokens = ops::Fill(after.WithOpName("tokens"),
                            ops::ConstInt(after, std::vector<int32_t>{tokens_per_step}), step_now);
  chief_update_ = ops::QueueEnqueueMany(after.WithOpName("sync_op"), tokens_, tokens);
  chief_init_ = ops::NoOp(root.WithOpName("chief_init").WithControlDependencies(set_steps));
  // After a failed update: the accumulators back to the global step, and a token for every
  // worker (those waiting for one go on and hand in fresh gradients).
  const Scope rearm = at_step.WithControlDependencies({chief_init_});
  chief_rearm_ = ops::QueueEnqueueMany(
      rearm.WithOpName("chief_rearm"), tokens_,
      ops::Fill(rearm.WithOpName("rearm_tokens"),
                ops::ConstInt(rearm, std::vector<int32_t>{total_num_replicas_}),
                global_step.value()));
  local_step_init_ = ops::Assign(root.WithOpName("local_step_init").ColocateWith(local_step_.ref()),
                                 local_step_.ref(), global_step.value());

  // The worker's step: hand in the gradients, wait for a token, take it as the local step.
  Output token =
      ops::QueueDequeue(at_step.WithOpName("token").WithControlDependencies(applies), tokens_);
  next_local_step_ = ops::Assign(root.WithOpName("train_op").ColocateWith(local_step_.ref()),
                                 local_step_.ref(), token);
  return next_local_step_;
}

Operation SyncReplicasOptimizer::Minimize(const Scope& scope, Output loss,
                                          const Variable& global_step) {
  return ApplyGradients(scope, opt_.ComputeGradients(scope, loss), global_step);
}

Operation SyncReplicasOptimizer::InitTokensOp(const Scope& scope, int num_tokens) const {
  if (chief_update_.node == nullptr) {
    throw Error(errors::FailedPrecondition(
        "SyncReplicasOptimizer::InitTokensOp needs ApplyGradients first"));
  }
  const int needed = std::max(0, replicas_to_aggregate_ - total_num_replicas_);
  if (num_tokens < 0) num_tokens = needed;
  if (num_tokens < needed) {
    throw Error(errors::InvalidArgument(
        "SyncReplicasOptimizer: ", num_tokens,
        " initial tokens cannot make progress: ", total_num_replicas_, " replicas must hand in ",
        replicas_to_aggregate_, " gradients per step, so at least ", needed, " tokens are needed"));
  }
  Scope s = scope.NewSubScope("sync_replicas").ColocateWith(global_step_.ref());
  if (num_tokens == 0) return ops::NoOp(s.WithOpName("init_tokens"));
  Output tokens =
      ops::Fill(s.WithOpName("init_token_values"),
                ops::ConstInt(s, std::vector<int32_t>{num_tokens}), global_step_.value());
  return ops::QueueEnqueueMany(s.WithOpName("init_tokens"), tokens_, tokens);
}

SyncReplicasChief::SyncReplicasChief(Session& session, const SyncReplicasOptimizer& opt,
                                     int64_t last_step, double timeout_s)
    : session_(session), opt_(opt), last_step_(last_step), timeout_s_(timeout_s) {
  thread_ = std::thread([this] { Loop(); });
}

SyncReplicasChief::~SyncReplicasChief() { Stop(); }

void SyncReplicasChief::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

Status SyncReplicasChief::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

namespace {
// Errors after which the loop goes on: no gradients in time, or a task going away and coming
// back (its variables restored by the chief's recovery).
bool Transient(const Status& s) {
  switch (s.code()) {
    case Code::kDeadlineExceeded:
    case Code::kUnavailable:
    case Code::kAborted:
    case Code::kCancelled:
    case Code::kNotFound:
    case Code::kFailedPrecondition:
      return true;
    default:
      return false;
  }
}
}  // namespace

void SyncReplicasChief::Loop() {
  RunOptions options;
  options.timeout_in_ms = static_cast<int64_t>(timeout_s_ * 1000);
  while (!stop_) {
    std::vector<Tensor> out;
    Status s =
        session_.TryRun({}, {opt_.step_after_update()}, {opt_.chief_update_op()}, &out, options);
    if (s.ok()) {
      ++updates_;
      if (last_step_ > 0 && out[0].scalar<int64_t>() >= last_step_) return;
      continue;
    }
    if (stop_) return;
    if (!Transient(s)) {
      std::lock_guard<std::mutex> lock(mu_);
      status_ = s;
      return;
    }
    PF_LOG_WARN("SyncReplicas chief: update failed; trying again. {}", s.message());
    // No update in time (a worker is missing): the accumulators go back to the global step and
    // the workers keep waiting (their own steps time out). A task that went away and came back
    // (a ps restart): the failed attempt may have taken some accumulators' gradients while the
    // workers wait for tokens, so re-arm (accumulators back, a token per worker). Either fails
    // while a task is away; wait a little before the next attempt.
    const Operation fix =
        s.code() == Code::kDeadlineExceeded ? opt_.chief_init_op() : opt_.chief_rearm_op();
    if (!session_.TryRun({}, {}, {fix}, &out).ok())
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace pf::train
