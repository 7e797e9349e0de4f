#include "placeflow/executor/frames.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <optional>

#include "placeflow/graph/cancellation.h"

namespace pf {

using Layout = Executor::Layout;
using Item = Layout::Item;
using K = ControlFlowKind;

// A loop instance: the live iterations of one frame, started in one iteration of its parent.
struct FrameState {
  int info = 0;  // the static frame
  IterState* parent_iter = nullptr;
  int parallel_iterations = 1;
  std::deque<std::unique_ptr<IterState>> iterations;  // alive, oldest first
  int64_t oldest = 0;                                 // iterations.front()'s number
  int64_t next_iter = 1;                              // the number a new iteration gets
  int pending_enters = 0;                             // Enters of this instance yet to run
  struct Value {
    int item;  // the Enter or NextIteration that produced it
    Tensor value;
    bool dead;
  };
  std::vector<Value> invariants;  // constant Enters' values: every iteration gets them
  std::vector<Value> deferred;    // NextIteration values waiting for parallel_iterations
  // Per Exit: its live value, handed on when the loop instance ends (dead if it got none).
  std::vector<std::optional<Tensor>> exits;
  std::vector<std::unique_ptr<IterState>> spare;  // ended iterations, for the next ones
  // Loops spanning devices: the step's rendezvous and this instance's part of the keys.
  Rendezvous* rendezvous = nullptr;
  std::string key_prefix;
  // What a timed-out step says of the loop: its name and newest iteration (read by another
  // thread, so shared and atomic), registered with the step's CancellationManager.
  struct Progress {
    std::string name;
    std::atomic<int64_t> newest{0};
  };
  std::shared_ptr<Progress> progress;
  CancellationManager::Token token = 0;
};

namespace {
// A loop iteration's transfers get keys of their own (IterRendezvous).
void SetKeys(IterState* it) {
  if (it->frame == nullptr || it->frame->rendezvous == nullptr) return;
  if (it->rendezvous == nullptr) it->rendezvous = std::make_unique<IterRendezvous>();
  it->rendezvous->Reset(it->frame->rendezvous,
                        fmt::format("{}:{}", it->frame->key_prefix, it->iter));
}
}  // namespace

IterState::IterState(const Layout& l, const Layout::Frame& f, FrameState* frame, int64_t iter)
    : frame(frame), iter(iter), pending(new std::atomic<int>[f.items.size()]), inputs(f.num_slots) {
  for (size_t k = 0; k < f.items.size(); ++k)
    pending[k].store(l.items[f.items[k]].initial_pending, std::memory_order_relaxed);
  if (l.control_flow) dead.assign(f.items.size(), 0);
  SetKeys(this);
}

void IterState::Reset(const Layout& l, const Layout::Frame& f, int64_t iteration) {
  iter = iteration;
  for (size_t k = 0; k < f.items.size(); ++k)
    pending[k].store(l.items[f.items[k]].initial_pending, std::memory_order_relaxed);
  std::fill(dead.begin(), dead.end(), 0);
  for (Tensor& t : inputs)  // nodes that ran cleared theirs already
    if (t.IsInitialized()) t = Tensor();
  outstanding = 0;
  children.clear();
  SetKeys(this);
}

Executor::Step::~Step() {
  for (FrameState* f : frames) delete f;
}

namespace {

bool IsLoopOrCondOp(K k) { return k != K::kNone && k != K::kSend && k != K::kRecv; }

// The frame a node's outputs go to.
int OutFrame(const Layout& l, int item) {
  const Item& it = l.items[item];
  if (it.kind == K::kEnter) return it.child_frame;
  if (it.kind == K::kExit) return l.frames[it.frame].parent;
  return it.frame;
}

std::string FrameLabel(const Layout& l, int f) {
  return f == 0 ? "outside any loop" : fmt::format("in while loop '{}'", l.frames[f].name);
}

bool IsBackEdgeSource(const Node* src) { return src->op_def().control_flow() == K::kNextIteration; }

// spec.nodes' indices, each after its inputs (data and control), back edges left out.
StatusOr<std::vector<int>> ForwardOrder(const ExecutorSpec& spec, const Layout::ItemIndex& item_of,
                                        const Layout::FeedIndex& feed_index) {
  const size_t n = spec.nodes.size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> consumers(n);
  auto wait_for = [&](size_t i, const Node* src) {
    auto s = item_of.find(src);
    if (s == item_of.end() || IsBackEdgeSource(src)) return;
    ++pending[i];
    consumers[s->second].push_back(static_cast<int>(i));
  };
  for (size_t i = 0; i < n; ++i) {
    for (const Output& in : spec.nodes[i]->inputs())
      if (!feed_index.count(in)) wait_for(i, in.node);
    for (const Node* c : spec.nodes[i]->control_inputs()) wait_for(i, c);
  }
  std::vector<int> order;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) order.push_back(static_cast<int>(i));
  for (size_t k = 0; k < order.size(); ++k) {
    for (int c : consumers[order[k]])
      if (--pending[c] == 0) order.push_back(c);
  }
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] > 0) {
      return errors::InvalidArgument("The graph has a cycle through node '", spec.nodes[i]->name(),
                                     "' (", spec.nodes[i]->op(),
                                     ") that is not a while loop's back edge (a NextIteration "
                                     "into a Merge)");
    }
  }
  return order;
}

