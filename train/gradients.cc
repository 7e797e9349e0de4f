#include "placeflow/train/gradients.h"

#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// Sums the gradients that reached one output; null when none did.
Output Aggregate(const Scope& scope, const std::vector<Output>& grads) {
  if (grads.empty()) return Output();
  if (grads.size() == 1) return grads[0];
  return ops::AddN(scope.WithOpName("AddN"), grads);
}

}  // namespace

StatusOr<std::vector<Output>> TryGradients(const Scope& scope, const std::vector<Output>& ys,
                                           const std::vector<Output>& xs,
                                           const std::vector<Output>& grad_ys,
                                           const GradientOptions& options) {
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    return errors::InvalidArgument("Gradients: ", grad_ys.size(), " grad_ys for ", ys.size(),
                                   " ys");
  }
  // Nodes that reach a y (walking inputs backwards from the ys).
  std::unordered_set<const Node*> reaches_y;
  std::vector<const Node*> stack;
  for (const Output& y : ys) {
    if (reaches_y.insert(y.node).second) stack.push_back(y.node);
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Output& in : n->inputs()) {
      if (reaches_y.insert(in.node).second) stack.push_back(in.node);
    }
  }
  // Nodes reached from an x (walking out-edges) that also reach a y: the ones to visit.
  std::unordered_set<const Node*> between;
  for (const Output& x : xs) {
    if (reaches_y.count(x.node) && between.insert(x.node).second) stack.push_back(x.node);
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->out_edges()) {
      if (!e.IsControl() && reaches_y.count(e.dst) && between.insert(e.dst).second)
        stack.push_back(e.dst);
    }
  }
  for (const Output& x : xs) {
    if (!between.count(x.node) && !options.null_for_unreachable) {
      return errors::InvalidArgument("Cannot compute the partial derivative for node '",
                                     x.node->name(),
                                     "' as it's unreachable from the output node(s).");
    }
  }
  for (const Output& y : ys) between.insert(y.node);
  // Pending counts: data edges from a node to consumers that will send gradients back.
  std::unordered_map<const Node*, int> pending;
  for (const Node* n : between) {
    for (const Edge& e : n->out_edges()) {
      if (!e.IsControl() && between.count(e.dst)) ++pending[n];
    }
  }
  std::map<Output, std::vector<Output>> grads;  // per output: the gradients that reached it
  Scope gscope = scope.NewSubScope("gradients");
  for (size_t i = 0; i < ys.size(); ++i) {
    Output g = grad_ys.empty()
                   ? ops::OnesLike(gscope.WithOpName(ys[i].node->name() + "_grad_y"), ys[i])
                   : grad_ys[i];
    grads[ys[i]].push_back(g);
  }
  std::deque<const Node*> ready;
  std::unordered_set<const Node*> queued;
  for (const Output& y : ys) {
    if (pending[y.node] == 0 && queued.insert(y.node).second) ready.push_back(y.node);
  }
  while (!ready.empty()) {
    const Node* n = ready.front();
    ready.pop_front();
    Scope op_scope = gscope.NewSubScope(n->name() + "_grad");
    if (options.colocate_gradients_with_ops)
      op_scope = op_scope.ColocateWith(Operation(const_cast<Node*>(n)));
    // Sum each output's gradients; remember whether any arrived at all.
    std::vector<Output> out_grads(n->num_outputs());
    bool any = false;
    for (int o = 0; o < n->num_outputs(); ++o) {
      auto it = grads.find(Output(const_cast<Node*>(n), o));
      if (it != grads.end()) out_grads[o] = Aggregate(op_scope, it->second);
      any = any || out_grads[o].node != nullptr;
    }
    std::vector<Output> in_grads(n->num_inputs());
    if (any && n->num_inputs() > 0) {
      const OpDef& def = n->op_def();
      if (def.differentiable()) {
        if (!def.grad_fn()) return errors::Unimplemented("No gradient defined for op: ", n->op());
        for (int o = 0; o < n->num_outputs(); ++o) {
          if (out_grads[o].node == nullptr)
            out_grads[o] = ops::ZerosLike(op_scope, Output(const_cast<Node*>(n), o));
        }
        PF_RETURN_IF_ERROR(def.grad_fn()(op_scope, *n, out_grads, &in_grads));
        if (static_cast<int>(in_grads.size()) != n->num_inputs()) {
          return errors::Internal("Gradient of ", n->op(), " returned ", in_grads.size(),
                                  " gradients for ", n->num_inputs(), " inputs");
        }
        if (options.gate_gradients) {
          // Only gradients that flow on are gated: gating the others would force their computation.
          std::vector<Operation> all;
          for (int k = 0; k < n->num_inputs(); ++k) {
            if (in_grads[k].node != nullptr && between.count(n->input(k).node))
              all.emplace_back(in_grads[k].node);
          }
          if (all.size() > 1) {
            Scope gate = op_scope.NewSubScope("tuple").WithControlDependencies(all);
            for (int k = 0; k < n->num_inputs(); ++k) {
              if (in_grads[k].node != nullptr && between.count(n->input(k).node)) {
                in_grads[k] = ops::Identity(gate.WithOpName("control_dependency"), in_grads[k]);
              }
            }
          }
        }
      }
    }
    for (int k = 0; k < n->num_inputs(); ++k) {
      const Output& in = n->input(k);
      if (!between.count(in.node)) continue;
      const bool real =
          in.dtype() == DT_FLOAT || in.dtype() == DT_DOUBLE;  // no gradients into ints or bools
      if (in_grads[k].node != nullptr && real) grads[in].push_back(in_grads[k]);
      if (--pending[in.node] == 0 && queued.insert(in.node).second) ready.push_back(in.node);
    }
  }
  std::vector<Output> result;
  for (const Output& x : xs) {
    if (!between.count(x.node)) {
      result.emplace_back();
      continue;
    }
    auto it = grads.find(x);
    if (it == grads.end() || it->second.empty()) {
      // Reachable only through paths that carry no gradient (StopGradient, integer ops).
      result.push_back(ops::ZerosLike(gscope.WithOpName(x.node->name() + "_zero_grad"), x));
    } else {
      result.push_back(Aggregate(gscope.NewSubScope(x.node->name() + "_sum"), it->second));
    }
  }
  return result;
}

std::vector<Output> Gradients(const Scope& scope, const std::vector<Output>& ys,
                              const std::vector<Output>& xs, const std::vector<Output>& grad_ys,
                              const GradientOptions& options) {
  return TryGradients(scope, ys, xs, grad_ys, options).ValueOrThrow();
}

}  // namespace pf
