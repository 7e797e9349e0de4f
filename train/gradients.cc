#include "placeflow/train/gradients.h"

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/ops.h"
#include "placeflow/train/while_gradients.h"

namespace pf {
namespace {

using NodeSet = std::unordered_set<const Node*>;

// Sums the gradients that reached one output; null when none did.
Output Aggregate(const Scope& scope, const std::vector<Output>& grads) {
  if (grads.empty()) return Output();
  if (grads.size() == 1) return grads[0];
  return ops::AddN(scope.WithOpName("AddN"), grads);
}

Node* Mutable(const Node* n) { return const_cast<Node*>(n); }

// Nodes that reach a y, walking inputs backwards from the ys (not past a stop node).
NodeSet NodesReachingYs(const std::vector<Output>& ys, const std::vector<Output>& stops) {
  NodeSet stop;
  for (const Output& o : stops) stop.insert(o.node);
  NodeSet reaches_y;
  std::vector<const Node*> stack;
  for (const Output& y : ys) {
    if (reaches_y.insert(y.node).second) stack.push_back(y.node);
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (stop.count(n)) continue;
    for (const Output& in : n->inputs()) {
      if (reaches_y.insert(in.node).second) stack.push_back(in.node);
    }
  }
  return reaches_y;
}

// The nodes gradients flow through: reached from an x (walking data out-edges) and reaching a
// y. An x outside that set is an error unless options.null_for_unreachable. The ys are added
// afterwards: they are where the sweep starts even when no x reaches them.
StatusOr<NodeSet> NodesBetween(const std::vector<Output>& ys, const std::vector<Output>& xs,
                               const GradientOptions& options) {
  const NodeSet reaches_y = NodesReachingYs(ys, options.stop_gradients);
  NodeSet between;
  std::vector<const Node*> stack;
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
  return between;
}

// The backward sweep over the nodes between xs and ys. A node is visited once every consumer
// in the set has sent its gradients back (pending count zero); its output gradients are summed
// and its GradFn turns them into gradients for its inputs.
class BackwardSweep {
 public:
  BackwardSweep(const Scope& gradients_scope, NodeSet between, const GradientOptions& options)
      : scope_(gradients_scope), between_(std::move(between)), options_(options) {
    FindLoops();
    CountPending();
  }

  // Starts from the ys with grad_ys (default: ones) and visits every node it reaches.
  Status Run(const std::vector<Output>& ys, const std::vector<Output>& grad_ys) {
    SeedYs(ys, grad_ys);
    while (!ready_.empty()) {
      const Node* n = ready_.front();
      ready_.pop_front();
      PF_RETURN_IF_ERROR(Visit(n));
    }
    return Status::OK();
  }

  // The summed gradient of each x; null (TensorFlow's None) for an x outside the set and for
  // one whose every path carries no gradient (StopGradient, integer or non-differentiable ops).
  std::vector<Output> GradientsOf(const std::vector<Output>& xs) const {
    std::vector<Output> result;
    for (const Output& x : xs) {
      auto it = between_.count(x.node) ? grads_.find(x) : grads_.end();
      if (it == grads_.end() || it->second.empty()) {
        result.emplace_back();
      } else {
        result.push_back(Aggregate(scope_.NewSubScope(x.node->name() + "_sum"), it->second));
      }
    }
    return result;
  }

 private:
  // The while loop each node between xs and ys belongs to (the outermost, when nested): the
  // sweep treats a loop as one node, from its Exits to its Enters' inputs. Only loops whose
  // Exits the sweep goes through count (a loop's own backward body sweeps its body's nodes).
  void FindLoops() {
    std::vector<const ops::internal::WhileLoopInfo*> crossed;
    for (const auto& l : ops::internal::WhileLoops(scope_.graph())) {
      if (std::any_of(l.exits.begin(), l.exits.end(),
                      [&](const Output& x) { return between_.count(x.node) > 0; }))
        crossed.push_back(&l);
    }
    for (const Node* n : between_) {
      const ops::internal::WhileLoopInfo* best = nullptr;
      for (const auto* l : crossed) {
        if (l->Contains(n) && (best == nullptr || l->first_id < best->first_id)) best = l;
      }
      if (best != nullptr) loop_of_[n] = best;
    }
  }
  bool Stopped(const Node* n) const {
    return std::any_of(options_.stop_gradients.begin(), options_.stop_gradients.end(),
                       [n](const Output& o) { return o.node == n; });
  }
  bool IsExitOf(const Node* n, const ops::internal::WhileLoopInfo& l) const {
    return std::any_of(l.exits.begin(), l.exits.end(),
                       [n](const Output& x) { return x.node == n; });
  }
  // Pending counts: data edges from a node to consumers that will send gradients back. Inside
  // a loop only its Exits count (their consumers are outside).
  void CountPending() {
    for (const Node* n : between_) {
      auto loop = loop_of_.find(n);
      if (loop != loop_of_.end() && !IsExitOf(n, *loop->second)) continue;
      for (const Edge& e : n->out_edges()) {
        if (!e.IsControl() && between_.count(e.dst)) ++pending_[n];
      }
    }
  }