// Item i's frame: its inputs' (which must agree); an Enter also opens or joins its child frame.
Status PlaceInFrame(int i, const ExecutorSpec& spec, const Layout::ItemIndex& item_of,
                    const Layout::FeedIndex& feed_index,
                    std::map<std::pair<int, std::string>, int>* frame_ids, Layout* l) {
  const Node* node = spec.nodes[i];
  Item& it = l->items[i];
  int frame = -1;
  std::string from;
  auto meet = [&](int f, const std::string& name) -> Status {
    if (frame < 0 || f == frame) {
      frame = f;
      from = name;
      return Status::OK();
    }
    return errors::InvalidArgument("Node '", node->name(), "' (", node->op(), ") takes '", from,
                                   "' from ", FrameLabel(*l, frame), " and '", name, "' from ",
                                   FrameLabel(*l, f),
                                   ": a tensor enters a while loop only through an Enter node");
  };
  for (const Output& in : node->inputs()) {
    if (feed_index.count(in)) {
      PF_RETURN_IF_ERROR(meet(0, in.name()));
      continue;
    }
    auto s = item_of.find(in.node);
    if (s == item_of.end() || IsBackEdgeSource(in.node)) continue;
    PF_RETURN_IF_ERROR(meet(OutFrame(*l, s->second), in.name()));
  }
  for (const Node* c : node->control_inputs()) {
    auto s = item_of.find(c);
    if (s == item_of.end() || IsBackEdgeSource(c)) continue;
    PF_RETURN_IF_ERROR(meet(OutFrame(*l, s->second), "^" + c->name()));
  }
  it.frame = std::max(frame, 0);
  if (it.kind == K::kEnter) {
    const auto& name = node->attr<std::string>("frame_name");
    auto [slot, added] = frame_ids->try_emplace({it.frame, name}, l->frames.size());
    if (added) {
      l->frames.emplace_back();
      l->frames.back().name = name;
      l->frames.back().parent = it.frame;
    }
    Layout::Frame& child = l->frames[slot->second];
    child.parallel_iterations =
        std::max<int>({child.parallel_iterations, 1,
                       static_cast<int>(node->attr<int64_t>("parallel_iterations"))});
    ++child.num_enters;
    it.child_frame = slot->second;
    it.constant_enter = node->attr<bool>("is_constant");
  } else if (it.kind == K::kExit) {
    if (it.frame == 0) {
      return errors::InvalidArgument("Exit node '", node->name(),
                                     "' is not inside a while loop (its input comes from '",
                                     node->input(0).name(), "', outside any loop)");
    }
    it.exit_index = static_cast<int>(l->frames[it.frame].exits.size());
    l->frames[it.frame].exits.push_back(i);
  }
  return Status::OK();
}

// A NextIteration belongs to a loop and feeds only Merges of its own frame (the back edge).
Status CheckNextIteration(const ExecutorSpec& spec, size_t i, const Layout::ItemIndex& item_of,
                          const Layout& l) {
  const Node* n = spec.nodes[i];
  const int frame = l.items[i].frame;
  if (frame == 0) {
    return errors::InvalidArgument("NextIteration node '", n->name(),
                                   "' is not inside a while loop");
  }
  for (const Edge& e : n->out_edges()) {
    auto d = item_of.find(e.dst);
    if (d == item_of.end()) continue;
    const Item& dst = l.items[d->second];
    if (dst.kind != K::kMerge || dst.frame != frame) {
      return errors::InvalidArgument("NextIteration node '", n->name(), "' feeds '", e.dst->name(),
                                     "' (", e.dst->op(),
                                     "): a loop's back edge goes into a Merge of its loop");
    }
  }
  return Status::OK();
}

}  // namespace

