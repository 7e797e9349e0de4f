// ops::Cond and ops::WhileLoop (ops/control_flow.h): TensorFlow's cond and while_loop graphs
// over the control-flow primitives.
#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>

#include "placeflow/ops/control/cond_contexts.h"
#include "placeflow/ops/control/control_util.h"
#include "placeflow/ops/control_flow.h"
#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/ops.h"

namespace pf::ops {

SwitchOutputs Switch(const Scope& s, Output data, Output pred) {
  Node* n = NodeBuilder(s, "Switch").Input(data).Input(pred).Finalize();
  return {Output(n, 0), Output(n, 1)};
}
MergeOutputs Merge(const Scope& s, const std::vector<Output>& inputs) {
  Node* n = NodeBuilder(s, "Merge").InputList(inputs).Finalize();
  return {Output(n, 0), Output(n, 1)};
}
Output Enter(const Scope& s, Output data, const std::string& frame_name, bool is_constant,
             int parallel_iterations) {
  return NodeBuilder(s, "Enter")
      .Input(data)
      .Attr("frame_name", frame_name)
      .Attr("is_constant", is_constant)
      .Attr("parallel_iterations", static_cast<int64_t>(parallel_iterations))
      .Finalize();
}
Output Exit(const Scope& s, Output data) { return NodeBuilder(s, "Exit").Input(data).Finalize(); }
Output NextIteration(const Scope& s, Output data) {
  return NodeBuilder(s, "NextIteration").Input(data).Finalize();
}
Output LoopCond(const Scope& s, Output pred) {
  return NodeBuilder(s, "LoopCond").Input(pred).Finalize();
}

namespace {

// The id the next node of `g` gets (ids grow with each node added).
int NextNodeId(const Graph& g) { return g.nodes().empty() ? 0 : g.nodes().back()->id() + 1; }

// What TensorFlow's control-flow contexts do to the ops a branch or loop function built: an
// input from outside (a node made before the context) goes in through `bring_in`, made once
// per tensor; an op with no input from inside, other than values brought in, gets a control
// input from `pivot`, so that it runs only when the branch (or the iteration) does.
class Context {
 public:
  Context(Graph* g, int first_id, Node* pivot, std::function<Output(const Output&)> bring_in,
          bool refs_enter)
      : g_(g),
        first_id_(first_id),
        pivot_(pivot),
        bring_in_(std::move(bring_in)),
        refs_enter_(refs_enter) {}

  // Forward nodes a nested loop's gradient added while this context's function ran are not
  // inside (internal::MarkForwardNodes).
  bool Inside(const Node* n) const {
    return n->id() >= first_id_ && !internal::IsMarkedForward(g_, n);
  }

  // Treats the nodes made since the graph had `num_nodes` nodes.
  void Adopt(size_t num_nodes) {
    const std::vector<Node*> added(g_->nodes().begin() + num_nodes, g_->nodes().end());
    for (Node* n : added) {
      if (internal::IsMarkedForward(g_, n)) continue;
      bool from_inside = false;
      for (int k = 0; k < n->num_inputs(); ++k) {
        const Output in = n->input(k);
        if (Inside(in.node)) {
          from_inside = from_inside || !brought_in_.count(in.node);
          continue;
        }
        // A cond's op updates a variable outside in place (no Switch: the reference must stay
        // one); a loop brings the reference in through an Enter (graph.h ReferencedVariable).
        if (n->IsRefInput(k) && !refs_enter_) continue;
        g_->UpdateEdge(BringIn(in), n, k);
      }
      for (const Node* c : n->control_inputs()) from_inside = from_inside || Inside(c);
      if (!from_inside && n != pivot_) g_->AddControlEdge(pivot_, n);
    }
  }
  Output BringIn(const Output& outside) {
    auto it = values_.find(outside);
    if (it != values_.end()) return it->second;
    Output inside = bring_in_(outside);
    brought_in_.insert(inside.node);
    values_.emplace(outside, inside);
    return inside;
  }