  // A loop's Exit is ready: once all of them are, the backward loop hands its Enters' inputs
  // their gradients.
  Status VisitLoopExit(const Node* n, const ops::internal::WhileLoopInfo& l) {
    if (!IsExitOf(n, l)) {
      return errors::Unimplemented("Gradients of '", n->name(), "': it is inside while loop '",
                                   l.frame, "'; take gradients of the loop's outputs");
    }
    if (++exits_ready_[&l] < std::count_if(
                                 l.exits.begin(), l.exits.end(),
                                 [&](const Output& x) { return between_.count(x.node) > 0; }))
      return Status::OK();
    std::vector<Output> exit_grads;
    for (const Output& x : l.exits) {
      auto it = grads_.find(x);
      exit_grads.push_back(it == grads_.end() ? Output() : Aggregate(scope_, it->second));
    }
    PF_ASSIGN_OR_RETURN(internal::LoopInputGradients g,
                        internal::WhileLoopGradients(scope_, l, exit_grads, options_));
    for (size_t i = 0; i < l.enters.size(); ++i) {
      if (between_.count(l.enters[i].node)) SendToInputs(l.enters[i].node, {g.enters[i]});
    }
    for (size_t j = 0; j < l.invariants.size(); ++j) {
      if (between_.count(l.invariants[j].node))
        SendToInputs(l.invariants[j].node, {g.invariants[j]});
    }
    return Status::OK();
  }

  void SeedYs(const std::vector<Output>& ys, const std::vector<Output>& grad_ys) {
    for (size_t i = 0; i < ys.size(); ++i) {
      // The seed sits with its y (TensorFlow colocates grad_ys with y): elsewhere it would cost
      // a round trip between devices.
      Output g = grad_ys.empty() ? ops::OnesLike(scope_.WithOpName(ys[i].node->name() + "_grad_y")
                                                     .ColocateWith(Operation(Mutable(ys[i].node))),
                                                 ys[i])
                                 : grad_ys[i];
      grads_[ys[i]].push_back(g);
    }
    for (const Output& y : ys) {
      if (pending_[y.node] == 0 && queued_.insert(y.node).second) ready_.push_back(y.node);
    }
  }

  Status Visit(const Node* n) {
    if (auto loop = loop_of_.find(n); loop != loop_of_.end())
      return VisitLoopExit(n, *loop->second);
    Scope op_scope = scope_.NewSubScope(n->name() + "_grad");
    if (options_.colocate_gradients_with_ops)
      op_scope = op_scope.ColocateWith(Operation(Mutable(n)));
    std::vector<Output> out_grads = SumOutputGradients(op_scope, n);
    std::vector<Output> in_grads(n->num_inputs());
    const bool any = std::any_of(out_grads.begin(), out_grads.end(),
                                 [](const Output& g) { return g.node != nullptr; });
    if (any && n->num_inputs() > 0 && n->op_def().differentiable() && !Stopped(n)) {
      PF_RETURN_IF_ERROR(InputGradients(op_scope, n, &out_grads, &in_grads));
      if (options_.gate_gradients) Gate(op_scope, n, &in_grads);
    }
    SendToInputs(n, in_grads);
    return Status::OK();
  }

  // Each output's gradients summed; null where none arrived.
  std::vector<Output> SumOutputGradients(const Scope& op_scope, const Node* n) const {
    std::vector<Output> out_grads(n->num_outputs());
    for (int o = 0; o < n->num_outputs(); ++o) {
      auto it = grads_.find(Output(Mutable(n), o));
      if (it != grads_.end()) out_grads[o] = Aggregate(op_scope, it->second);
    }
    return out_grads;
  }

