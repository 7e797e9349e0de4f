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

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
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

// --- tf.Assert (ops/control/assert_op.cc) ---
// Fails the step with InvalidArgument "assertion failed: <message> <data...>" (the first
// `summarize` values of each data tensor; the data share one dtype) when the bool scalar
// `condition` is false. It has no output: give what must wait for it a control input from it.
Operation Assert(const Scope& s, Output condition, const std::vector<Output>& data,
                 const std::string& message, int64_t summarize = 3);

// --- tf.case, tf.map_fn, tf.scan, tf.foldl, tf.foldr (ops/control/functional_ops.cc) ---
//
//   // squares = [x[0]^2, x[1]^2, ...]; sums = [x[0], x[0]+x[1], ...]; total = x[0]+x[1]+...
//   pf::Output squares = pf::ops::MapFn(
//       root, [](const pf::Scope& s, pf::Output e) { return pf::ops::Square(s, e); }, x);
//   auto add = [](const pf::Scope& s, pf::Output a, pf::Output e) { return pf::ops::Add(s, a, e);
//   }; pf::Output sums = pf::ops::Scan(root, add, x); pf::Output total = pf::ops::Foldl(root, add,
//   x, pf::ops::Const(root, 0.f));
//
// Built on WhileLoop and Cond, as TensorFlow 1.x builds them; `elems` is one tensor of rank 1
// or more whose elements are its slices along dimension 0 (nested structures of tensors are not
// supported). Element i is Gather(elems, i) in iteration i. MapFn and Scan stack their results
// by concatenating each iteration's onto an accumulator (a loop variable): O(n^2) copying for n
// elements, and their gradient keeps every iteration's accumulator on a stack (O(n^2) memory),
// where TensorFlow's TensorArray is O(n); the gradient of elems costs O(n) per element (a dense
// [n, ...] gradient per iteration). Fine for sequences of up to a few thousand elements.
// fn's results must keep one dtype and shape across iterations; a wrong dtype or shape is a
// pf::Error at build time naming the builder.

// tf.case: the first pair whose bool scalar predicate is true runs its fn (nested Conds, one per
// pair: only the taken fn's ops run); none true: `default_fn`. Without a default, the last
// pair's fn is the default, and a run where no predicate is true fails (InvalidArgument "none of
// the conditions (<predicates>) evaluated as True"). `exclusive`: a run where more than one
// predicate is true fails (InvalidArgument naming them). The fns return as many tensors, with
// the same dtypes. Nodes go under the name scope "case" (or s's op name).
using CasePair = std::pair<Output, BranchFn>;
std::vector<Output> Case(const Scope& s, const std::vector<CasePair>& pred_fn_pairs,
                         const BranchFn& default_fn = nullptr, bool exclusive = false);

// tf.map_fn: result[i] = fn(elems[i]), stacked along a new dimension 0 ([n] + fn's shape).
using MapFnFn = std::function<Output(const Scope& s, Output elem)>;
struct MapFnOptions {
  // fn's result dtype when it differs from elems' (TensorFlow's `dtype`); DT_INVALID: elems'.
  DType dtype = DT_INVALID;
  int parallel_iterations = 10;  // WhileOptions::parallel_iterations
};
// Empty elems give an empty result of shape [0] + fn's static shape (its unknown dimensions 0).
// Nodes go under the name scope "map" (or s's op name); the loop is "map/while".
Output MapFn(const Scope& s, const MapFnFn& fn, Output elems, const MapFnOptions& options = {});

// fn(accumulator, element) -> the next accumulator, for Scan, Foldl and Foldr. It must keep the
// accumulator's dtype and shape.
using AccumulateFn = std::function<Output(const Scope& s, Output acc, Output elem)>;
struct ScanOptions {
  int parallel_iterations = 10;
  bool reverse = false;  // from the last element to the first (result[i] is still element i's)
};
// tf.scan: a = initializer; result[i] = a = fn(a, elems[i]), stacked along a new dimension 0
// ([n] + the initializer's shape). Without an initializer, a starts as elems[0] (the first
// element, or the last when reversed), which is also result[0]; then elems must not be empty
// (a run-time error). Nodes go under the name scope "scan" (or s's op name).
Output Scan(const Scope& s, const AccumulateFn& fn, Output elems,
            std::optional<Output> initializer = std::nullopt, const ScanOptions& options = {});
struct FoldOptions {
  int parallel_iterations = 10;
};
// tf.foldl: a = initializer; for each element in order, a = fn(a, element); returns a (the
// initializer itself for empty elems). Without an initializer, a starts as elems[0] and the fold
// runs over the rest. Nodes go under the name scope "foldl" (or s's op name).
Output Foldl(const Scope& s, const AccumulateFn& fn, Output elems,
             std::optional<Output> initializer = std::nullopt, const FoldOptions& options = {});
// tf.foldr: as Foldl, from the last element to the first (without an initializer, a starts as
// the last element). Nodes go under the name scope "foldr" (or s's op name).
Output Foldr(const Scope& s, const AccumulateFn& fn, Output elems,
             std::optional<Output> initializer = std::nullopt, const FoldOptions& options = {});

// --- stacks (ops/control/stack_ops.cc) ---
// A stack of tensors for the rest of the step (TensorFlow's StackV2): a while loop's gradient
// pushes the forward values its backward loop needs and pops them in reverse. Popping an empty
// stack is OutOfRange.
Output StackV2(const Scope& s, DType elem_type);
Output StackPush(const Scope& s, Output handle, Output elem);  // forwards elem
Output StackPop(const Scope& s, Output handle, DType elem_type, const pf::Shape& elem_shape);

// --- rows written in place (ops/control/inplace_ops.cc) ---
// TensorFlow's InplaceUpdate for one row: x with row i (an int32 scalar) replaced by v. The row
// is written into x's own buffer when nothing else holds it (a loop variable filled row by row
// then costs O(rows), not the O(rows^2) of appending with Concat); otherwise into a copy.
Output InplaceUpdate(const Scope& s, Output x, Output i, Output v);
// TensorFlow's InplaceAdd for one row: x with v added to row i, in place the same way (float and
// double, CPU). A loop's gradient sums a Gather's row gradients with it (train/while_gradients.cc).
Output InplaceAdd(const Scope& s, Output x, Output i, Output v);

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
// Nodes a loop's gradient adds to the forward graph while an enclosing loop's backward body is
// being built (a nested loop's iteration counter and stacks): the builders' contexts leave them
// alone (they are not the backward body's), and they count as in `loop`'s frame (the nested
// loop's parent) when the enclosing gradient brings them into its backward loop.
void MarkForwardNodes(Graph* g, int first_id, int last_id, const WhileLoopInfo* loop);
// Whether `n` was marked, and then the loop it was marked with (`loop`, may be null).
bool IsMarkedForward(Graph* g, const Node* n, const WhileLoopInfo** loop = nullptr);
// WhileLoop with a CaptureFn for the body's outside values.
std::vector<Output> WhileLoop(const Scope& s, const LoopCondFn& cond, const LoopBodyFn& body,
                              const std::vector<Output>& loop_vars, const WhileOptions& options,
                              const CaptureFn& capture);
}  // namespace internal

}  // namespace pf::ops
