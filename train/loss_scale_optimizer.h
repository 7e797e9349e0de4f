// LossScaleOptimizer: dynamic loss scaling for float16 training, TensorFlow 1.x's
// tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer with its "dynamic" loss scale.
//
//   pf::train::Adam adam(1e-3);
//   pf::train::LossScaleOptimizer opt(adam);                  // scale 2^15, doubled every 2,000
//   pf::Operation train_op = opt.Minimize(root, loss, &step);  // good steps, halved on Inf/NaN
//   // opt.loss_scale(), opt.skipped_steps(): float32 and int64 variables, e.g. for summaries
//
// Each step differentiates loss * scale, so that small float16 gradients do not flush to zero,
// and divides the gradients by the scale again. When every gradient is finite, the wrapped
// optimizer applies them (and advances the global step); after `growth_steps` such steps in a
// row the scale is multiplied by `multiplier`. When any gradient holds an Inf or a NaN, the
// update is skipped: no variable, slot or global step changes, the scale is divided by
// `multiplier` (never below 1) and skipped_steps counts one. The update runs in an ops::Cond, so
// a skipped step costs no optimizer kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "placeflow/train/optimizers.h"

namespace pf::train {

struct LossScaleOptions {
  double initial_scale = 32768;  // 2^15, TensorFlow's initial dynamic scale
  int64_t growth_steps = 2000;   // finite steps in a row before the scale grows
  double multiplier = 2;         // grows by this, shrinks by this on a non-finite gradient
};

class LossScaleOptimizer {
 public:
  // `opt` must outlive the ops this builds. Throws pf::Error (InvalidArgument) for a scale
  // below 1, growth_steps below 1 or a multiplier not above 1.
  explicit LossScaleOptimizer(Optimizer& opt, LossScaleOptions options = {});

  // The gradients of `loss` for `vars` (default: the trainable variables), computed through
  // the scaled loss and divided by the scale again (TensorFlow's compute_gradients of the
  // wrapper). Null where the loss does not depend on a variable.
  std::vector<GradAndVar> ComputeGradients(const Scope& scope, Output loss,
                                           std::vector<Variable> vars = {});
  // Applies them through the wrapped optimizer when all are finite, else skips the step, and
  // updates the scale. Its NoOp is named "<optimizer>_loss_scale".
  Operation ApplyGradients(const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
                           const Variable* global_step = nullptr);
  Operation Minimize(const Scope& scope, Output loss, const Variable* global_step = nullptr,
                     std::vector<Variable> vars = {});

  // ComputeGradients in two halves, for gradients made elsewhere (towers, each differentiating
  // its own scaled loss): `loss` times the scale, and gradients of a scaled loss divided by it.
  Output ScaledLoss(const Scope& scope, Output loss);
  std::vector<GradAndVar> Unscaled(const Scope& scope, std::vector<GradAndVar> grads);
  // Makes the three variables below (on `scope`'s device) if they do not exist yet; every
  // method above calls it.
  void CreateVariables(const Scope& scope);

  // The current scale (float32 "loss_scale"), the finite steps since it last changed (int64
  // "loss_scale_good_steps") and the steps skipped so far (int64 "loss_scale_skipped_steps"):
  // non-trainable variables made by the first ComputeGradients or ApplyGradients.
  const Variable& loss_scale() const { return scale_; }
  const Variable& good_steps() const { return good_steps_; }
  const Variable& skipped_steps() const { return skipped_; }

 private:
  // The new scale, good-step count and skipped count after a step whose gradients were
  // `finite` (a bool scalar), assigned once `after` has run.
  std::vector<Operation> UpdateScale(const Scope& s, Output finite, Operation after);

  Optimizer& opt_;
  LossScaleOptions options_;
  Variable scale_, good_steps_, skipped_;
};

}  // namespace pf::train
