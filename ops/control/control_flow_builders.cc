// ops::Cond and ops::WhileLoop (ops/control_flow.h): TensorFlow's cond and while_loop graphs
// over the control-flow primitives.
#include <fmt/format.h>

#include <map>
#include <set>

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

  bool Inside(const Node* n) const { return n->id() >= first_id_; }

  // Treats the nodes made since the graph had `num_nodes` nodes.
  void Adopt(size_t num_nodes) {
    const std::vector<Node*> added(g_->nodes().begin() + num_nodes, g_->nodes().end());
    for (Node* n : added) {
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

[[noreturn]] void Throw(Status s) { throw Error(std::move(s)); }

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
    Throw(errors::InvalidArgument("Cond's predicate '", pred.name(),
                                  "' must be a bool scalar, got ", DTypeName(pred.dtype()), " ",
                                  pred.shape().ToString()));
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
  Context t(
      g, first_id, pivot_t, [&](const Output& x) { return switch_of(x).output_true; }, false);
  std::vector<Output> rt = BuildIn(&t, g, [&] { return true_fn(branch_scope); });
  Context f(
      g, first_id, pivot_f, [&](const Output& x) { return switch_of(x).output_false; }, false);
  std::vector<Output> rf = BuildIn(&f, g, [&] { return false_fn(branch_scope); });
  if (rt.size() != rf.size()) {
    Throw(errors::InvalidArgument("The branches of cond '", cs.name_scope(), "' return ", rt.size(),
                                  " and ", rf.size(), " tensors: they must return as many"));
  }
  std::vector<Output> out;
  for (size_t i = 0; i < rt.size(); ++i) {
    if (rt[i].dtype() != rf[i].dtype()) {
      Throw(errors::InvalidArgument("Output ", i, " of cond '", cs.name_scope(), "' is ",
                                    DTypeName(rt[i].dtype()), " in the true branch ('",
                                    rt[i].name(), "') and ", DTypeName(rf[i].dtype()),
                                    " in the false branch ('", rf[i].name(), "')"));
    }
    out.push_back(Merge(cs.WithOpName("Merge"), {rf[i], rt[i]}).output);
  }
  return out;
}

namespace {

// The shape each loop variable may take: its invariant, or the shape it enters with.
std::vector<pf::Shape> Invariants(const std::string& loop, const std::vector<Output>& vars,
                                  const std::vector<pf::Shape>& given) {
  if (!given.empty() && given.size() != vars.size()) {
    Throw(errors::InvalidArgument("While loop '", loop, "' has ", vars.size(),
                                  " loop variables but ", given.size(), " shape invariants"));
  }
  std::vector<pf::Shape> shapes;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (given.empty()) {
      shapes.push_back(vars[i].shape());
      continue;
    }
    if (!vars[i].shape().IsCompatibleWith(given[i])) {
      Throw(errors::InvalidArgument("The shape invariant ", given[i].ToString(),
                                    " of loop variable ", i, " ('", vars[i].name(), "') of '", loop,
                                    "' is not compatible with its initial shape ",
                                    vars[i].shape().ToString()));
    }
    shapes.push_back(given[i]);
  }
  return shapes;
}

// Whether a value of shape `s` may take the place of one of shape `invariant`.
bool Fits(const pf::Shape& s, const pf::Shape& invariant) {
  if (invariant.unknown_rank()) return true;
  if (s.unknown_rank() || s.rank() != invariant.rank()) return false;
  for (int d = 0; d < s.rank(); ++d) {
    if (invariant.dim(d) >= 0 && s.dim(d) != invariant.dim(d)) return false;
  }
  return true;
}

// What the body returns for loop variable `user` (entering as `var`) must keep its dtype and
// fit its shape invariant.
void CheckNext(const std::string& frame, size_t user, const Output& var, const Output& next,
               const pf::Shape& invariant) {
  if (next.dtype() != var.dtype()) {
    Throw(errors::InvalidArgument(
        "Loop variable ", user, " of '", frame, "' enters as ", DTypeName(var.dtype()), " ('",
        var.name(), "') but the body returns ", DTypeName(next.dtype()), " ('", next.name(), "')"));
  }
  if (!Fits(next.shape(), invariant)) {
    Throw(errors::InvalidArgument(
        "Input tensor '", var.name(), "' enters the loop '", frame, "' with shape ",
        invariant.ToString(), ", but has shape ", next.shape().ToString(),
        " after one iteration. To allow the shape to vary across iterations, use the "
        "`shape_invariants` argument of WhileLoop (WhileOptions::shape_invariants)"));
  }
}

}  // namespace

