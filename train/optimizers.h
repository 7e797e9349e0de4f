// Training: optimizers, learning-rate schedules, global step, moving averages, clipping.
//
//   pf::Variable step = pf::train::GetOrCreateGlobalStep(root);
//   pf::Output lr = pf::train::ExponentialDecay(root, 0.8, step, 600, 0.99, /*staircase=*/true);
//   pf::train::Adam opt(lr);
//   pf::Operation train_op = opt.Minimize(root, loss, &step);
//   // slots "<var>/Adam", "<var>/Adam_1", colocated with their variable; one ApplyAdam per
//   variable
//
// ApplyGradients runs one fused update op per variable, then (if given) increments the
// global step, and returns a NoOp named after the optimizer that depends on all of it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "placeflow/train/variables.h"

namespace pf::train {

// A learning rate (or other hyper-parameter): a constant or a tensor such as a schedule.
class Hyper {
 public:
  Hyper(double v) : value_(v) {}   // NOLINT: implicit on purpose
  Hyper(Output o) : output_(o) {}  // NOLINT
  Output Get(const Scope& s, DType t, const char* name) const;

 private:
  double value_ = 0;
  Output output_;
};

using GradAndVar = std::pair<Output, Variable>;

namespace internal {
// The variables of `grads_and_vars` that have a gradient. Logs a warning naming those without
// one (TensorFlow's "Gradients do not exist for variables [...]"); throws pf::Error when none
// has a gradient. For optimizers, not part of the public API.
std::vector<Variable> VariablesWithGradients(const std::vector<GradAndVar>& grads_and_vars);
}  // namespace internal

class Optimizer {
 public:
  explicit Optimizer(std::string name) : name_(std::move(name)) {}
  virtual ~Optimizer() = default;

  // Gradients of `loss` for `vars` (default: the trainable variables), TensorFlow's
  // compute_gradients: pairs with a null gradient where the loss does not depend on a var or
  // every path to it is stopped. ApplyGradients skips those with a warning, and fails only when
  // no variable has a gradient.
  std::vector<GradAndVar> ComputeGradients(const Scope& scope, Output loss,
                                           std::vector<Variable> vars = {});
  Operation ApplyGradients(const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
                           const Variable* global_step = nullptr);
  Operation Minimize(const Scope& scope, Output loss, const Variable* global_step = nullptr,
                     std::vector<Variable> vars = {});
  const std::string& name() const { return name_; }
  // Makes the optimizer's variables for `vars` (its slots, Adam's beta powers) now, as
  // ApplyGradients would; a later ApplyGradients reuses them. For a wrapper that builds the
  // update inside a cond (LossScaleOptimizer): a variable made in a branch would be initialised
  // only when the branch runs.
  void CreateSlots(const Scope& scope, const std::vector<Variable>& vars);

 protected:
  // The fused update of one variable, built in `s` (colocated with the variable).
  virtual Output ApplyDense(const Scope& s, Output grad, const Variable& var) = 0;
  // Variables the optimizer needs besides slots (Adam's beta powers); may be called again
  // (CreateSlots, then ApplyGradients) and must then find them.
  virtual void Prepare(const Scope& s, const std::vector<Variable>& vars) {}
  // The slots of `var`, made on the first call (Slot below); ApplyDense reads them from here.
  virtual std::vector<Variable> Slots(const Scope& s, const Variable& var) { return {}; }
  // Ops run after every update and before the step counts (Adam's beta power updates).
  virtual std::vector<Operation> Finish(const Scope& s, const std::vector<Operation>& updates) {
    return {};
  }
  // "<var>/<slot_name>", initialised to `init`, non-trainable, colocated with `var`.
  Variable Slot(const Scope& scope, const Variable& var, const std::string& slot_name,
                double init = 0.0);

  std::string name_;

 private:
  std::map<std::string, Variable> slots_;  // by slot variable name
};

class GradientDescent : public Optimizer {
 public:
  explicit GradientDescent(Hyper learning_rate)
      : Optimizer("GradientDescent"), lr_(learning_rate) {}

 protected:
  Output ApplyDense(const Scope& s, Output grad, const Variable& var) override;

 private:
  Hyper lr_;
};

class Momentum : public Optimizer {
 public:
  Momentum(Hyper learning_rate, Hyper momentum, bool use_nesterov = false)
      : Optimizer("Momentum"), lr_(learning_rate), momentum_(momentum), nesterov_(use_nesterov) {}

 protected:
  std::vector<Variable> Slots(const Scope& s, const Variable& var) override;
  Output ApplyDense(const Scope& s, Output grad, const Variable& var) override;

