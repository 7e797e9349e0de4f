// Symbolic gradients, TensorFlow's algorithm: the ops between xs and ys are visited from
// ys backwards once all their consumers' gradients are in; several paths are summed with
// AddN; StopGradient and non-differentiable ops cut paths.
//
//   std::vector<pf::Output> dw = pf::Gradients(root, {loss}, {w.value()});
//   // nodes named gradients/<op>_grad/..., colocated with their forward op
#pragma once

#include <vector>

#include "placeflow/graph/scope.h"

namespace pf {

struct GradientOptions {
  // Gradient nodes share a device with the op they differentiate (towers stay on their device).
  bool colocate_gradients_with_ops = true;
  // An x that no y depends on gets a null Output instead of an error (tf.gradients returns
  // None there; optimizers use this for variables the loss does not touch).
  bool null_for_unreachable = false;
  // TensorFlow's GATE_OP: an op's input gradients are released together, once all of them
  // are computed. Optimizers turn this on: an update that overwrites a variable in place must
  // not run before every gradient that reads the variable (e.g. MatMul's other input) is done.
  bool gate_gradients = false;
  // tf.gradients' stop_gradients: no gradient flows past these tensors' nodes to their inputs
  // (they are held constant); an x among them still gets its gradient.
  std::vector<Output> stop_gradients;
};

// d(sum of ys)/d(xs). grad_ys (one per y; default ones) weight the ys. An x that the ys depend
// on only through paths that carry no gradient (StopGradient, integer or non-differentiable
// ops) gets a null Output, TensorFlow's None: check `.node` before using a gradient. Throws
// pf::Error:
// "Cannot compute the partial derivative for node 'z' as it's unreachable from the output
// node(s)." for an x that does not reach any y, "No gradient defined for op: X" for a
// differentiable op without a gradient function.
std::vector<Output> Gradients(const Scope& scope, const std::vector<Output>& ys,
                              const std::vector<Output>& xs,
                              const std::vector<Output>& grad_ys = {},
                              const GradientOptions& options = {});

namespace internal {
// Gradients for the training library's own code that passes Status on (the gradient checker);
// the same graph and errors, returned instead of thrown. Not part of the public API.
StatusOr<std::vector<Output>> TryGradients(const Scope& scope, const std::vector<Output>& ys,
                                           const std::vector<Output>& xs,
                                           const std::vector<Output>& grad_ys = {},
                                           const GradientOptions& options = {});
}  // namespace internal

}  // namespace pf
