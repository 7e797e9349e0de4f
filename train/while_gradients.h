// Gradients of while loops, TensorFlow's way (docs/control_flow.md): the forward loop gets an
// iteration counter and pushes, in every iteration, the forward values the backward pass needs
// onto stacks; a backward while loop runs as many iterations, pops them in reverse and applies
// the gradient of the body to the gradients of the loop variables, summing the gradients of the
// values the body took from outside. For train/gradients.cc.
#pragma once

#include <vector>

#include "placeflow/ops/control_flow.h"
#include "placeflow/train/gradients.h"

namespace pf::internal {

// The gradients of a loop's inputs: per loop variable (ops::internal::WhileLoopInfo::enters,
// null for a variable that is not float) and per value brought in (WhileLoopInfo::invariants,
// null where none flows).
struct LoopInputGradients {
  std::vector<Output> enters;
  std::vector<Output> invariants;
};

// Builds the backward loop of `loop` from the gradients of its Exits (`exit_grads`, null where
// none came). Conds and loops in the body are supported (a loop's backward loop is built inside
// the enclosing backward body, its stacks made once per iteration of the enclosing loop);
// Unimplemented for control-flow nodes that ops::Cond and ops::WhileLoop did not build.
StatusOr<LoopInputGradients> WhileLoopGradients(const Scope& scope,
                                                const ops::internal::WhileLoopInfo& loop,
                                                const std::vector<Output>& exit_grads,
                                                const GradientOptions& options);

}  // namespace pf::internal