bool HasControlFlow(const std::vector<Node*>& nodes) {
  return std::any_of(nodes.begin(), nodes.end(),
                     [](const Node* n) { return IsLoopOrCondOp(n->op_def().control_flow()); });
}

Status BuildFrames(const ExecutorSpec& spec, const Layout::ItemIndex& item_of,
                   const Layout::FeedIndex& feed_index, Layout* l) {
  const size_t n = spec.nodes.size();
  l->frames.assign(1, Layout::Frame{});
  l->control_flow = spec.dead_tensors;
  for (size_t i = 0; i < n; ++i) {
    l->items[i].kind = spec.nodes[i]->op_def().control_flow();
    l->control_flow = l->control_flow || IsLoopOrCondOp(l->items[i].kind);
  }
  if (l->control_flow) {
    PF_ASSIGN_OR_RETURN(std::vector<int> order, ForwardOrder(spec, item_of, feed_index));
    std::map<std::pair<int, std::string>, int> frame_ids;
    for (int i : order)
      PF_RETURN_IF_ERROR(PlaceInFrame(i, spec, item_of, feed_index, &frame_ids, l));
  }
  for (size_t i = 0; i < n; ++i) {
    Item& it = l->items[i];
    // A loop spanning devices: its iterations' transfers need keys of their own.
    if ((it.kind == K::kSend || it.kind == K::kRecv) && it.frame != 0) l->loop_transfers = true;
    Layout::Frame& f = l->frames[it.frame];
    it.local = static_cast<int>(f.items.size());
    f.items.push_back(static_cast<int>(i));
    // Transfers run even when dead, where tensors can be dead (a control-flow step): a _Send
    // sends a dead input on, and a _Recv (dead only through a loop's pivot) takes what was sent,
    // so that every value sent is received (TensorFlow's executor does the same). A
    // ControlTrigger is never dead either, as in TensorFlow: TF-written loop gradients order
    // their stack pops through one that may follow an untaken branch.
    it.runs_dead = it.kind == K::kMerge ||
                   ((it.kind == K::kSend || it.kind == K::kRecv) && l->control_flow) ||
                   spec.nodes[i]->op() == "ControlTrigger";
    if (it.kind == K::kNextIteration) PF_RETURN_IF_ERROR(CheckNextIteration(spec, i, item_of, *l));
    if (it.kind != K::kMerge) continue;
    for (const Output& in : spec.nodes[i]->inputs()) {
      if (!IsBackEdgeSource(in.node)) {
        ++it.merge_dead_first;
        continue;
      }
      ++it.merge_dead_later;
      auto s = item_of.find(in.node);
      if (s != item_of.end() && l->items[s->second].frame != it.frame) {
        return errors::InvalidArgument("Merge '", spec.nodes[i]->name(), "' (",
                                       FrameLabel(*l, it.frame), ") takes back edge '", in.name(),
                                       "' from ", FrameLabel(*l, l->items[s->second].frame));
      }
    }
    // A cond's Merge (no back edge) gets the same inputs in every iteration.
    if (it.merge_dead_later == 0) it.merge_dead_later = it.merge_dead_first;
  }
  for (const Output& o : spec.fetches) {
    auto s = item_of.find(o.node);
    if (s != item_of.end() && !feed_index.count(o) && OutFrame(*l, s->second) != 0) {
      return errors::InvalidArgument("Cannot fetch '", o.name(), "': it is ",
                                     FrameLabel(*l, OutFrame(*l, s->second)),
                                     " (fetch the loop's outputs, its Exit nodes)");
    }
  }
  return Status::OK();
}

namespace {

// PropagateInFrames' work under the step's frames lock.
class Propagator {
 public:
  Propagator(const Layout& l, Executor::Step* step, ReadyList* ready)
      : l_(l), step_(step), ready_(ready) {}

  void Finished(const TaggedNode& t, std::vector<Tensor>* outputs) {
    const Item& item = l_.items[t.id];
    IterState* it = t.iter;
    switch (item.kind) {
      case K::kEnter:
        Enter(t, t.dead ? Tensor() : (*outputs)[0]);
        break;
      case K::kExit:
        if (!t.dead) it->frame->exits[item.exit_index] = std::move((*outputs)[0]);
        break;
      case K::kNextIteration:
        if (!t.dead) NextIteration(t.id, it, (*outputs)[0]);
        break;
      default:
        DeliverOutputs(item, it, *outputs, t.dead);
    }
    --it->outstanding;
    EndFinished(it->frame);
  }
  Status error;  // a dead fetch: failed after the lock is released