 private:
  Graph* g_;
  int first_id_;
  Node* pivot_;
  std::function<Output(const Output&)> bring_in_;
  bool refs_enter_;
  std::map<Output, Output> values_;
  std::set<const Node*> brought_in_;
};

// Calls `fn` in `ctx` and returns its results, each from inside the context.
template <typename Fn>
std::vector<Output> BuildIn(Context* ctx, Graph* g, const Fn& fn) {
  const size_t before = g->nodes().size();
  std::vector<Output> out = fn();
  ctx->Adopt(before);
  for (Output& o : out) {
    if (!ctx->Inside(o.node)) o = ctx->BringIn(o);
  }
  return out;
}

}  // namespace

std::vector<Output> Cond(const Scope& s, Output pred, const BranchFn& true_fn,
                         const BranchFn& false_fn) {
  Graph* g = s.graph();
  if (pred.dtype() != DT_BOOL || (!pred.shape().unknown_rank() && pred.shape().rank() != 0)) {
    ThrowError(errors::InvalidArgument("Cond's predicate '", pred.name(),
                                       "' must be a bool scalar, got ", DTypeName(pred.dtype()),
                                       " ", pred.shape().ToString()));
  }
  const Scope cs = s.WithExactNameScope(s.GetUniqueNameForOp("cond"));
  const int first_id = NextNodeId(*g);
  SwitchOutputs sw = Switch(cs.WithOpName("Switch"), pred, pred);
  Node* pivot_t = Identity(cs.WithOpName("switch_t"), sw.output_true).node;
  Node* pivot_f = Identity(cs.WithOpName("switch_f"), sw.output_false).node;
  // One Switch per value brought in from outside, shared by both branches.
  std::map<Output, SwitchOutputs> switches;
  auto switch_of = [&](const Output& x) -> const SwitchOutputs& {
    auto it = switches.find(x);
    if (it == switches.end())
      it = switches.emplace(x, Switch(cs.WithNoControlDependencies(), x, pred)).first;
    return it->second;
  };
  const Scope branch_scope = cs.WithNoControlDependencies();
  internal::CondInfo info;
  info.pivot_t = pivot_t;
  info.pivot_f = pivot_f;
  info.first_id = first_id;
  info.true_first = NextNodeId(*g);
  Context t(
      g, first_id, pivot_t, [&](const Output& x) { return switch_of(x).output_true; }, false);
  std::vector<Output> rt = BuildIn(&t, g, [&] { return true_fn(branch_scope); });
  info.true_last = info.false_first = NextNodeId(*g);
  --info.true_last;
  Context f(
      g, first_id, pivot_f, [&](const Output& x) { return switch_of(x).output_false; }, false);
  std::vector<Output> rf = BuildIn(&f, g, [&] { return false_fn(branch_scope); });
  info.false_last = NextNodeId(*g) - 1;
  if (rt.size() != rf.size()) {
    ThrowError(errors::InvalidArgument("The branches of cond '", cs.name_scope(), "' return ",
                                       rt.size(), " and ", rf.size(),
                                       " tensors: they must return as many"));
  }
  std::vector<Output> out;
  for (size_t i = 0; i < rt.size(); ++i) {
    if (rt[i].dtype() != rf[i].dtype()) {
      ThrowError(errors::InvalidArgument("Output ", i, " of cond '", cs.name_scope(), "' is ",
                                         DTypeName(rt[i].dtype()), " in the true branch ('",
                                         rt[i].name(), "') and ", DTypeName(rf[i].dtype()),
                                         " in the false branch ('", rf[i].name(), "')"));
    }
    out.push_back(Merge(cs.WithOpName("Merge"), {rf[i], rt[i]}).output);
    info.merges.push_back(out.back().node);
  }
  info.last_id = NextNodeId(*g) - 1;
  info.switches.insert(sw.output_true.node);
  for (const auto& [x, outputs] : switches) info.switches.insert(outputs.output_true.node);
  internal::Conds(g).push_back(std::move(info));
  return out;
}

namespace {

// The shape each loop variable may take: its invariant, or the shape it enters with.
std::vector<pf::Shape> Invariants(const std::string& loop, const std::vector<Output>& vars,
                                  const std::vector<pf::Shape>& given) {
  if (!given.empty() && given.size() != vars.size()) {
    ThrowError(errors::InvalidArgument("While loop '", loop, "' has ", vars.size(),
                                       " loop variables but ", given.size(), " shape invariants"));
  }
  std::vector<pf::Shape> shapes;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (given.empty()) {
      shapes.push_back(vars[i].shape());
      continue;
    }
    if (!vars[i].shape().IsCompatibleWith(given[i])) {
      ThrowError(errors::InvalidArgument("The shape invariant ", given[i].ToString(),
                                         " of loop variable ", i, " ('", vars[i].name(), "') of '",
                                         loop, "' is not compatible with its initial shape ",
                                         vars[i].shape().ToString()));
    }
    shapes.push_back(given[i]);
  }
  return shapes;
}

// What the body returns for loop variable `user` (entering as `var`) must keep its dtype and
// fit its shape invariant.
void CheckNext(const std::string& frame, size_t user, const Output& var, const Output& next,
               const pf::Shape& invariant) {
  if (next.dtype() != var.dtype()) {
    ThrowError(errors::InvalidArgument(
        "Loop variable ", user, " of '", frame, "' enters as ", DTypeName(var.dtype()), " ('",
        var.name(), "') but the body returns ", DTypeName(next.dtype()), " ('", next.name(), "')"));
  }
  if (!control::FitsInvariant(next.shape(), invariant)) {
    ThrowError(errors::InvalidArgument(
        "Input tensor '", var.name(), "' enters the loop '", frame, "' with shape ",
        invariant.ToString(), ", but has shape ", next.shape().ToString(),
        " after one iteration. To allow the shape to vary across iterations, use the "
        "`shape_invariants` argument of WhileLoop (WhileOptions::shape_invariants)"));
  }
}

}  // namespace

