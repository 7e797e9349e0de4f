// Control flow in the graph, as TensorFlow 1.x builds it: tf.cond and tf.while_loop over the
// primitives Switch, Merge, Enter, Exit, NextIteration and LoopCond, which the executor runs
// with frames, iterations and dead tensors (docs/control_flow.md).
//
//   // tf.cond: only the taken branch runs.
//   std::vector<pf::Output> y = pf::ops::Cond(
//       root, pred, [&](const pf::Scope& s) { return std::vector{pf::ops::Mul(s, x, two)}; },
//       [&](const pf::Scope& s) { return std::vector{pf::ops::Neg(s, x)}; });
//   // tf.while_loop: i = 0; while (i < 10) i += 1.
//   std::vector<pf::Output> out = pf::ops::WhileLoop(
//       root, [](const pf::Scope& s, const std::vector<pf::Output>& v) {
//         return pf::ops::Less(s, v[0], pf::ops::ConstInt(s, 10)); },
//       [](const pf::Scope& s, const std::vector<pf::Output>& v) {
//         return std::vector{pf::ops::Add(s, v[0], pf::ops::ConstInt(s, 1))}; },
//       {pf::ops::ConstInt(root, 0)});
//
// Branch and body functions may use any tensor of the graph: one from outside goes in through a
// Switch on the predicate (a cond) or a constant Enter (a loop), as TensorFlow's control-flow
// contexts do; an op with no input from inside (a constant) gets a control input from the
// branch's or the loop's pivot, so it runs only when the branch or the iteration does.
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "placeflow/graph/scope.h"

namespace pf::ops {

// --- primitives (ops/control/control_flow_ops.cc) ---
struct SwitchOutputs {
  Output output_false;  // `data` when pred is false; dead otherwise
  Output output_true;   // `data` when pred is true; dead otherwise
};
SwitchOutputs Switch(const Scope& s, Output data, Output pred);
struct MergeOutputs {
  Output output;       // the live input
  Output value_index;  // int32: which input it was
};
MergeOutputs Merge(const Scope& s, const std::vector<Output>& inputs);
// Into the loop frame `frame_name`; `is_constant`: the value reaches every iteration.
Output Enter(const Scope& s, Output data, const std::string& frame_name, bool is_constant = false,
             int parallel_iterations = 10);
Output Exit(const Scope& s, Output data);
Output NextIteration(const Scope& s, Output data);
Output LoopCond(const Scope& s, Output pred);

// --- tf.cond ---
using BranchFn = std::function<std::vector<Output>(const Scope& s)>;
// Runs `true_fn`'s ops when the scalar bool `pred` is true, else `false_fn`'s, and returns the
// taken branch's results (Merge outputs). Both branches must return as many tensors, with the
// same dtypes (pf::Error at build time otherwise); shapes may differ (the result then has the
// dims they share). Nodes go under the name scope "cond" (or s's op name).
std::vector<Output> Cond(const Scope& s, Output pred, const BranchFn& true_fn,
                         const BranchFn& false_fn);

// --- tf.while_loop ---
using LoopCondFn = std::function<Output(const Scope& s, const std::vector<Output>& vars)>;
using LoopBodyFn =
    std::function<std::vector<Output>(const Scope& s, const std::vector<Output>& vars)>;
struct WhileOptions {
  // How many iterations may run at once (TensorFlow's default, 10); 1 runs them one by one.
  int parallel_iterations = 10;
  // Per loop variable, the shape it may take across iterations (empty: the shape it enters
  // with, which the body must then keep). A shape that changes without one is a build-time
  // pf::Error naming the variable and both shapes, as TensorFlow's.
  std::vector<pf::Shape> shape_invariants;
  // Stops after this many iterations even while cond is true (an int32 scalar tensor).
  std::optional<Output> maximum_iterations;
};
// Runs `body` while `cond` is true, starting from `loop_vars`, and returns the final values
// (Exit outputs). `cond` returns a scalar bool; `body` returns one tensor per loop variable,
// with its dtype. Nodes go under the name scope "while" (or s's op name), which names the loop
// frame.
std::vector<Output> WhileLoop(const Scope& s, const LoopCondFn& cond, const LoopBodyFn& body,
                              const std::vector<Output>& loop_vars,
                              const WhileOptions& options = {});

// --- stacks (ops/control/stack_ops.cc) ---
// A stack of tensors for the rest of the step (TensorFlow's StackV2): a while loop's gradient
// pushes the forward values its backward loop needs and pops them in reverse. Popping an empty
// stack is OutOfRange.
Output StackV2(const Scope& s, DType elem_type);
Output StackPush(const Scope& s, Output handle, Output elem);  // forwards elem
Output StackPop(const Scope& s, Output handle, DType elem_type, const pf::Shape& elem_shape);

namespace internal {
// What the gradient of a while loop knows of it (train/gradients.cc); WhileLoop records one
// per loop in its graph.
struct WhileLoopInfo {
  std::string frame;
  int first_id = 0, last_id = 0;  // the ids of the nodes its builder made
  int parallel_iterations = 10;
  Output loop_cond;
  // Per loop variable (maximum_iterations' counter first when there is one):
  std::vector<Output> enters;  // Enter outputs (the loop's inputs are their inputs)
  std::vector<Node*> merges;
  std::vector<Output> body_in;  // the value the body gets (an Identity)
  std::vector<Output> next;     // what the body returned (NextIteration's input)
  std::vector<Node*> next_iterations;
  std::vector<Output> exits;
  std::vector<pf::Shape> shapes;  // shape invariants
  // Constant Enters that brought outside values into the condition and the body.
  std::vector<Output> invariants;
  bool Contains(const Node* n) const { return n->id() >= first_id && n->id() <= last_id; }
};
// The while loops built in `g`, in the order they were built (a deque: references stay valid
// as loops are added).
const std::deque<WhileLoopInfo>& WhileLoops(Graph* g);
// How the gradient's backward loop brings in a value from outside its body: a value of the
// forward loop comes from a stack (pushed there), others through a constant Enter (nullopt).
// `pivot`: the backward body's pivot, the control input of what runs once per iteration;
// `enter(x)`: x through a constant Enter into the loop being built.
using CaptureFn = std::function<std::optional<Output>(
    const Output& outside, Node* pivot, const std::function<Output(const Output&)>& enter)>;
// WhileLoop with a CaptureFn for the body's outside values.
std::vector<Output> WhileLoop(const Scope& s, const LoopCondFn& cond, const LoopBodyFn& body,
                              const std::vector<Output>& loop_vars, const WhileOptions& options,
                              const CaptureFn& capture);
}  // namespace internal

}  // namespace pf::ops