 private:
  void Ready(int item, IterState* it, bool dead) {
    ++it->outstanding;
    ready_->push_back({item, it, dead});
  }
  int DeadLimit(const Item& merge, const IterState* it) const {
    return it->iter == 0 ? merge.merge_dead_first : merge.merge_dead_later;
  }
  // One more input (data or control) of `item` arrived in `it`.
  void Arrived(int item, IterState* it) {
    const Item& dst = l_.items[item];
    const int p = it->pending[dst.local].load(std::memory_order_relaxed) - 1;
    it->pending[dst.local].store(p, std::memory_order_relaxed);
    if (p == 0) Ready(item, it, it->dead[dst.local] > 0 && !dst.runs_dead);
  }
  // A Merge's pending count is 2 per control input plus 1 while no live input has arrived: it
  // runs when that reaches 0, and is dead at 1 once every input it can get here is dead.
  void MergeArrived(int item, IterState* it, bool control, bool dead) {
    const Item& dst = l_.items[item];
    std::atomic<int>& pending = it->pending[dst.local];
    int p = pending.load(std::memory_order_relaxed);
    bool run = false, maybe_dead = false;
    if (control) {
      p -= 2;
      run = p == 0;
      maybe_dead = p == 1;
    } else if (dead) {
      ++it->dead[dst.local];
      maybe_dead = p == 1;
    } else if (p & 1) {
      p -= 1;
      run = p == 0;
    }
    pending.store(p, std::memory_order_relaxed);
    if (run) {
      Ready(item, it, false);
    } else if (maybe_dead && it->dead[dst.local] == DeadLimit(dst, it)) {
      Ready(item, it, true);
    }
  }
  void Deliver(IterState* it, const Layout::OutEdge& e, const Tensor& v, bool dead) {
    if (e.dst_item < 0) {
      if (dead && error.ok()) {
        error = errors::InvalidArgument("Fetched tensor #", e.dst_slot,
                                        " is dead: it comes from the untaken branch of a cond");
      }
      if (!dead) (*step_->fetches)[e.dst_slot] = v;
      return;
    }
    const Item& dst = l_.items[e.dst_item];
    if (dst.kind == K::kMerge) {
      // Only the first live input is kept: once one came, the Merge may be running.
      if (!dead && (it->pending[e.dst_local].load(std::memory_order_relaxed) & 1))
        it->inputs[e.dst_slot] = v;
      MergeArrived(e.dst_item, it, /*control=*/false, dead);
      return;
    }
    if (!dead) it->inputs[e.dst_slot] = v;
    if (dead) ++it->dead[e.dst_local];
    Arrived(e.dst_item, it);
  }
  void DeliverControl(IterState* it, int dst, bool dead) {
    if (l_.items[dst].kind == K::kMerge) {
      MergeArrived(dst, it, /*control=*/true, false);
      return;
    }
    if (dead) ++it->dead[l_.items[dst].local];
    Arrived(dst, it);
  }
  // A node's outputs into `it` (a Switch's or _Recv's unset output is dead).
  void DeliverOutputs(const Item& item, IterState* it, const std::vector<Tensor>& outputs,
                      bool node_dead) {
    const bool unset_is_dead = item.kind == K::kSwitch || item.kind == K::kRecv;
    for (const Layout::OutEdge& e : item.out_edges) {
      const Tensor& v = node_dead ? empty_ : outputs[e.src_output];
      Deliver(it, e, v, node_dead || (unset_is_dead && !v.IsInitialized()));
    }
    for (int dst : item.out_control) DeliverControl(it, dst, node_dead);
  }
  // An Enter's, Exit's or NextIteration's one value into `it`.
  void DeliverValue(const Item& item, IterState* it, const Tensor& v, bool dead) {
    for (const Layout::OutEdge& e : item.out_edges) Deliver(it, e, v, dead);
    for (int dst : item.out_control) DeliverControl(it, dst, dead);
  }