namespace {

struct WhileLoopRegistry {
  std::deque<internal::WhileLoopInfo> loops;
  // internal::MarkForwardNodes: node id -> the loop whose frame it is in (null: none).
  std::unordered_map<int, const internal::WhileLoopInfo*> forward_nodes;
};

// WhileLoop's steps: the loop variables' Enter and Merge, the condition, the Switches and
// Exits, the body, and the back edges.
class WhileBuilder {
 public:
  WhileBuilder(const Scope& s, const WhileOptions& options, const internal::CaptureFn& capture)
      : g_(s.graph()),
        frame_(s.GetUniqueNameForOp("while")),
        ws_(s.WithExactNameScope(frame_)),
        inner_(ws_.WithNoControlDependencies()),
        options_(options),
        capture_(capture) {
    info_.frame = frame_;
    info_.parallel_iterations = std::max(options.parallel_iterations, 1);
  }

  std::vector<Output> Build(const LoopCondFn& cond, const LoopBodyFn& body,
                            const std::vector<Output>& loop_vars) {
    if (loop_vars.empty())
      ThrowError(
          errors::InvalidArgument("While loop '", frame_, "' needs at least one loop variable"));
    // maximum_iterations: a counter runs as loop variable 0 (TensorFlow's way).
    counted_ = options_.maximum_iterations.has_value();
    vars_ = loop_vars;
    info_.shapes = Invariants(frame_, loop_vars, options_.shape_invariants);
    if (counted_) {
      vars_.insert(vars_.begin(), ConstInt(ws_.WithOpName("iteration_counter"), 0));
      info_.shapes.insert(info_.shapes.begin(), pf::Shape{});
    }
    info_.first_id = NextNodeId(*g_);
    EnterAndMerge();
    Condition(cond);
    Body(body, loop_vars.size());
    info_.last_id = NextNodeId(*g_) - 1;
    std::vector<Output> exits = info_.exits;
    if (counted_) exits.erase(exits.begin());
    g_->GetOrCreateExtension<WhileLoopRegistry>()->loops.push_back(std::move(info_));
    return exits;
  }

 private:
  void EnterAndMerge() {
    for (size_t i = 0; i < vars_.size(); ++i) {
      info_.enters.push_back(Enter(ws_.WithOpName("Enter"), vars_[i], frame_,
                                   /*is_constant=*/false, info_.parallel_iterations));
      Node* m = Merge(inner_.WithOpName("Merge"), {info_.enters[i], info_.enters[i]}).output.node;
      g_->SetOutputShape(m, 0, info_.shapes[i]);  // the back edge closes in Body
      info_.merges.push_back(m);
    }
  }
  // Values from outside reach every iteration through constant Enters.
  Output EnterConstant(const Output& x) {
    Output e =
        Enter(ws_.WithOpName("Enter"), x, frame_, /*is_constant=*/true, info_.parallel_iterations);
    info_.invariants.push_back(e);
    return e;
  }
  void Condition(const LoopCondFn& cond) {
    Context ctx(
        g_, info_.first_id, info_.merges[0], [&](const Output& x) { return EnterConstant(x); },
        true);
    std::vector<Output> merged;
    for (Node* m : info_.merges) merged.emplace_back(m, 0);
    const std::vector<Output> user(merged.begin() + (counted_ ? 1 : 0), merged.end());
    Output pred = BuildIn(&ctx, g_, [&] {
      Output c = cond(inner_, user);
      if (counted_)
        c = LogicalAnd(inner_, Less(inner_, merged[0], *options_.maximum_iterations), c);
      return std::vector<Output>{c};
    })[0];
    if (pred.dtype() != DT_BOOL || (!pred.shape().unknown_rank() && pred.shape().rank() != 0)) {
      ThrowError(errors::InvalidArgument(
          "The condition of while loop '", frame_, "' must return a bool scalar, got ",
          DTypeName(pred.dtype()), " ", pred.shape().ToString(), " ('", pred.name(), "')"));
    }
    info_.loop_cond = LoopCond(inner_.WithOpName("LoopCond"), pred);
    for (size_t i = 0; i < vars_.size(); ++i) {
      SwitchOutputs sw = Switch(inner_.WithOpName("Switch"), merged[i], info_.loop_cond);
      info_.exits.push_back(Exit(inner_.WithOpName("Exit"), sw.output_false));
      info_.body_in.push_back(Identity(inner_.WithOpName("Identity"), sw.output_true));
    }
  }
  void Body(const LoopBodyFn& body, size_t num_user_vars) {
    Node* pivot = info_.body_in[0].node;
    Context ctx(
        g_, info_.first_id, pivot,
        [&](const Output& x) {
          if (capture_) {
            std::optional<Output> v =
                capture_(x, pivot, [&](const Output& y) { return EnterConstant(y); });
            if (v) return *v;
          }
          return EnterConstant(x);
        },
        true);
    const std::vector<Output> user(info_.body_in.begin() + (counted_ ? 1 : 0), info_.body_in.end());
    info_.next = BuildIn(&ctx, g_, [&] {
      std::vector<Output> out = body(inner_, user);
      if (counted_) out.insert(out.begin(), Add(inner_, info_.body_in[0], ConstInt(inner_, 1)));
      return out;
    });
    if (info_.next.size() != vars_.size()) {
      ThrowError(errors::InvalidArgument("The body of while loop '", frame_, "' returns ",
                                         info_.next.size() - (counted_ ? 1 : 0), " tensors for ",
                                         num_user_vars, " loop variables"));
    }
    for (size_t i = 0; i < vars_.size(); ++i) {
      // A value brought in (the body returned an outside tensor) reaches every iteration, the
      // last, dead one too: through the pivot, its NextIteration runs only with the body
      // (TensorFlow's _MaybeAddControlDependency).
      if (std::find(info_.invariants.begin(), info_.invariants.end(), info_.next[i]) !=
          info_.invariants.end()) {
        info_.next[i] = Identity(inner_.WithControlDependencies({Operation(pivot)}), info_.next[i]);
      }
      CheckNext(frame_, counted_ ? i - 1 : i, vars_[i], info_.next[i], info_.shapes[i]);
      Output back = NextIteration(inner_.WithOpName("NextIteration"), info_.next[i]);
      info_.next_iterations.push_back(back.node);
      g_->UpdateEdge(back, info_.merges[i], 1);
    }
  }

