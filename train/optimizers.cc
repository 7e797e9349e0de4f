#include "placeflow/train/optimizers.h"

#include <fmt/ranges.h>

#include <cmath>
#include <set>

#include "placeflow/core/logging.h"
#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/ops.h"
#include "placeflow/train/gradients.h"

namespace pf::train {

Output Hyper::Get(const Scope& s, DType t, const char* name) const {
  if (output_.node != nullptr) return output_.dtype() == t ? output_ : ops::Cast(s, output_, t);
  return ScalarOf(s.WithOpName(name), value_, t);
}

std::vector<GradAndVar> Optimizer::ComputeGradients(const Scope& scope, Output loss,
                                                    std::vector<Variable> vars) {
  if (vars.empty()) vars = TrainableVariables(scope.graph());
  if (vars.empty()) throw Error(errors::InvalidArgument("No variables to optimize."));
  std::vector<Output> xs;
  for (const Variable& v : vars) xs.push_back(v.value());
  GradientOptions options;
  options.null_for_unreachable = true;
  options.gate_gradients = true;
  std::vector<Output> grads = Gradients(scope, {loss}, xs, {}, options);
  std::vector<GradAndVar> out;
  for (size_t i = 0; i < vars.size(); ++i) out.emplace_back(grads[i], vars[i]);
  return out;
}

Variable Optimizer::Slot(const Scope& scope, const Variable& var, const std::string& slot_name,
                         double init) {
  // One slot per variable and optimizer: a second ApplyGradients over the same variables (a
  // second train op) reuses it, as TensorFlow's optimizers keep their slots.
  const std::string name = var.name() + "/" + slot_name;
  auto it = slots_.find(name);
  if (it != slots_.end()) return it->second;
  Scope s = Scope::Root(scope.graph()).ColocateWith(var.ref());
  Variable slot =
      GetVariable(s, name, var.shape(), init::Constant(init), var.dtype(), /*trainable=*/false);
  slots_[name] = slot;
  return slot;
}

namespace internal {

std::vector<Variable> VariablesWithGradients(const std::vector<GradAndVar>& grads_and_vars) {
  std::vector<Variable> vars;
  std::vector<std::string> without;
  for (const auto& [g, v] : grads_and_vars) {
    if (g.node != nullptr) {
      vars.push_back(v);
    } else {
      without.push_back(v.name());
    }
  }
  if (vars.empty()) {
    throw Error(errors::InvalidArgument(
        "No gradients provided for any variable: the loss does not depend on them."));
  }
  // TensorFlow's warning: some variables get no update, which is often a mistake in the model.
  if (!without.empty()) {
    PF_LOG_WARN("Gradients do not exist for variables [{}] when minimizing the loss.",
                fmt::join(without, ", "));
  }
  return vars;
}

}  // namespace internal

void Optimizer::CreateSlots(const Scope& scope, const std::vector<Variable>& vars) {
  if (vars.empty()) return;
  Scope root = scope.NewSubScope(name_);
  Prepare(root, vars);
  for (const Variable& v : vars) Slots(root.NewSubScope("update_" + v.name()), v);
}

Operation Optimizer::ApplyGradients(const Scope& scope,
                                    const std::vector<GradAndVar>& grads_and_vars,
                                    const Variable* global_step) {
  std::vector<Variable> vars = internal::VariablesWithGradients(grads_and_vars);
  Scope root = scope.NewSubScope(name_);
  Prepare(root, vars);
  std::vector<Operation> updates;
  for (const auto& [g, v] : grads_and_vars) {
    if (g.node == nullptr) continue;
    Scope s = root.NewSubScope("update_" + v.name()).ColocateWith(v.ref());
    updates.push_back(ApplyDense(s, g, v));
  }
  std::vector<Operation> finish = Finish(root, updates);
  std::vector<Operation> all = updates;
  all.insert(all.end(), finish.begin(), finish.end());
  if (global_step != nullptr) {
    Scope s = root.WithControlDependencies(all).ColocateWith(global_step->ref());
    all.push_back(ops::AssignAdd(s.WithOpName("increment_global_step"), global_step->ref(),
                                 ScalarOf(s.WithOpName("one"), 1, global_step->dtype())));
  }
  return ops::NoOp(scope.WithOpName(name_).WithControlDependencies(all));
}

Operation Optimizer::Minimize(const Scope& scope, Output loss, const Variable* global_step,
                              std::vector<Variable> vars) {
  return ApplyGradients(scope, ComputeGradients(scope, loss, std::move(vars)), global_step);
}

Output GradientDescent::ApplyDense(const Scope& s, Output grad, const Variable& var) {
  return NodeBuilder(s, "ApplyGradientDescent")
      .Input(var.ref())
      .Input(lr_.Get(s, var.dtype(), "learning_rate"))
      .Input(grad)
      .Finalize();
}

std::vector<Variable> Momentum::Slots(const Scope& s, const Variable& var) {
  return {Slot(s, var, "Momentum")};
}

Output Momentum::ApplyDense(const Scope& s, Output grad, const Variable& var) {
  Variable accum = Slots(s, var)[0];
  return NodeBuilder(s, "ApplyMomentum")
      .Input(var.ref())
      .Input(accum.ref())
      .Input(lr_.Get(s, var.dtype(), "learning_rate"))
      .Input(grad)
      .Input(momentum_.Get(s, var.dtype(), "momentum"))
      .Attr("use_nesterov", nesterov_)
      .Finalize();
}

void Adam::Prepare(const Scope& s, const std::vector<Variable>& vars) {
  // TensorFlow 1.x: beta powers are plain variables colocated with the first variable.
  Scope at = Scope::Root(s.graph()).ColocateWith(vars[0].ref());
  beta1_power_ = GetVariable(at.WithReuse(Reuse::kAutoReuse), "beta1_power", {},
                             init::Constant(beta1_), vars[0].dtype(), false);
  beta2_power_ = GetVariable(at.WithReuse(Reuse::kAutoReuse), "beta2_power", {},
                             init::Constant(beta2_), vars[0].dtype(), false);
}

std::vector<Variable> Adam::Slots(const Scope& s, const Variable& var) {
  return {Slot(s, var, "Adam"), Slot(s, var, "Adam_1")};
}

Output Adam::ApplyDense(const Scope& s, Output grad, const Variable& var) {
  const std::vector<Variable> slots = Slots(s, var);
  const Variable& m = slots[0];
  const Variable& v = slots[1];
  const DType t = var.dtype();
  return NodeBuilder(s, "ApplyAdam")
      .Input(var.ref())
      .Input(m.ref())
      .Input(v.ref())
      .Input(Hyper(beta1_power_.value()).Get(s, t, "beta1_power"))
      .Input(Hyper(beta2_power_.value()).Get(s, t, "beta2_power"))
      .Input(lr_.Get(s, t, "learning_rate"))
      .Input(ScalarOf(s.WithOpName("beta1"), beta1_, t))
      .Input(ScalarOf(s.WithOpName("beta2"), beta2_, t))
      .Input(ScalarOf(s.WithOpName("epsilon"), epsilon_, t))
      .Input(grad)
      .Finalize();
}

std::vector<Operation> Adam::Finish(const Scope& s, const std::vector<Operation>& updates) {
  Scope after = s.WithControlDependencies(updates).ColocateWith(beta1_power_.ref());
  const DType t = beta1_power_.dtype();
  Output b1 = ops::Assign(after.WithOpName("update_beta1"), beta1_power_.ref(),
                          ops::Mul(after, beta1_power_.value(), ScalarOf(after, beta1_, t)));
  Output b2 = ops::Assign(after.WithOpName("update_beta2"), beta2_power_.ref(),
                          ops::Mul(after, beta2_power_.value(), ScalarOf(after, beta2_, t)));
  return {b1, b2};
}

std::vector<Variable> RMSProp::Slots(const Scope& s, const Variable& var) {
  // TensorFlow initialises the mean square to ones.
  return {Slot(s, var, "RMSProp", 1.0), Slot(s, var, "RMSProp_1")};
}

Output RMSProp::ApplyDense(const Scope& s, Output grad, const Variable& var) {
  const std::vector<Variable> slots = Slots(s, var);
  const Variable& ms = slots[0];
  const Variable& mom = slots[1];
  const DType t = var.dtype();
  return NodeBuilder(s, "ApplyRMSProp")
      .Input(var.ref())
      .Input(ms.ref())
      .Input(mom.ref())
      .Input(lr_.Get(s, t, "learning_rate"))
      .Input(ScalarOf(s.WithOpName("decay"), decay_, t))
      .Input(ScalarOf(s.WithOpName("momentum"), momentum_, t))
      .Input(ScalarOf(s.WithOpName("epsilon"), epsilon_, t))
      .Input(grad)
      .Finalize();
}

std::vector<Variable> AdaGrad::Slots(const Scope& s, const Variable& var) {
  return {Slot(s, var, "Adagrad", initial_)};
}

Output AdaGrad::ApplyDense(const Scope& s, Output grad, const Variable& var) {
  Variable accum = Slots(s, var)[0];
  return NodeBuilder(s, "ApplyAdagrad")
      .Input(var.ref())
      .Input(accum.ref())
      .Input(lr_.Get(s, var.dtype(), "learning_rate"))
      .Input(grad)
      .Finalize();
}

Variable GetOrCreateGlobalStep(const Scope& scope) {
  Variable existing = FindVariable(scope.graph(), "global_step");
  if (existing.valid()) return existing;
  // At the root of the variable names, but on the scope's device and through its custom getter
  // (a ReplicaDeviceSetter puts it on a ps task, where every worker shares it).
  Scope root = Scope::Root(scope.graph()).WithDevice(scope.device_string());
  if (scope.custom_getter()) root = root.WithCustomGetter(*scope.custom_getter());
  return GetVariable(root, "global_step", {}, init::Zeros(), DT_INT64, /*trainable=*/false);
}

Output ExponentialDecay(const Scope& scope, double learning_rate, const Variable& global_step,
                        double decay_steps, double decay_rate, bool staircase) {
  Scope s = scope.NewSubScope("ExponentialDecay");
  Output p =
      ops::Div(s, ops::Cast(s, global_step.value(), DT_FLOAT), ScalarOf(s, decay_steps, DT_FLOAT));
  if (staircase) p = ops::Floor(s, p);
  return ops::Mul(s.WithOpName("learning_rate"), ScalarOf(s, learning_rate, DT_FLOAT),
                  ops::Pow(s, ScalarOf(s, decay_rate, DT_FLOAT), p));
}

Output PiecewiseConstant(const Scope& scope, const Variable& global_step,
                         const std::vector<double>& boundaries, const std::vector<double>& values) {
  if (values.size() != boundaries.size() + 1) {
    throw Error(errors::InvalidArgument(
        "PiecewiseConstant: values must have one more element than boundaries, got ", values.size(),
        " and ", boundaries.size()));
  }
  Scope s = scope.NewSubScope("PiecewiseConstant");
  Output x = ops::Cast(s, global_step.value(), DT_FLOAT);
  Output result = ScalarOf(s, values[0], DT_FLOAT);
  for (size_t i = 0; i < boundaries.size(); ++i) {
    Output past = ops::Cast(s, ops::Greater(s, x, ScalarOf(s, boundaries[i], DT_FLOAT)), DT_FLOAT);
    result =
        ops::Add(s, result, ops::Mul(s, past, ScalarOf(s, values[i + 1] - values[i], DT_FLOAT)));
  }
  return ops::Identity(s.WithOpName("value"), result);
}

std::pair<std::vector<Output>, Output> ClipByGlobalNorm(const Scope& scope,
                                                        const std::vector<Output>& grads,
                                                        double clip_norm) {
  // One behaviour for both spellings: ops::ClipByGlobalNorm is TensorFlow's (an inf or NaN norm
  // makes every value NaN).
  for (const Output& g : grads) {
    if (g.node != nullptr)
      return ops::ClipByGlobalNorm(scope, grads, ScalarOf(scope, clip_norm, g.dtype()));
  }
  throw Error(errors::InvalidArgument("ClipByGlobalNorm: every gradient is null"));
}

Output L2Regularization(const Scope& scope, const std::vector<Variable>& weights, double scale) {
  if (weights.empty()) throw Error(errors::InvalidArgument("L2Regularization: no weights"));
  Scope s = scope.NewSubScope("l2_regularizer");
  std::vector<Output> terms;
  for (const Variable& w : weights) terms.push_back(ops::L2Loss(s, w.value()));
  Output sum = terms.size() == 1 ? terms[0] : ops::AddN(s, terms);
  Output term = ops::Mul(s.WithOpName("value"), ScalarOf(s, scale, sum.dtype()), sum);
  scope.graph()->AddToCollection(kLosses, term);
  return term;
}

Output Accuracy(const Scope& scope, Output logits, Output labels) {
  Scope s = scope.NewSubScope("accuracy");
  Output predicted = ops::ArgMax(s, logits, 1, labels.dtype());
  return ops::Mean(s.WithOpName("value"),
                   ops::Cast(s, ops::Equal(s, predicted, labels), logits.dtype()));
}

Operation ExponentialMovingAverage::Apply(const Scope& scope, const std::vector<Variable>& vars) {
  Scope s = scope.NewSubScope("ExponentialMovingAverage");
  std::vector<Operation> updates;
  for (const Variable& v : vars) {
    // The shadow starts at the variable's initial value: the output of the variable's initializer.
    Output initial(v.initializer().node, 0);
    Initializer from_var = [initial](const Scope& is, const Shape&, DType) {
      return ops::Identity(is, initial);
    };
    Scope at = Scope::Root(scope.graph()).ColocateWith(v.ref());
    Variable shadow = GetVariable(at, AverageName(v), v.shape(), from_var, v.dtype(), false);
    shadows_.emplace_back(v.name(), shadow);
    const DType t = v.dtype();
    Output decay = ScalarOf(s, decay_, t);
    if (num_updates_.valid()) {
      Output n = ops::Cast(s, num_updates_.value(), t);
      Output warm =
          ops::Div(s, ops::Add(s, ScalarOf(s, 1, t), n), ops::Add(s, ScalarOf(s, 10, t), n));
      decay = ops::Minimum(s, decay, warm);
    }
    // One fused pass: shadow -= (1 - decay)(shadow - value), TF's Sub, Mul and AssignSub.
    Scope us = s.ColocateWith(shadow.ref());
    updates.push_back(NodeBuilder(us.WithOpName("update_" + v.name()), "ApplyMovingAverage")
                          .Input(shadow.ref())
                          .Input(decay)
                          .Input(v.value())
                          .Finalize());
  }
  return ops::NoOp(scope.WithOpName("ExponentialMovingAverage").WithControlDependencies(updates));
}

std::string ExponentialMovingAverage::AverageName(const Variable& var) {
  return var.name() + "/ExponentialMovingAverage";
}

std::map<std::string, Variable> ExponentialMovingAverage::VariablesToRestore(
    Graph* graph, std::vector<Variable> moving_avg_variables) const {
  if (moving_avg_variables.empty()) {
    moving_avg_variables = TrainableVariables(graph);
    for (const auto& [name, shadow] : shadows_) {
      Variable v = FindVariable(graph, name);
      if (v.valid()) moving_avg_variables.push_back(v);
    }
  }
  std::map<std::string, Variable> out;
  std::set<std::string> averaged;
  for (const Variable& v : moving_avg_variables) {
    out[AverageName(v)] = v;
    averaged.insert(v.name());
  }
  // A shadow that exists in this graph is already a key (it restores into its variable).
  for (const Variable& v : GlobalVariables(graph)) {
    if (!averaged.count(v.name()) && !out.count(v.name())) out[v.name()] = v;
  }
  return out;
}

Variable ExponentialMovingAverage::Average(const Variable& var) const {
  for (const auto& [name, shadow] : shadows_) {
    if (name == var.name()) return shadow;
  }
  return Variable();
}

}  // namespace pf::train
