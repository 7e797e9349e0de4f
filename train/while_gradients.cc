#include "placeflow/train/while_gradients.h"

#include <algorithm>
#include <set>

#include "placeflow/ops/control/cond_contexts.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/ops.h"

namespace pf::internal {
namespace {

using ops::internal::WhileLoopInfo;

// The conds built inside `loop`.
std::vector<const ops::internal::CondInfo*> CondsIn(Graph* g, const WhileLoopInfo& loop) {
  std::vector<const ops::internal::CondInfo*> conds;
  for (const ops::internal::CondInfo& c : ops::internal::Conds(g))
    if (loop.Contains(c.pivot_t)) conds.push_back(&c);
  return conds;
}

// The loop's control nodes: its LoopCond, Enters, Merges, Switches, Exits and NextIterations.
void AddControlNodes(const WhileLoopInfo& loop, std::set<const Node*>* own) {
  own->insert(loop.loop_cond.node);
  for (size_t i = 0; i < loop.enters.size(); ++i) {
    own->insert({loop.enters[i].node, loop.merges[i], loop.exits[i].node,
                 loop.exits[i].node->input(0).node, loop.next_iterations[i]});
  }
  for (const Output& inv : loop.invariants) own->insert(inv.node);
}

// Gradients go through the loop's own control nodes, the conds in its body (ops::Cond's) and
// the loops in its body (ops::WhileLoop's, each with a backward loop of its own inside this
// one's).
Status CheckSupported(Graph* g, const WhileLoopInfo& loop,
                      const std::vector<const ops::internal::CondInfo*>& conds) {
  std::set<const Node*> own;
  AddControlNodes(loop, &own);
  for (const ops::internal::CondInfo* c : conds) {
    own.insert(c->switches.begin(), c->switches.end());
    own.insert(c->merges.begin(), c->merges.end());
  }
  for (const WhileLoopInfo& inner : ops::internal::WhileLoops(g))
    if (&inner != &loop && loop.Contains(inner.loop_cond.node)) AddControlNodes(inner, &own);
  for (const Node* n : g->nodes()) {
    if (!loop.Contains(n) || own.count(n)) continue;
    const ControlFlowKind k = n->op_def().control_flow();
    if (k == ControlFlowKind::kSwitch || k == ControlFlowKind::kMerge) {
      return errors::Unimplemented("Gradients of while loop '", loop.frame, "': its body holds '",
                                   n->name(), "' (", n->op(),
                                   ") of a cond that ops::Cond did not build (built by hand, or "
                                   "imported): only ops::Cond's conds have gradients in a loop");
    }
    if (k != ControlFlowKind::kNone && k != ControlFlowKind::kSend && k != ControlFlowKind::kRecv) {
      return errors::Unimplemented("Gradients of while loop '", loop.frame, "': its body holds '",
                                   n->name(), "' (", n->op(),
                                   ") of a loop that ops::WhileLoop did not build (built by hand, "
                                   "or imported): only ops::WhileLoop's loops have gradients in "
                                   "a loop");
    }
  }
  return Status::OK();
}

// The loop whose body holds `loop` (the innermost), or null.
const WhileLoopInfo* ParentLoop(Graph* g, const WhileLoopInfo& loop) {
  const WhileLoopInfo* parent = nullptr;
  for (const WhileLoopInfo& l : ops::internal::WhileLoops(g)) {
    if (&l != &loop && l.Contains(loop.loop_cond.node) &&
        (parent == nullptr || l.first_id > parent->first_id))
      parent = &l;
  }
  return parent;
}

// The forward nodes made between construction and Done: marked (ops::internal::
// MarkForwardNodes) as in the frame of the loop's parent, so that the backward body of an
// enclosing loop, built around this loop's gradient, leaves them alone and brings them in
// through its own stacks.
class ForwardNodes {
 public:
  ForwardNodes(Graph* g, const WhileLoopInfo* parent)
      : g_(g), parent_(parent), first_(static_cast<int>(g->nodes().back()->id()) + 1) {}
  void Done() {
    const int last = g_->nodes().back()->id();
    if (last >= first_) ops::internal::MarkForwardNodes(g_, first_, last, parent_);
  }