  // Runs the op's GradFn; outputs that got no gradient count as zeros (multi-output ops).
  Status InputGradients(const Scope& op_scope, const Node* n, std::vector<Output>* out_grads,
                        std::vector<Output>* in_grads) const {
    const OpDef& def = n->op_def();
    if (!def.grad_fn()) return errors::Unimplemented("No gradient defined for op: ", n->op());
    for (int o = 0; o < n->num_outputs(); ++o) {
      if ((*out_grads)[o].node == nullptr)
        (*out_grads)[o] = ops::ZerosLike(op_scope, Output(Mutable(n), o));
    }
    PF_RETURN_IF_ERROR(def.grad_fn()(op_scope, *n, *out_grads, in_grads));
    if (static_cast<int>(in_grads->size()) != n->num_inputs()) {
      return errors::Internal("Gradient of ", n->op(), " returned ", in_grads->size(),
                              " gradients for ", n->num_inputs(), " inputs");
    }
    return Status::OK();
  }

  // TensorFlow's GATE_OP: the input gradients that flow on are released together, behind
  // control dependencies on all of them. Gating the others would force their computation.
  void Gate(const Scope& op_scope, const Node* n, std::vector<Output>* in_grads) const {
    auto flows_on = [&](int k) {
      return (*in_grads)[k].node != nullptr && between_.count(n->input(k).node);
    };
    std::vector<Operation> all;
    for (int k = 0; k < n->num_inputs(); ++k) {
      if (flows_on(k)) all.emplace_back((*in_grads)[k].node);
    }
    if (all.size() <= 1) return;
    Scope gate = op_scope.NewSubScope("tuple").WithControlDependencies(all);
    for (int k = 0; k < n->num_inputs(); ++k) {
      if (flows_on(k))
        (*in_grads)[k] = ops::Identity(gate.WithOpName("control_dependency"), (*in_grads)[k]);
    }
  }

  // Hands each input its gradient (floating inputs only: float, double, half, bfloat16, as in
  // TensorFlow) and queues inputs whose consumers have all reported, whether or not a gradient
  // came.
  void SendToInputs(const Node* n, const std::vector<Output>& in_grads) {
    for (int k = 0; k < n->num_inputs(); ++k) {
      const Output& in = n->input(k);
      if (!between_.count(in.node)) continue;
      if (in_grads[k].node != nullptr && DTypeIsFloating(in.dtype()))
        grads_[in].push_back(in_grads[k]);
      if (--pending_[in.node] == 0 && queued_.insert(in.node).second) ready_.push_back(in.node);
    }
  }

  const Scope scope_;  // gradients/
  const NodeSet between_;
  const GradientOptions& options_;
  std::unordered_map<const Node*, int> pending_;
  std::map<Output, std::vector<Output>> grads_;  // per output: the gradients that reached it
  std::deque<const Node*> ready_;
  NodeSet queued_;
  std::unordered_map<const Node*, const ops::internal::WhileLoopInfo*> loop_of_;
  std::map<const ops::internal::WhileLoopInfo*, int> exits_ready_;
};

}  // namespace

namespace internal {

StatusOr<std::vector<Output>> TryGradients(const Scope& scope, const std::vector<Output>& ys,
                                           const std::vector<Output>& xs,
                                           const std::vector<Output>& grad_ys,
                                           const GradientOptions& options) {
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    return errors::InvalidArgument("Gradients: ", grad_ys.size(), " grad_ys for ", ys.size(),
                                   " ys");
  }
  PF_ASSIGN_OR_RETURN(NodeSet between, NodesBetween(ys, xs, options));
  BackwardSweep sweep(scope.NewSubScope("gradients"), std::move(between), options);
  PF_RETURN_IF_ERROR(sweep.Run(ys, grad_ys));
  return sweep.GradientsOf(xs);
}

}  // namespace internal

std::vector<Output> Gradients(const Scope& scope, const std::vector<Output>& ys,
                              const std::vector<Output>& xs, const std::vector<Output>& grad_ys,
                              const GradientOptions& options) {
  return internal::TryGradients(scope, ys, xs, grad_ys, options).ValueOrThrow();
}

}  // namespace pf
