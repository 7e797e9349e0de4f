// The executor's layout (built once per partition) and its per-step state: only the
// executor's own files include this (executor.cc, executor_layout.cc, frames.cc).
//
// A step runs nodes in iterations of frames. A graph without control flow has one frame with
// one iteration: the step's root IterState, whose pending counts are atomics updated without a
// lock (the fast path). A graph with control flow (Switch, Merge, loops) has a frame per while
// loop (found statically from its Enter nodes) and, at run time, a FrameState per loop
// instance with an IterState per live iteration; their bookkeeping runs under one lock per step
// (executor/frames.h, docs/control_flow.md).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "placeflow/executor/executor.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/graph/rendezvous.h"

namespace pf {

struct FrameState;

struct Executor::Layout {
  struct OutEdge {
    int src_output;
    int dst_item;   // -1: a fetch
    int dst_local;  // the destination's index in its frame's per-iteration arrays
    int dst_slot;   // input slot of the destination (in its frame), or fetch index
  };
  struct Item {
    const Node* node;
    Device* device;
    OpKernel* kernel;
    bool expensive;
    // Every input and output shape is known at build time and no input is fed: the shape
    // function is skipped while the real input shapes equal input_shapes.
    bool static_shapes;
    int input_base;  // first input slot, in its frame
    int num_inputs;
    std::vector<VarState*> ref_inputs;  // empty when the node has none
    std::vector<Shape> input_shapes;    // static
    std::vector<Shape> output_shapes;
    std::vector<DType> output_dtypes;
    std::vector<OutEdge> out_edges;
    std::vector<int> out_control;  // item ids
    int initial_pending;
    // Control flow (all zero/none in a graph without it).
    int frame = 0;  // static frame (0: the outermost)
    int local = 0;  // index in its frame's per-iteration arrays
    ControlFlowKind kind = ControlFlowKind::kNone;
    bool runs_dead = false;  // runs with missing (dead) inputs: Merge, _Send, ControlTrigger
    int child_frame = -1;    // Enter: the frame it enters
    bool constant_enter = false;
    int exit_index = -1;  // Exit: its index in its frame's exits
    // Merge: how many dead data inputs make it dead in iteration 0 (the inputs from outside
    // the loop) and in later ones (the back edges from NextIteration).
    int merge_dead_first = 0, merge_dead_later = 0;
  };
  // A while loop's frame (or the outermost, frames[0]).
  struct Frame {
    std::string name;  // Enter's frame_name ("" for the outermost)
    int parent = -1;
    int parallel_iterations = 1;
    int num_enters = 0;  // Enter nodes into it: each runs once per loop instance
    std::vector<int> items;
    int num_slots = 0;
    std::vector<int> exits;  // Exit items, by exit_index
  };
  std::vector<Item> items;
  std::vector<Frame> frames;
  bool control_flow = false;
  bool loop_transfers = false;  // a _Send or _Recv inside a loop (a loop spanning devices)
  std::vector<int> roots;
  ThreadPool* pool = nullptr;
  // How long the last step took from RunAsync to its end, in ns (-1: none yet): a caller beside
  // a full pool runs a step under small_step_ns itself (ExecutorSpec::small_step_us).
  mutable std::atomic<int64_t> last_step_ns{-1};
  int64_t small_step_ns = 0;
  bool own_pool = false;  // ExecutorSpec::own_pool
  const DeviceSet* devices = nullptr;
  // For feed i: the input slots it fills (in the outermost frame) and the fetch indices it
  // answers directly.
  std::vector<std::vector<int>> feed_slots;
  std::vector<std::vector<int>> feed_fetches;
  int num_fetches = 0;

  // Executor::Create's steps (executor_layout.cc). `item_of`: node -> its item; `feed_index`:
  // fed output -> feed.
  using ItemIndex = std::unordered_map<const Node*, int>;
  using FeedIndex = std::map<Output, int>;
  // Item i: spec.nodes[i] with its device, kernel, shapes, input slots and pending count.
  Status AddItem(size_t i, const ExecutorSpec& spec, const KernelSource& kernels, bool sequential,
                 const ItemIndex& item_of, const FeedIndex& feed_index);
  // Input k of `it`: its static shape, variable reference, and the feed or producer it waits on.
  Status AddInput(Item* it, int k, const ItemIndex& item_of, const FeedIndex& feed_index);
  // Out-edges, restricted to the subgraph; data edges from fed outputs are cut.
  void AddOutEdges(const ExecutorSpec& spec, const ItemIndex& item_of, const FeedIndex& feed_index);
  // Each fetch: answered by its feed, or an out-edge of the item that produces it.
  Status AddFetches(const ExecutorSpec& spec, const ItemIndex& item_of,
                    const FeedIndex& feed_index);
};

// What a loop iteration's _Send and _Recv see: the step's rendezvous, with the loop instance
// and the iteration appended to every key (";frame:iteration", one per nested loop), so that
// each iteration's transfer has a key of its own on both devices (TensorFlow's frame_iter).
class IterRendezvous final : public Rendezvous {
 public:
  void Reset(Rendezvous* base, std::string suffix) {
    base_ = base;
    suffix_ = std::move(suffix);
  }
  const std::string& suffix() const { return suffix_; }
  Status Send(const std::string& key, const Tensor& value) override {
    return base_->Send(key + suffix_, value);
  }
  void RecvAsync(const std::string& key, DoneCallback done) override {
    base_->RecvAsync(key + suffix_, std::move(done));
  }
  void StartAbort(const Status& status) override { base_->StartAbort(status); }

 private:
  Rendezvous* base_ = nullptr;
  std::string suffix_;
};

// One iteration of one frame instance: its nodes' pending counts and input slots.
struct IterState {
  IterState(const Executor::Layout& l, const Executor::Layout::Frame& f, FrameState* frame,
            int64_t iter);
  // Back to a fresh iteration `iter` of the same frame (a loop reuses its ended iterations).
  void Reset(const Executor::Layout& l, const Executor::Layout::Frame& f, int64_t iter);
  FrameState* frame;  // null for the step's root iteration
  int64_t iter;
  std::unique_ptr<std::atomic<int>[]> pending;  // per local item
  std::vector<Tensor> inputs;                   // per slot of the frame
  // Control flow only, under the step's frames lock:
  std::vector<int> dead;                // dead inputs (data and control) per local item
  int outstanding = 0;                  // nodes ready or running, and child frames alive
  std::map<int, FrameState*> children;  // live loop instances, by static frame
  // Loops spanning devices only (Layout::loop_transfers): what its transfers see.
  std::unique_ptr<IterRendezvous> rendezvous;
};

struct Executor::Step {
  explicit Step(const Layout& l) : root(l, l.frames[0], nullptr, 0) {}
  ~Step();
  IterState root;
  std::vector<Tensor>* fetches = nullptr;
  int64_t step_id = 0;
  StepGroup* group = nullptr;
  std::atomic<int> outstanding{0};
  std::function<void()> done;
  std::chrono::steady_clock::time_point start;
  bool small = false;  // the last step was short: the caller keeps an expensive node too
  // Control flow: the frames lock and every loop instance alive (a failed step ends with some
  // still here; the destructor frees them).
  std::mutex frames_mu;
  std::set<FrameState*> frames;
};

}  // namespace pf