std::vector<Output> WhileLoop(const Scope& s, const LoopCondFn& cond, const LoopBodyFn& body,
                              const std::vector<Output>& loop_vars, const WhileOptions& options) {
  Graph* g = s.graph();
  const std::string frame = s.GetUniqueNameForOp("while");
  if (loop_vars.empty())
    Throw(errors::InvalidArgument("While loop '", frame, "' needs at least one loop variable"));
  const Scope ws = s.WithExactNameScope(frame);
  const Scope inner = ws.WithNoControlDependencies();
  const int p = std::max(options.parallel_iterations, 1);
  // maximum_iterations: a counter runs as loop variable 0 (TensorFlow's way).
  std::vector<Output> vars = loop_vars;
  std::vector<pf::Shape> shapes = Invariants(frame, loop_vars, options.shape_invariants);
  const bool counted = options.maximum_iterations.has_value();
  if (counted) {
    vars.insert(vars.begin(), ConstInt(ws.WithOpName("iteration_counter"), 0));
    shapes.insert(shapes.begin(), pf::Shape{});
  }
  const int first_id = NextNodeId(*g);
  std::vector<Node*> merges;
  std::vector<Output> merged;
  for (size_t i = 0; i < vars.size(); ++i) {
    Output enter = Enter(ws.WithOpName("Enter"), vars[i], frame, /*is_constant=*/false, p);
    Node* m = Merge(inner.WithOpName("Merge"), {enter, enter}).output.node;
    g->SetOutputShape(m, 0, shapes[i]);  // the back edge closes below
    merges.push_back(m);
    merged.push_back(Output(m, 0));
  }
  // Values from outside reach every iteration through constant Enters.
  auto enter_constant = [&](const Output& x) {
    return Enter(ws.WithOpName("Enter"), x, frame, /*is_constant=*/true, p);
  };
  Context cond_ctx(g, first_id, merges[0], enter_constant, true);
  const std::vector<Output> user_vars(merged.begin() + (counted ? 1 : 0), merged.end());
  Output pred = BuildIn(&cond_ctx, g, [&] {
    Output c = cond(inner, user_vars);
    if (counted) {
      Output more = Less(inner, merged[0], *options.maximum_iterations);
      c = LogicalAnd(inner, more, c);
    }
    return std::vector<Output>{c};
  })[0];
  if (pred.dtype() != DT_BOOL || (!pred.shape().unknown_rank() && pred.shape().rank() != 0)) {
    Throw(errors::InvalidArgument("The condition of while loop '", frame,
                                  "' must return a bool scalar, got ", DTypeName(pred.dtype()), " ",
                                  pred.shape().ToString(), " ('", pred.name(), "')"));
  }
  Output loop_cond = LoopCond(inner.WithOpName("LoopCond"), pred);
  std::vector<Output> exits, body_in;
  for (size_t i = 0; i < vars.size(); ++i) {
    SwitchOutputs sw = Switch(inner.WithOpName("Switch"), merged[i], loop_cond);
    exits.push_back(Exit(inner.WithOpName("Exit"), sw.output_false));
    body_in.push_back(Identity(inner.WithOpName("Identity"), sw.output_true));
  }
  Context body_ctx(g, first_id, body_in[0].node, enter_constant, true);
  const std::vector<Output> user_in(body_in.begin() + (counted ? 1 : 0), body_in.end());
  std::vector<Output> next = BuildIn(&body_ctx, g, [&] {
    std::vector<Output> out = body(inner, user_in);
    if (counted) out.insert(out.begin(), Add(inner, body_in[0], ConstInt(inner, 1)));
    return out;
  });
  if (next.size() != vars.size()) {
    Throw(errors::InvalidArgument("The body of while loop '", frame, "' returns ",
                                  next.size() - (counted ? 1 : 0), " tensors for ",
                                  loop_vars.size(), " loop variables"));
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    CheckNext(frame, counted ? i - 1 : i, vars[i], next[i], shapes[i]);
    g->UpdateEdge(NextIteration(inner.WithOpName("NextIteration"), next[i]), merges[i], 1);
  }
  if (counted) exits.erase(exits.begin());
  return exits;
}

}  // namespace pf::ops