 private:
  Graph* g_;
  const WhileLoopInfo* parent_;
  int first_;
};

// A scope whose nodes run in the loop's parent frame, once per iteration of the parent (a
// control input from the node that feeds the loop's first Enter), or the root frame's scope.
Scope InParentFrame(const Scope& s, const WhileLoopInfo& loop, const WhileLoopInfo* parent) {
  if (parent == nullptr) return s;
  return s.WithControlDependencies({Operation(loop.enters[0].node->input(0).node)});
}

// An iteration counter added to the forward loop: its Exit gives the number of iterations.
// Each push waits for the counter's value of its iteration (`value`) and the counter's next
// value waits for every push (`next`): the pushes run whenever the count is computed, before
// the backward loop starts, and in iteration order even when iterations run in parallel.
struct Counter {
  Output count;
  Node* value;
  Node* next;
};
Counter AddForwardCounter(Graph* g, const WhileLoopInfo& loop, const WhileLoopInfo* parent) {
  const Scope s = Scope::Root(g)
                      .WithExactNameScope(g->UniqueName(loop.frame + "/grad_counter"))
                      .ColocateWith(Operation(loop.loop_cond.node));
  const int p = loop.parallel_iterations;
  Output enter = ops::Enter(s, ops::ConstInt(InParentFrame(s, loop, parent), 0), loop.frame,
                            /*is_constant=*/false, p);
  Node* merge = ops::Merge(s, {enter, enter}).output.node;
  ops::SwitchOutputs sw = ops::Switch(s, Output(merge, 0), loop.loop_cond);
  Output count = ops::Exit(s, sw.output_false);
  Output one = ops::Enter(s, ops::ConstInt(InParentFrame(s, loop, parent), 1), loop.frame, true, p);
  Output value = ops::Identity(s, sw.output_true);
  Output next = ops::NextIteration(s, ops::Add(s, value, one));
  g->UpdateEdge(next, merge, 1);
  return {count, value.node, next.node};
}

// A value inside a cond's branch is pushed only in the iterations that took the branch, and
// popped only in the backward iterations whose backward cond takes it. What must wait for such
// a push or pop in every iteration (the counters) waits for a Merge of it with the other
// branch's pivot instead, live in every iteration; repeated out through enclosing conds.
// `backward`: the pivots are the outputs of the backward cond's Switch (Merge's gradient).
class BranchGates {
 public:
  BranchGates(Graph* g, std::vector<const ops::internal::CondInfo*> conds)
      : g_(g), conds_(std::move(conds)) {}
  const std::vector<const ops::internal::CondInfo*>& conds() const { return conds_; }
  ops::internal::Branch BranchOf(const Output& x) const {
    return ops::internal::BranchOf(conds_, x);
  }
  // A node live in the branch's iterations only (backward: the backward cond's side).
  StatusOr<Output> Pivot(const ops::internal::Branch& b, bool backward) const {
    if (!backward) return Output(b.cond->pivot(b.side), 0);
    const auto& grad = ops::internal::CondGradSwitches(g_);
    const ops::SwitchOutputs* latest = nullptr;
    for (Node* m : b.cond->merges) {
      auto it = grad.find(m);
      if (it != grad.end() &&
          (!latest || it->second.output_true.node->id() > latest->output_true.node->id()))
        latest = &it->second;
    }
    if (latest == nullptr) {
      return errors::Internal("The gradient of a cond in a while loop (pivot '",
                              b.cond->pivot_t->name(), "') has no backward cond");
    }
    return b.side ? latest->output_true : latest->output_false;
  }
  // A node that runs after `done` in every iteration.
  StatusOr<Node*> Trigger(const Scope& s, Node* done, ops::internal::Branch b, bool backward) {
    while (b.cond != nullptr) {
      PF_ASSIGN_OR_RETURN(Output taken, Pivot(b, backward));
      PF_ASSIGN_OR_RETURN(Output other, Pivot({b.cond, !b.side}, backward));
      Output after = ops::Identity(s.WithControlDependencies({Operation(done)}), taken);
      done = ops::Merge(s, {after, ops::Identity(s, other)}).output.node;
      // The Merge is where the cond's Merges are: in the branch of an enclosing cond, if any
      // (a cond without Merges has no gradient through it).
      b = b.cond->merges.empty() ? ops::internal::Branch{} : BranchOf(Output(b.cond->merges[0], 0));
    }
    return done;
  }

 private:
  Graph* g_;
  std::vector<const ops::internal::CondInfo*> conds_;
};

// A value of the forward loop comes from a stack: pushed in each forward iteration, popped in
// reverse once per backward iteration. A value brought into the forward loop comes in again.
// A value inside a cond's branch is pushed and popped in that branch only (BranchGates).
class Stacks {
 public:
  Stacks(Graph* g, const WhileLoopInfo& loop, const WhileLoopInfo* parent, const Counter& counter,
         BranchGates* gates, const Scope& backward)
      : g_(g),
        loop_(loop),
        parent_(parent),
        counter_(counter),
        gates_(gates),
        bs_(backward),
        fs_(Scope::Root(g).WithExactNameScope(g->UniqueName(loop.frame + "/grad_stacks"))) {}