  void Enter(const TaggedNode& t, const Tensor& v) {
    const Item& item = l_.items[t.id];
    FrameState*& child = t.iter->children[item.child_frame];
    if (child == nullptr) child = NewFrame(item.child_frame, t.iter);
    --child->pending_enters;
    if (item.constant_enter) {
      child->invariants.push_back({t.id, v, t.dead});
      for (auto& iter : child->iterations) DeliverValue(item, iter.get(), v, t.dead);
    } else {
      DeliverValue(item, child->iterations.front().get(), v, t.dead);  // iteration 0
    }
    EndFinished(child);
  }
  FrameState* NewFrame(int info, IterState* parent_iter) {
    auto* f = new FrameState;
    const Layout::Frame& frame = l_.frames[info];
    f->info = info;
    f->parent_iter = parent_iter;
    f->parallel_iterations = frame.parallel_iterations;
    f->pending_enters = frame.num_enters;
    f->exits.resize(frame.exits.size());
    if (l_.loop_transfers) {
      f->rendezvous = step_->group->rendezvous();
      const std::string outer =
          parent_iter->rendezvous ? parent_iter->rendezvous->suffix() : std::string();
      f->key_prefix = fmt::format("{};{}", outer, frame.name);
    }
    f->iterations.push_back(std::make_unique<IterState>(l_, frame, f, 0));
    f->progress = std::make_shared<FrameState::Progress>();
    f->progress->name = frame.name;
    step_->group->cancellation()->Register(
        &f->token, [](const Status&) {},
        [p = f->progress] {
          return fmt::format("while loop '{}' (iteration {} started)", p->name,
                             p->newest.load(std::memory_order_relaxed));
        });
    ++parent_iter->outstanding;
    step_->frames.insert(f);
    return f;
  }
  IterState* NewIteration(FrameState* f) {
    std::unique_ptr<IterState> iter;
    if (f->spare.empty()) {
      iter = std::make_unique<IterState>(l_, l_.frames[f->info], f, f->next_iter++);
    } else {
      iter = std::move(f->spare.back());
      f->spare.pop_back();
      iter->Reset(l_, l_.frames[f->info], f->next_iter++);
    }
    IterState* it = iter.get();
    f->progress->newest.store(it->iter, std::memory_order_relaxed);
    f->iterations.push_back(std::move(iter));
    for (const FrameState::Value& v : f->invariants)
      DeliverValue(l_.items[v.item], it, v.value, v.dead);
    return it;
  }
  void NextIteration(int id, IterState* it, const Tensor& v) {
    FrameState* f = it->frame;
    const int64_t next = it->iter + 1;
    IterState* target = nullptr;
    if (next < f->next_iter) {
      target = f->iterations[next - f->oldest].get();
    } else if (next < f->oldest + f->parallel_iterations) {
      target = NewIteration(f);
    } else {
      f->deferred.push_back({id, v, false});
      return;
    }
    DeliverValue(l_.items[id], target, v, false);
  }
  // Ends the finished iterations of `f` (oldest first) and, when none is left, the loop
  // instance, then looks at its parent's.
  void EndFinished(FrameState* f) {
    while (f != nullptr && f->pending_enters == 0) {
      while (!f->iterations.empty() && f->iterations.front()->outstanding == 0) {
        f->spare.push_back(std::move(f->iterations.front()));
        f->iterations.pop_front();
        ++f->oldest;
        if (!f->deferred.empty() && f->next_iter < f->oldest + f->parallel_iterations) {
          IterState* it = NewIteration(f);
          for (const FrameState::Value& v : f->deferred)
            DeliverValue(l_.items[v.item], it, v.value, false);
          f->deferred.clear();
        }
      }
      if (!f->iterations.empty() || !f->deferred.empty()) return;
      const Layout::Frame& frame = l_.frames[f->info];
      IterState* parent_iter = f->parent_iter;
      for (size_t x = 0; x < frame.exits.size(); ++x) {
        const std::optional<Tensor>& v = f->exits[x];
        DeliverValue(l_.items[frame.exits[x]], parent_iter, v ? *v : empty_, !v.has_value());
      }
      parent_iter->children.erase(f->info);
      --parent_iter->outstanding;
      if (f->token != 0) step_->group->cancellation()->Deregister(f->token);
      step_->frames.erase(f);
      delete f;
      f = parent_iter->frame;
    }
  }

  const Layout& l_;
  Executor::Step* step_;
  ReadyList* ready_;
  const Tensor empty_;
};

}  // namespace

void PropagateInFrames(const Layout& l, Executor::Step* step, const TaggedNode& t,
                       std::vector<Tensor>* outputs, ReadyList* ready) {
  Propagator p(l, step, ready);
  {
    std::lock_guard<std::mutex> lock(step->frames_mu);
    p.Finished(t, outputs);
  }
  if (!p.error.ok() && !step->group->aborted()) step->group->Fail(p.error);
}

}  // namespace pf
