// Control flow in the executor: loop frames found in the graph, and the run-time routing of
// outputs between frames and iterations with dead tensors (TensorFlow's executor semantics,
// written for this executor; docs/control_flow.md).
//
// Static: every node belongs to a frame. Nodes outside any loop are in frame 0; an Enter's
// consumers are in the frame it names (frame_name), whose parent is the Enter's own frame; an
// Exit's consumers are in its frame's parent; every other node is in the frame of its inputs,
// which must agree (a tensor enters a loop only through an Enter).
//
// At run time, per step:
//   - a node with a dead input does not run; its outputs are dead (Switch's untaken output is
//     dead). A Merge runs on its first live input, or is dead when every input it can get in
//     this iteration is dead (a loop's Merge gets its Enter in iteration 0, its NextIteration
//     later). _Send runs with a dead input and sends it as dead.
//   - the first Enter of a loop instance creates it (a FrameState, in the Enter's iteration)
//     with iteration 0; a constant Enter's value reaches every iteration.
//   - a live NextIteration starts the next iteration, unless parallel_iterations are alive:
//     then it waits until the oldest ends. A dead one ends the loop's chain.
//   - an Exit hands a live value to the parent iteration; an Exit that got none by the time
//     its loop instance ends hands on a dead one.
//   - an iteration ends when none of its nodes is ready or running, no loop instance started in
//     it is alive, every Enter of its frame has run, and the iteration before it has ended; a
//     loop instance ends with its last iteration and frees its state.
#pragma once

#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/executor/executor_state.h"

namespace pf {

// Whether `nodes` hold a control-flow op (Switch, Merge, Enter, Exit, NextIteration, LoopCond):
// then every partition of the step may see dead tensors (ExecutorSpec::dead_tensors).
bool HasControlFlow(const std::vector<Node*>& nodes);

// Finds each node's frame and fills l->frames and the items' control-flow fields (items sized
// like spec.nodes, before AddItem). A graph without control-flow ops gets one frame holding
// every item, in order. InvalidArgument for a malformed loop, naming the node.
Status BuildFrames(const ExecutorSpec& spec, const Executor::Layout::ItemIndex& item_of,
                   const Executor::Layout::FeedIndex& feed_index, Executor::Layout* l);

// The nodes a finished node made ready: a few in place (most nodes make one or two ready), more
// on the heap, so that handing on a node's outputs allocates nothing.
class ReadyList {
 public:
  void push_back(const TaggedNode& t) {
    if (size_ < kInline) {
      inline_[size_++] = t;
    } else {
      more_.push_back(t);
    }
  }
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (int i = 0; i < size_; ++i) fn(inline_[i]);
    for (const TaggedNode& t : more_) fn(t);
  }

 private:
  static constexpr int kInline = 8;
  TaggedNode inline_[kInline] = {TaggedNode(0, nullptr), TaggedNode(0, nullptr),
                                 TaggedNode(0, nullptr), TaggedNode(0, nullptr),
                                 TaggedNode(0, nullptr), TaggedNode(0, nullptr),
                                 TaggedNode(0, nullptr), TaggedNode(0, nullptr)};
  int size_ = 0;
  std::vector<TaggedNode> more_;
};

// Node `t` finished (ran, or was skipped as dead): hands its outputs on within its iteration or
// across frames and iterations, appends the nodes it made ready, and ends iterations and loop
// instances that are finished (control-flow graphs only; `outputs` may be moved from).
void PropagateInFrames(const Executor::Layout& l, Executor::Step* step, const TaggedNode& t,
                       std::vector<Tensor>* outputs, ReadyList* ready);

}  // namespace pf