  // The backward loop's CaptureFn (ops::internal::CaptureFn).
  std::optional<Output> Capture(const Output& x, Node* pivot,
                                const std::function<Output(const Output&)>& enter) {
    if (!InForwardLoop(x.node)) return std::nullopt;
    for (const Output& inv : loop_.invariants)
      if (inv == x) return enter(x.node->input(0));
    // Nested in another loop, the stack is made in each of its iterations (the enclosing
    // gradient stacks the handles): iterations that overlap push onto stacks of their own.
    ForwardNodes forward(g_, parent_);
    const Scope at_x = fs_.ColocateWith(Operation(x.node));
    Output handle = ops::StackV2(InParentFrame(at_x, loop_, parent_), x.dtype());
    Output into_loop = ops::Enter(at_x, handle, loop_.frame, true, loop_.parallel_iterations);
    Node* push =
        ops::StackPush(at_x.WithControlDependencies({Operation(counter_.value)}), into_loop, x)
            .node;
    const ops::internal::Branch branch = gates_->BranchOf(x);
    StatusOr<Node*> pushed = gates_->Trigger(at_x, push, branch, /*backward=*/false);
    Keep(pushed.status());
    g_->AddControlEdge(pushed.ok() ? *pushed : push, counter_.next);
    forward.Done();
    Node* gate = pivot;
    if (branch.cond != nullptr) {
      StatusOr<Output> taken = gates_->Pivot(branch, /*backward=*/true);
      Keep(taken.status());
      if (taken.ok()) gate = ops::Identity(bs_, *taken).node;
    }
    Output pop = ops::StackPop(
        bs_.WithControlDependencies({Operation(gate)}).ColocateWith(Operation(handle.node)),
        enter(handle), x.dtype(), x.shape());
    pops_.push_back({pop.node, branch});
    return pop;
  }
  // The backward count's next value (`backward_next`) waits for the iteration's pops: they pop
  // in order too.
  Status ChainPops(Node* backward_next) {
    PF_RETURN_IF_ERROR(status_);
    for (const auto& [pop, branch] : pops_) {
      PF_ASSIGN_OR_RETURN(Node * popped, gates_->Trigger(bs_, pop, branch, /*backward=*/true));
      g_->AddControlEdge(popped, backward_next);
    }
    return Status::OK();
  }

 private:
  // x is of the forward loop: made by its builder, or a nested loop's counter or stack that a
  // nested gradient added to its frame.
  bool InForwardLoop(const Node* x) const {
    const WhileLoopInfo* marked = nullptr;
    return loop_.Contains(x) ||
           (ops::internal::IsMarkedForward(g_, x, &marked) && marked == &loop_);
  }
  void Keep(const Status& s) {
    if (!s.ok() && status_.ok()) status_ = s;
  }
  Graph* g_;
  const WhileLoopInfo& loop_;
  const WhileLoopInfo* parent_;
  const Counter& counter_;
  BranchGates* gates_;
  const Scope bs_, fs_;
  std::vector<std::pair<Node*, ops::internal::Branch>> pops_;
  Status status_;
};

// The backward loop's body: the body's gradient, from the loop variables' gradients `v`
// (after the count) to theirs one iteration earlier and the invariants' running sums.
class BackwardBody {
 public:
  BackwardBody(const WhileLoopInfo& loop, const std::vector<int>& vars,
               const std::vector<int>& invariants, const GradientOptions& options)
      : loop_(loop), vars_(vars), invariants_(invariants), options_(options) {}

  std::vector<Output> operator()(const Scope& s, const std::vector<Output>& v) {
    std::vector<Output> ys, grad_ys, xs;
    for (size_t k = 0; k < vars_.size(); ++k) {
      ys.push_back(loop_.next[vars_[k]]);
      grad_ys.push_back(v[1 + k]);
      xs.push_back(loop_.body_in[vars_[k]]);
    }
    for (int j : invariants_) xs.push_back(loop_.invariants[j]);
    GradientOptions o = options_;
    o.null_for_unreachable = true;
    o.gate_gradients = false;
    o.stop_gradients = xs;  // the body's inputs: nothing flows into the loop's control nodes
    StatusOr<std::vector<Output>> grads = TryGradients(s, ys, xs, grad_ys, o);
    std::vector<Output> out = {ops::Sub(s, v[0], ops::ConstInt(s, 1))};
    if (!grads.ok()) status = grads.status();
    const std::vector<Output> g = grads.ok() ? *grads : std::vector<Output>(xs.size());
    for (size_t k = 0; k < vars_.size(); ++k)
      out.push_back(g[k].node ? g[k] : ops::ZerosLike(s, v[1 + k]));
    for (size_t m = 0; m < invariants_.size(); ++m) {
      const Output& sum = v[1 + vars_.size() + m];
      out.push_back(Accumulate(s, sum, g[vars_.size() + m]));
    }
    return out;
  }
  Status status;