  Graph* g_;
  const std::string frame_;
  const Scope ws_, inner_;
  const WhileOptions& options_;
  const internal::CaptureFn& capture_;
  bool counted_ = false;
  std::vector<Output> vars_;
  internal::WhileLoopInfo info_;
};

}  // namespace

std::vector<Output> WhileLoop(const Scope& s, const LoopCondFn& cond, const LoopBodyFn& body,
                              const std::vector<Output>& loop_vars, const WhileOptions& options) {
  return internal::WhileLoop(s, cond, body, loop_vars, options, nullptr);
}

namespace internal {

std::vector<Output> WhileLoop(const Scope& s, const LoopCondFn& cond, const LoopBodyFn& body,
                              const std::vector<Output>& loop_vars, const WhileOptions& options,
                              const CaptureFn& capture) {
  return WhileBuilder(s, options, capture).Build(cond, body, loop_vars);
}

const std::deque<WhileLoopInfo>& WhileLoops(Graph* g) {
  return g->GetOrCreateExtension<WhileLoopRegistry>()->loops;
}

void MarkForwardNodes(Graph* g, int first_id, int last_id, const WhileLoopInfo* loop) {
  auto& marked = g->GetOrCreateExtension<WhileLoopRegistry>()->forward_nodes;
  for (int id = first_id; id <= last_id; ++id) marked[id] = loop;
}

bool IsMarkedForward(Graph* g, const Node* n, const WhileLoopInfo** loop) {
  const auto& marked = g->GetOrCreateExtension<WhileLoopRegistry>()->forward_nodes;
  auto it = marked.find(n->id());
  if (it == marked.end()) return false;
  if (loop != nullptr) *loop = it->second;
  return true;
}

namespace {
struct CondRegistry {
  std::deque<CondInfo> conds;
  std::map<const Node*, SwitchOutputs> grad_switches;
};
}  // namespace

std::deque<CondInfo>& Conds(Graph* g) { return g->GetOrCreateExtension<CondRegistry>()->conds; }

std::map<const Node*, SwitchOutputs>& CondGradSwitches(Graph* g) {
  return g->GetOrCreateExtension<CondRegistry>()->grad_switches;
}

Branch BranchOf(const std::vector<const CondInfo*>& conds, const Output& x) {
  Branch best;
  for (const CondInfo* c : conds) {
    if (!c->Contains(x.node) || (best.cond != nullptr && best.cond->first_id > c->first_id))
      continue;
    const int id = x.node->id();
    if (c->switches.count(x.node)) {
      best = {c, x.index == 1};
    } else if (x.node == c->pivot_t || x.node == c->pivot_f) {
      best = {c, x.node == c->pivot_t};
    } else if (id >= c->true_first && id <= c->true_last) {
      best = {c, true};
    } else if (id >= c->false_first && id <= c->false_last) {
      best = {c, false};
    }
  }
  return best;
}

}  // namespace internal
}  // namespace pf::ops
