#include "placeflow/train/loss_scale_optimizer.h"

#include "placeflow/ops/control_flow.h"
#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/ops.h"

namespace pf::train {
namespace {

// True when every element of every gradient is finite: x - x is 0 for a finite x and NaN for
// an Inf or a NaN, so the sum of all of them is 0 exactly when all are finite.
Output AllFinite(const Scope& s, const std::vector<GradAndVar>& grads_and_vars) {
  std::vector<Output> sums;
  for (const auto& [g, v] : grads_and_vars) {
    if (g.node == nullptr) continue;
    Output sum = ops::Sum(s, ops::Sub(s, g, g));
    sums.push_back(sum.dtype() == DT_FLOAT ? sum : ops::Cast(s, sum, DT_FLOAT));
  }
  Output total = sums.size() == 1 ? sums[0] : ops::AddN(s, sums);
  return ops::Equal(s.WithOpName("all_finite"), total, ops::Const(s, 0.f));
}

}  // namespace

LossScaleOptimizer::LossScaleOptimizer(Optimizer& opt, LossScaleOptions options)
    : opt_(opt), options_(options) {
  if (!(options.initial_scale >= 1) || options.growth_steps < 1 || !(options.multiplier > 1)) {
    throw Error(errors::InvalidArgument(
        "LossScaleOptimizer needs initial_scale >= 1, growth_steps >= 1 and multiplier > 1; got ",
        options.initial_scale, ", ", options.growth_steps, " and ", options.multiplier));
  }
}

void LossScaleOptimizer::CreateVariables(const Scope& scope) {
  if (scale_.valid()) return;
  // At the root of the names, on the scope's device (as the global step).
  Scope root = Scope::Root(scope.graph()).WithDevice(scope.device_string());
  scale_ = GetVariable(root, "loss_scale", {}, init::Constant(options_.initial_scale), DT_FLOAT,
                       /*trainable=*/false);
  good_steps_ =
      GetVariable(root, "loss_scale_good_steps", {}, init::Zeros(), DT_INT64, /*trainable=*/false);
  skipped_ = GetVariable(root, "loss_scale_skipped_steps", {}, init::Zeros(), DT_INT64,
                         /*trainable=*/false);
}

Output LossScaleOptimizer::ScaledLoss(const Scope& scope, Output loss) {
  CreateVariables(scope);
  Scope s = scope.NewSubScope("loss_scale");
  Output scale = scale_.value();
  return ops::Mul(s.WithOpName("scaled_loss"), loss,
                  loss.dtype() == DT_FLOAT ? scale : ops::Cast(s, scale, loss.dtype()));
}

std::vector<GradAndVar> LossScaleOptimizer::Unscaled(const Scope& scope,
                                                     std::vector<GradAndVar> grads) {
  CreateVariables(scope);
  Scope s = scope.NewSubScope("loss_scale");
  // 1 / scale in float32: a power of two, so the division is exact.
  Output inverse = ops::Div(s.WithOpName("inverse_scale"), ops::Const(s, 1.f), scale_.value());
  for (auto& [g, v] : grads) {
    if (g.node == nullptr) continue;
    Output factor = g.dtype() == DT_FLOAT ? inverse : ops::Cast(s, inverse, g.dtype());
    g = ops::Mul(s.WithOpName("unscaled_" + v.name()), g, factor);
  }
  return grads;
}

std::vector<GradAndVar> LossScaleOptimizer::ComputeGradients(const Scope& scope, Output loss,
                                                             std::vector<Variable> vars) {
  Output scaled = ScaledLoss(scope, loss);
  return Unscaled(scope, opt_.ComputeGradients(scope, scaled, std::move(vars)));
}

std::vector<Operation> LossScaleOptimizer::UpdateScale(const Scope& scope, Output finite,
                                                       Operation after) {
  Scope s = scope.WithControlDependencies({after});
  auto i64 = [&](double v) { return ScalarOf(s, v, DT_INT64); };
  const Output scale = scale_.value();
  const Output good = ops::Add(s, good_steps_.value(), i64(1));
  const Output grow = ops::LogicalAnd(
      s, finite, ops::Equal(s, good, i64(static_cast<double>(options_.growth_steps))));
  const Output m = ops::Const(s, static_cast<float>(options_.multiplier));
  const Output grown = ops::Select(s, grow, ops::Mul(s, scale, m), scale);
  const Output shrunk = ops::Maximum(s, ops::Div(s, scale, m), ops::Const(s, 1.f));
  const Output zero = i64(0);
  return {
      ops::Assign(s.WithOpName("update_loss_scale"), scale_.ref(),
                  ops::Select(s, finite, grown, shrunk)),
      ops::Assign(s.WithOpName("update_good_steps"), good_steps_.ref(),
                  ops::Select(s, ops::LogicalAnd(s, finite, ops::LogicalNot(s, grow)), good, zero)),
      ops::AssignAdd(s.WithOpName("count_skipped"), skipped_.ref(),
                     ops::Select(s, finite, zero, i64(1))),
  };
}

Operation LossScaleOptimizer::ApplyGradients(const Scope& scope,
                                             const std::vector<GradAndVar>& grads_and_vars,
                                             const Variable* global_step) {
  CreateVariables(scope);
  const std::vector<Variable> vars = internal::VariablesWithGradients(grads_and_vars);
  // The wrapped optimizer's variables exist before the cond: made in a branch, they would be
  // initialised only when it runs.
  opt_.CreateSlots(scope, vars);
  Scope s = scope.NewSubScope("loss_scale");
  Output finite = AllFinite(s, grads_and_vars);
  std::vector<Output> applied = ops::Cond(
      s.WithOpName("apply_if_finite"), finite,
      [&](const Scope& b) {
        Operation update = opt_.ApplyGradients(b, grads_and_vars, global_step);
        return std::vector{ops::Identity(b.WithControlDependencies({update}), finite)};
      },
      [&](const Scope& b) { return std::vector{ops::Identity(b, finite)}; });
  std::vector<Operation> all = UpdateScale(s, finite, applied[0]);
  return ops::NoOp(scope.WithOpName(opt_.name() + "_loss_scale").WithControlDependencies(all));
}

Operation LossScaleOptimizer::Minimize(const Scope& scope, Output loss, const Variable* global_step,
                                       std::vector<Variable> vars) {
  return ApplyGradients(scope, ComputeGradients(scope, loss, std::move(vars)), global_step);
}

}  // namespace pf::train