 private:
  // sum + d. A Gather's gradient of one row (GatherGrad with a scalar index: zeros with that
  // row set, as big as the value read) is added to its row of the sum instead, in place
  // (InplaceAdd), and so is each of an AddN of them: reading rows of a value in each iteration
  // (MapFn, Scan, DynamicRnn's loop) then costs O(row) per iteration, not O(value). A loop
  // placed on a GPU without a device request gets the InplaceAdd on the CPU.
  static Output Accumulate(const Scope& s, const Output& sum, const Output& d) {
    if (d.node == nullptr) return sum;
    // InplaceAdd has CPU kernels only: a backward loop asked onto another device adds densely.
    if (s.device().has_type && s.device().type != "CPU") return ops::Add(s, sum, d);
    std::vector<Output> terms = {d};
    if (d.node->op() == "AddN") terms = d.node->inputs();
    auto one_row = [](const Output& t) {
      const Node* n = t.node;
      return n->op() == "GatherGrad" && IsReal(t.dtype()) && n->input(1).dtype() == DT_INT32 &&
             !n->input(1).shape().unknown_rank() && n->input(1).shape().rank() == 0;
    };
    if (!std::all_of(terms.begin(), terms.end(), one_row)) return ops::Add(s, sum, d);
    Output out = sum;
    for (const Output& t : terms) out = ops::InplaceAdd(s, out, t.node->input(1), t.node->input(0));
    return out;
  }

  const WhileLoopInfo& loop_;
  const std::vector<int>& vars_;
  const std::vector<int>& invariants_;
  const GradientOptions& options_;
};

}  // namespace

StatusOr<LoopInputGradients> WhileLoopGradients(const Scope& scope, const WhileLoopInfo& loop,
                                                const std::vector<Output>& exit_grads,
                                                const GradientOptions& options) {
  Graph* g = scope.graph();
  BranchGates gates(g, CondsIn(g, loop));
  PF_RETURN_IF_ERROR(CheckSupported(g, loop, gates.conds()));
  const WhileLoopInfo* parent = ParentLoop(g, loop);
  ForwardNodes forward(g, parent);
  const Counter counter = AddForwardCounter(g, loop, parent);
  forward.Done();
  std::vector<int> vars, invariants;  // the float ones
  for (size_t i = 0; i < loop.exits.size(); ++i)
    if (IsReal(loop.exits[i].dtype())) vars.push_back(static_cast<int>(i));
  for (size_t j = 0; j < loop.invariants.size(); ++j)
    if (IsReal(loop.invariants[j].dtype())) invariants.push_back(static_cast<int>(j));
  // Named after the forward loop ("gradients/<frame>_grad/..."), as TensorFlow names gradients
  // after their ops: a placement rule that matches the loop's name matches its gradient too;
  // and it asks for the forward loop's device: a loop's nodes must share one.
  Scope bs = scope.NewSubScope(loop.frame + "_grad");
  if (const std::string& d = loop.loop_cond.node->requested_device(); !d.empty())
    bs = bs.WithDevice(d);
  std::vector<Output> init = {counter.count};
  ops::WhileOptions wo;
  wo.parallel_iterations = loop.parallel_iterations;
  wo.shape_invariants = {pf::Shape{}};
  for (int i : vars) {
    init.push_back(exit_grads[i].node ? exit_grads[i] : ops::ZerosLike(bs, loop.exits[i]));
    wo.shape_invariants.push_back(loop.shapes[i]);
  }
  for (int j : invariants) {
    const Output outside = loop.invariants[j].node->input(0);
    init.push_back(ops::ZerosLike(bs, outside));
    wo.shape_invariants.push_back(outside.shape());
  }
  Stacks stacks(g, loop, parent, counter, &gates, bs);
  auto capture = [&stacks](const Output& x, Node* pivot,
                           const std::function<Output(const Output&)>& enter) {
    return stacks.Capture(x, pivot, enter);
  };
  BackwardBody body(loop, vars, invariants, options);
  std::vector<Output> out = ops::internal::WhileLoop(
      bs,
      [](const Scope& s, const std::vector<Output>& v) {
        return ops::Greater(s, v[0], ops::ConstInt(s, 0));
      },
      std::ref(body), init, wo, capture);
  PF_RETURN_IF_ERROR(body.status);
  PF_RETURN_IF_ERROR(stacks.ChainPops(ops::internal::WhileLoops(g).back().next_iterations[0]));
  LoopInputGradients result;
  result.enters.resize(loop.enters.size());
  result.invariants.resize(loop.invariants.size());
  for (size_t k = 0; k < vars.size(); ++k) result.enters[vars[k]] = out[1 + k];
  for (size_t m = 0; m < invariants.size(); ++m)
    result.invariants[invariants[m]] = out[1 + vars.size() + m];
  return result;
}

}  // namespace pf::internal