 private:
  Hyper lr_, momentum_;
  bool nesterov_;
};

class Adam : public Optimizer {
 public:
  explicit Adam(Hyper learning_rate = 0.001, double beta1 = 0.9, double beta2 = 0.999,
                double epsilon = 1e-8)
      : Optimizer("Adam"), lr_(learning_rate), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}

 protected:
  void Prepare(const Scope& s, const std::vector<Variable>& vars) override;
  std::vector<Variable> Slots(const Scope& s, const Variable& var) override;
  Output ApplyDense(const Scope& s, Output grad, const Variable& var) override;
  std::vector<Operation> Finish(const Scope& s, const std::vector<Operation>& updates) override;

 private:
  Hyper lr_;
  double beta1_, beta2_, epsilon_;
  Variable beta1_power_, beta2_power_;
};

class RMSProp : public Optimizer {
 public:
  explicit RMSProp(Hyper learning_rate, double decay = 0.9, double momentum = 0.0,
                   double epsilon = 1e-10)
      : Optimizer("RMSProp"),
        lr_(learning_rate),
        decay_(decay),
        momentum_(momentum),
        epsilon_(epsilon) {}

 protected:
  std::vector<Variable> Slots(const Scope& s, const Variable& var) override;
  Output ApplyDense(const Scope& s, Output grad, const Variable& var) override;

 private:
  Hyper lr_;
  double decay_, momentum_, epsilon_;
};

class AdaGrad : public Optimizer {
 public:
  explicit AdaGrad(Hyper learning_rate, double initial_accumulator_value = 0.1)
      : Optimizer("Adagrad"), lr_(learning_rate), initial_(initial_accumulator_value) {}

 protected:
  std::vector<Variable> Slots(const Scope& s, const Variable& var) override;
  Output ApplyDense(const Scope& s, Output grad, const Variable& var) override;

 private:
  Hyper lr_;
  double initial_;
};

// "global_step": an int64 scalar, non-trainable, zero-initialised; found again on later calls.
// Named at the root, placed by `scope`'s device and custom getter (a ReplicaDeviceSetter's ps).
Variable GetOrCreateGlobalStep(const Scope& scope);

// lr * decay_rate ^ (global_step / decay_steps), the exponent floored when staircase.
Output ExponentialDecay(const Scope& scope, double learning_rate, const Variable& global_step,
                        double decay_steps, double decay_rate, bool staircase = false);
// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
// ...
Output PiecewiseConstant(const Scope& scope, const Variable& global_step,
                         const std::vector<double>& boundaries, const std::vector<double>& values);

// ops::ClipByGlobalNorm with a constant clip_norm (of the gradients' dtype): every gradient
// scaled by clip_norm / max(global_norm, clip_norm), null gradients stay null, an inf or NaN norm
// makes every value NaN (TensorFlow's signal). Returns the clipped gradients and the global norm.
std::pair<std::vector<Output>, Output> ClipByGlobalNorm(const Scope& scope,
                                                        const std::vector<Output>& grads,
                                                        double clip_norm);

// scale * sum of L2Loss(w) over `weights`, added to the "losses" collection (what
// tf.contrib.layers.l2_regularizer contributes per weight). Returns the term.
Output L2Regularization(const Scope& scope, const std::vector<Variable>& weights, double scale);
// Fraction of rows whose arg-max logit equals the int label.
Output Accuracy(const Scope& scope, Output logits, Output labels);

// tf.train.ExponentialMovingAverage: shadow = decay * shadow + (1 - decay) * var, with
// decay = min(decay, (1 + n) / (10 + n)) when num_updates (e.g. the global step) is given.
class ExponentialMovingAverage {
 public:
  explicit ExponentialMovingAverage(double decay, const Variable* num_updates = nullptr)
      : decay_(decay), num_updates_(num_updates ? *num_updates : Variable()) {}
  // Creates "<var>/ExponentialMovingAverage" shadows (initialised to the variable's initial
  // value) and returns the op that updates them.
  Operation Apply(const Scope& scope, const std::vector<Variable>& vars);
  // The shadow of `var` (invalid before Apply).
  Variable Average(const Variable& var) const;
  // "<var>/ExponentialMovingAverage": the name of var's shadow, in the graph and checkpoints.
  static std::string AverageName(const Variable& var);
  // tf.train.ExponentialMovingAverage.variables_to_restore, for a Saver in an evaluation graph:
  // AverageName(v) -> v for each of `moving_avg_variables` (default: the trainable variables
  // and those this object averages), and name -> itself for every other global variable, so
  // the plain variables restore from the averages and the rest as saved.
  std::map<std::string, Variable> VariablesToRestore(
      Graph* graph, std::vector<Variable> moving_avg_variables = {}) const;

 private:
  double decay_;
  Variable num_updates_;
  std::vector<std::pair<std::string, Variable>> shadows_;
};

}  // namespace pf::train
