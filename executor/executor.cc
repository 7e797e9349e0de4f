#include "placeflow/executor/executor.h"

#include <fmt/ranges.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>

#include "placeflow/core/pool_wait.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/graph/scope.h"

namespace pf {
namespace {

// Read when an executor is built (once per signature), so a process can switch modes.
bool SequentialMode() {
  const char* env = std::getenv("PF_EXECUTOR");
  return env != nullptr && std::strcmp(env, "sequential") == 0;
}

Status Annotate(const Status& s, const Node& node, const Device& device) {
  return s.WithSuffix(
      fmt::format("\n\t [[{{{{node {}}}}} = {}[] on {}]]", node.name(), node.op(), device.name()));
}

// Nothing but a Status may leave a kernel: an exception (a pf::Error from a Tensor that could
// not be allocated, bad_alloc from a std::vector) would otherwise unwind through the executor
// and kill a pool thread, or reach the caller with the step half done.
template <typename Fn>
Status Guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    return e.status();
  } catch (const std::bad_alloc&) {
    return errors::ResourceExhausted("Out of memory in kernel (std::bad_alloc)");
  } catch (const std::exception& e) {
    return errors::Internal("Kernel threw an exception: ", e.what());
  }
}

}  // namespace

struct Executor::Layout {
  struct OutEdge {
    int src_output;
    int dst_item;  // -1: a fetch
    int dst_slot;  // input slot of the destination, or fetch index
  };
  struct Item {
    const Node* node;
    Device* device;
    OpKernel* kernel;
    bool expensive;
    // Every input and output shape is known at build time and no input is fed: the shape
    // function is skipped while the real input shapes equal input_shapes.
    bool static_shapes;
    int input_base;
    int num_inputs;
    std::vector<VarState*> ref_inputs;  // empty when the node has none
    std::vector<Shape> input_shapes;    // static
    std::vector<Shape> output_shapes;
    std::vector<DType> output_dtypes;
    std::vector<OutEdge> out_edges;
    std::vector<int> out_control;
    int initial_pending;
  };
  std::vector<Item> items;
  std::vector<int> roots;
  ThreadPool* pool = nullptr;
  const DeviceSet* devices = nullptr;
  int num_slots = 0;
  // For feed i: the input slots it fills and the fetch indices it answers directly.
  std::vector<std::vector<int>> feed_slots;
  std::vector<std::vector<int>> feed_fetches;
  int num_fetches = 0;

  // Executor::Create's steps. `item_of`: node -> its item; `feed_index`: fed output -> feed.
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

Status Executor::Layout::AddItem(size_t i, const ExecutorSpec& spec, const KernelSource& kernels,
                                 bool sequential, const ItemIndex& item_of,
                                 const FeedIndex& feed_index) {
  const Node* n = spec.nodes[i];
  Item& it = items[i];
  it.node = n;
  auto dev = spec.device.find(n);
  if (dev == spec.device.end()) return errors::Internal("Node '", n->name(), "' was not placed");
  it.device = dev->second;
  PF_ASSIGN_OR_RETURN(it.kernel, kernels(*n, it.device));
  // With no pool threads (or PF_EXECUTOR=sequential) everything runs inline on the caller.
  it.expensive = it.kernel->IsExpensive() && !sequential && pool->num_threads() > 0;
  it.input_base = num_slots;
  it.num_inputs = n->num_inputs();
  num_slots += it.num_inputs;
  it.static_shapes = true;
  for (int o = 0; o < n->num_outputs(); ++o) {
    it.output_shapes.push_back(n->output_shape(o));
    it.output_dtypes.push_back(n->output_dtype(o));
    it.static_shapes = it.static_shapes && n->output_shape(o).IsFullyDefined();
  }
  it.initial_pending = 0;
  for (int k = 0; k < n->num_inputs(); ++k)
    PF_RETURN_IF_ERROR(AddInput(&it, k, item_of, feed_index));
  for (const Node* c : n->control_inputs()) {
    if (item_of.count(c)) ++it.initial_pending;
  }
  return Status::OK();
}

Status Executor::Layout::AddInput(Item* it, int k, const ItemIndex& item_of,
                                  const FeedIndex& feed_index) {
  const Node* n = it->node;
  const Output& src = n->input(k);
  it->input_shapes.push_back(src.shape());
  // A fed input may replace a constant whose value the static shape came from (the
  // session feeds through _Arg copies, so which one is not known here): always recheck.
  it->static_shapes = it->static_shapes && src.shape().IsFullyDefined() && !feed_index.count(src);
  if (n->IsRefInput(k)) {
    const Node* var = ReferencedVariable(src);
    if (var == nullptr) {
      return errors::InvalidArgument("Input ", k, " of node '", n->name(),
                                     "' must be a variable reference, but comes from '",
                                     src.node->name(), "' (", src.node->op(), ")");
    }
    it->ref_inputs.resize(n->num_inputs(), nullptr);
    it->ref_inputs[k] = it->device->resource_mgr()->LookupOrCreateVar(var->name());
  }
  auto fed = feed_index.find(src);
  if (fed != feed_index.end()) {
    feed_slots[fed->second].push_back(it->input_base + k);
    return Status::OK();
  }
  if (!item_of.count(src.node)) {
    return errors::Internal("Input '", src.name(), "' of node '", n->name(),
                            "' is neither fed nor in the subgraph");
  }
  ++it->initial_pending;
  return Status::OK();
}

void Executor::Layout::AddOutEdges(const ExecutorSpec& spec, const ItemIndex& item_of,
                                   const FeedIndex& feed_index) {
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const Node* n = spec.nodes[i];
    for (const Edge& e : n->out_edges()) {
      auto dst = item_of.find(e.dst);
      if (dst == item_of.end()) continue;
      if (e.IsControl()) {
        items[i].out_control.push_back(dst->second);
      } else if (!feed_index.count(Output(e.src, e.src_output))) {
        items[i].out_edges.push_back(
            {e.src_output, dst->second, items[dst->second].input_base + e.dst_input});
      }
    }
  }
}

Status Executor::Layout::AddFetches(const ExecutorSpec& spec, const ItemIndex& item_of,
                                    const FeedIndex& feed_index) {
  num_fetches = static_cast<int>(spec.fetches.size());
  for (size_t f = 0; f < spec.fetches.size(); ++f) {
    const Output& o = spec.fetches[f];
    auto fed = feed_index.find(o);
    if (fed != feed_index.end()) {
      feed_fetches[fed->second].push_back(static_cast<int>(f));
      continue;
    }
    auto it = item_of.find(o.node);
    if (it == item_of.end())
      return errors::Internal("Fetch '", o.name(), "' is not in the subgraph");
    items[it->second].out_edges.push_back({o.index, -1, static_cast<int>(f)});
  }
  return Status::OK();
}

struct Executor::Step {
  explicit Step(const Layout& l)
      : pending(new std::atomic<int>[l.items.size()]), inputs(l.num_slots) {
    for (size_t i = 0; i < l.items.size(); ++i)
      pending[i].store(l.items[i].initial_pending, std::memory_order_relaxed);
  }
  std::unique_ptr<std::atomic<int>[]> pending;
  std::vector<Tensor> inputs;
  std::vector<Tensor>* fetches = nullptr;
  int64_t step_id = 0;
  StepGroup* group = nullptr;
  std::atomic<int> outstanding{0};
  std::function<void()> done;
};

Executor::Executor(std::unique_ptr<Layout> layout) : layout_(std::move(layout)) {}
Executor::~Executor() = default;
int Executor::num_nodes() const { return static_cast<int>(layout_->items.size()); }

StatusOr<std::unique_ptr<Executor>> Executor::Create(const ExecutorSpec& spec,
                                                     const KernelSource& kernels) {
  auto layout = std::make_unique<Layout>();
  layout->pool = spec.pool != nullptr ? spec.pool : ThreadPool::Default();
  layout->devices = spec.devices;
  const bool sequential = SequentialMode();
  Layout::ItemIndex item_of;
  for (size_t i = 0; i < spec.nodes.size(); ++i) item_of[spec.nodes[i]] = static_cast<int>(i);
  Layout::FeedIndex feed_index;
  for (size_t i = 0; i < spec.feeds.size(); ++i) feed_index[spec.feeds[i]] = static_cast<int>(i);
  layout->feed_slots.resize(spec.feeds.size());
  layout->feed_fetches.resize(spec.feeds.size());
  layout->items.resize(spec.nodes.size());
  for (size_t i = 0; i < spec.nodes.size(); ++i)
    PF_RETURN_IF_ERROR(layout->AddItem(i, spec, kernels, sequential, item_of, feed_index));
  layout->AddOutEdges(spec, item_of, feed_index);
  PF_RETURN_IF_ERROR(layout->AddFetches(spec, item_of, feed_index));
  for (size_t i = 0; i < layout->items.size(); ++i) {
    if (layout->items[i].initial_pending == 0) layout->roots.push_back(static_cast<int>(i));
  }
  return std::unique_ptr<Executor>(new Executor(std::move(layout)));
}

void Executor::RunAsync(const std::vector<Tensor>& feeds, std::vector<Tensor>* fetches,
                        int64_t step_id, StepGroup* group, std::function<void()> done) const {
  const Layout& l = *layout_;
  auto* step = new Step(l);  // deleted when its last node completes
  step->step_id = step_id;
  step->group = group;
  step->done = std::move(done);
  fetches->assign(l.num_fetches, Tensor());
  step->fetches = fetches;
  for (size_t f = 0; f < feeds.size() && f < l.feed_slots.size(); ++f) {
    for (int slot : l.feed_slots[f]) step->inputs[slot] = feeds[f];
    for (int fetch : l.feed_fetches[f]) (*fetches)[fetch] = feeds[f];
  }
  if (l.roots.empty()) {
    step->done();
    delete step;
    return;
  }
  step->outstanding.store(static_cast<int>(l.roots.size()));
  // Cheap roots and one expensive root run here; other expensive roots go to the pool.
  std::deque<int> here;
  for (int r : l.roots) {
    if (l.items[r].expensive && !here.empty()) {
      l.pool->Schedule([this, step, r] { Process(step, {r}); });
    } else {
      here.push_back(r);
    }
  }
  BusyScope busy(*l.pool);  // idle workers of a small pool poll meanwhile (core/pool_wait.h)
  Process(step, std::move(here));
}

void Executor::WaitHelping(ThreadPool* pool, std::atomic<int>* remaining, std::mutex* mu,
                           std::condition_variable* cv) {
  // While other threads finish the step, help with queued work instead of idling. No polling
  // before the wait with the default pool, as many workers as cores: a polling caller takes a
  // core from them (mnist_mlp_epoch ran about 9% slower, 4 interleaved pairs). A pool that
  // leaves the caller a core (SessionOptions::num_threads = cores) is polled for
  // ThreadPool::SpinMicros() first (and while its workers are busy, when PF_POOL_BUSY_SPIN_US
  // allows): the step's end is often microseconds away, and waking a sleeping caller costs
  // tens of them (executor_wide, issue 34).
  const bool poll = LeavesCoreForCaller(*pool);
  int polls = 0;
  auto done_or_ran = [&] {  // the queue is looked at every 32 polls (it takes the lock)
    if (remaining->load(std::memory_order_acquire) == 0) return true;
    return (++polls & 31) == 0 && pool->TryRunOne();
  };
  while (remaining->load(std::memory_order_acquire) > 0) {
    if (pool->TryRunOne()) continue;
    if (poll && SpinWhileBusy(*pool, done_or_ran)) continue;
    std::unique_lock<std::mutex> lock(*mu);
    if (remaining->load(std::memory_order_acquire) > 0)
      cv->wait_for(lock, std::chrono::microseconds(200));
  }
  // `done` lowers the count under the lock and notifies before releasing it: taking the lock
  // once more means it is finished with mu and cv, which the caller may now destroy.
  std::lock_guard<std::mutex> lock(*mu);
}

Status Executor::Run(const std::vector<Tensor>& feeds, std::vector<Tensor>* fetches,
                     int64_t step_id, RunMetadata* stats) const {
  StepGroup group(stats);
  std::atomic<int> remaining{1};
  std::mutex mu;
  std::condition_variable cv;
  RunAsync(feeds, fetches, step_id, &group, [&] {
    std::lock_guard<std::mutex> lock(mu);
    remaining.store(0, std::memory_order_release);
    cv.notify_all();
  });
  WaitHelping(layout_->pool, &remaining, &mu, &cv);
  if (stats) {
    stats->step_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - group.start())
                         .count();
  }
  return group.status();
}

Status Executor::PrepareNode(Step* step, int id, std::vector<Tensor>* outputs,
                             std::vector<Shape>* runtime_shapes,
                             OpKernelContext::Params* params) const {
  const Layout::Item& it = layout_->items[id];
  const Node& n = *it.node;
  Tensor* inputs = step->inputs.data() + it.input_base;
  for (int k = 0; k < it.num_inputs; ++k) {
    if (inputs[k].IsInitialized() || (!it.ref_inputs.empty() && it.ref_inputs[k] != nullptr))
      continue;
    const Node* var = ReferencedVariable(n.input(k));
    if (var != nullptr) return errors::UninitializedValue(var->name());
    return errors::Internal("Input ", k, " of node '", n.name(), "' (from '", n.input(k).name(),
                            "') was never produced");
  }
  // Kernels trust their output shapes, so those come from the shape function over the real
  // inputs unless the static ones were inferred from these very input shapes. (An uninitialised
  // ref input, as Assign's first, stands for its static shape.)
  auto real_shape = [&](int k) -> const Shape& {
    return inputs[k].IsInitialized() ? inputs[k].shape() : it.input_shapes[k];
  };
  bool inputs_as_built = it.static_shapes;
  for (int k = 0; k < it.num_inputs && inputs_as_built; ++k)
    inputs_as_built = real_shape(k) == it.input_shapes[k];
  const Shape* shapes = it.output_shapes.data();
  if (!inputs_as_built) {
    std::vector<Shape> in_shapes(it.num_inputs);
    std::vector<DType> in_dtypes(it.num_inputs);
    std::vector<const Tensor*> in_values(it.num_inputs);
    for (int k = 0; k < it.num_inputs; ++k) {
      in_shapes[k] = real_shape(k);
      in_dtypes[k] = inputs[k].IsInitialized() ? inputs[k].dtype() : n.input(k).dtype();
      // Shape functions may read input values: only those the host can read (a GPU kernel's
      // shape arguments are HostMemory, so they are).
      in_values[k] = inputs[k].IsInitialized() && inputs[k].InHostMemory() ? &inputs[k] : nullptr;
    }
    Status s = RunShapeFn(n.op_def(), n.attrs(), in_shapes, std::move(in_dtypes),
                          std::move(in_values), n.num_outputs(), runtime_shapes);
    if (!s.ok()) {
      std::vector<std::string> names;
      for (const Shape& sh : in_shapes) names.push_back(sh.ToString());
      return Status(s.code(),
                    fmt::format("{} with input shapes: {}.", s.message(), fmt::join(names, ", ")));
    }
    shapes = runtime_shapes->data();
  }
  outputs->resize(n.num_outputs());
  OpKernelContext::Params& p = *params;
  p.device = it.device;
  p.allocator = it.device->GetAllocator();
  p.intra_op_pool = it.device->intra_op_pool();
  p.inputs = inputs;
  p.ref_inputs = it.ref_inputs.empty() ? nullptr : it.ref_inputs.data();
  p.num_inputs = it.num_inputs;
  p.output_shapes = shapes;
  p.outputs = outputs->data();
  p.num_outputs = n.num_outputs();
  p.output_dtypes = it.output_dtypes.data();
  p.step_id = step->step_id;
  p.rendezvous = step->group->rendezvous();
  p.collectives = step->group->collectives();
  p.cancellation = step->group->cancellation();
  p.devices = layout_->devices;
  p.kernel = it.kernel;
  return Status::OK();
}

namespace {
// Small, stable thread ids for traces.
uint64_t TraceThreadId() {
  static std::atomic<uint64_t> next{0};
  thread_local uint64_t id = next.fetch_add(1);
  return id;
}

// A trampoline for completions. An asynchronous node may finish on the stack of the node that
// caused it: a _Send hands its value to a waiting _Recv, whose completion runs the next nodes
// inline, whose _Send finishes the next _Recv, ... A long cross-device chain would recurse
// once per hop and overflow the stack. So a completion arriving while this thread is already
// inside Process is queued, and the outermost Process on the thread runs the queue when its
// own loop ends. Completions from other threads (GPU callbacks, RPCs) run at once.
thread_local int t_process_depth = 0;
thread_local std::deque<std::function<void()>>* t_deferred = nullptr;

class ProcessScope {
 public:
  ProcessScope() {
    if (t_process_depth++ == 0) t_deferred = &queue_;
  }
  ~ProcessScope() {
    if (t_process_depth == 1) {
      while (!queue_.empty()) {  // runs at depth 1: what these queue lands here too
        std::function<void()> fn = std::move(queue_.front());
        queue_.pop_front();
        fn();
      }
      t_deferred = nullptr;
    }
    --t_process_depth;
  }

 private:
  std::deque<std::function<void()>> queue_;
};

// Runs `fn` now, or after the current Process on this thread when called inside one.
void RunCompletion(std::function<void()> fn) {
  if (t_process_depth > 0) {
    t_deferred->push_back(std::move(fn));
    return;
  }
  fn();
}
}  // namespace

// State of an asynchronous node while it waits (its context must outlive ComputeAsync).
struct AsyncNode {
  std::vector<Tensor> outputs;
  std::vector<Shape> shapes;
  OpKernelContext::Params params;
  std::unique_ptr<OpKernelContext> ctx;
  std::chrono::steady_clock::time_point t0;
  std::string trace_label;
};

void Executor::StartAsync(Step* step, int id) const {
  const Layout::Item& it = layout_->items[id];
  auto state = std::make_shared<AsyncNode>();
  state->t0 = step->group->stats() ? std::chrono::steady_clock::now()
                                   : std::chrono::steady_clock::time_point();
  Status s = PrepareNode(step, id, &state->outputs, &state->shapes, &state->params);
  if (!s.ok()) {
    std::deque<int> ready;
    Complete(step, id, s, &state->outputs, state->t0, &ready);
    if (!ready.empty()) Process(step, std::move(ready));
    return;
  }
  if (step->group->stats()) state->params.trace_label = &state->trace_label;
  state->params.outputs = state->outputs.data();
  if (!state->shapes.empty()) state->params.output_shapes = state->shapes.data();
  state->ctx = std::make_unique<OpKernelContext>(state->params);
  it.kernel->ComputeAsync(state->ctx.get(), [this, step, id, state](Status done_status) {
    RunCompletion([this, step, id, state, done_status] {
      std::deque<int> ready;
      Complete(step, id, done_status, &state->outputs, state->t0, &ready, &state->trace_label);
      if (!ready.empty()) Process(step, std::move(ready));
    });
  });
}

void Executor::Complete(Step* step, int id, const Status& s, std::vector<Tensor>* outputs,
                        std::chrono::steady_clock::time_point t0, std::deque<int>* inline_ready,
                        std::string* trace_label) const {
  const Layout& l = *layout_;
  const Layout::Item& it = l.items[id];
  if (step->group->stats() && !step->group->aborted()) {
    NodeExecStats rec;
    rec.node = it.node->name();
    rec.op = it.node->op();
    rec.device = it.device->name();
    rec.thread = TraceThreadId();
    rec.start_us =
        std::chrono::duration_cast<std::chrono::microseconds>(t0 - step->group->start()).count();
    rec.end_us = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::steady_clock::now() - step->group->start())
                     .count();
    for (const Tensor& t : *outputs) rec.output_bytes += static_cast<int64_t>(t.TotalBytes());
    if (trace_label != nullptr) rec.label = std::move(*trace_label);
    step->group->Record(std::move(rec));
  }
  // Inputs die as soon as their last consumer has run.
  for (int k = 0; k < it.num_inputs; ++k) step->inputs[it.input_base + k] = Tensor();
  // Cheap successors run inline; of the expensive ones, the last stays inline when nothing
  // else is queued here and the rest go to the pool. A node counts as outstanding before it
  // can run, except the first that will run inline here: it takes over this node's count (so
  // a chain of nodes never touches the shared counter, which both threads would contend for).
  int keep_expensive = -1;
  bool handed_over = false;
  auto run_here = [&](int r) {
    if (handed_over) {
      step->outstanding.fetch_add(1, std::memory_order_relaxed);
    } else {
      handed_over = true;
    }
    inline_ready->push_back(r);
  };
  auto schedule = [&](int r) {
    step->outstanding.fetch_add(1, std::memory_order_relaxed);
    l.pool->Schedule([this, step, r] { Process(step, {r}); });
  };
  auto ready = [&](int r) {
    if (!l.items[r].expensive) {
      run_here(r);
      return;
    }
    if (keep_expensive >= 0) schedule(keep_expensive);
    keep_expensive = r;
  };
  if (!s.ok()) {
    // Aborted _Recvs report the step's first error, which already names its node.
    if (!step->group->aborted()) step->group->Fail(Annotate(s, *it.node, *it.device));
  } else {
    for (const Layout::OutEdge& e : it.out_edges) {
      if (e.dst_item < 0) {
        (*step->fetches)[e.dst_slot] = (*outputs)[e.src_output];
        continue;
      }
      step->inputs[e.dst_slot] = (*outputs)[e.src_output];
      if (step->pending[e.dst_item].fetch_sub(1, std::memory_order_acq_rel) == 1) ready(e.dst_item);
    }
    for (int dst : it.out_control) {
      if (step->pending[dst].fetch_sub(1, std::memory_order_acq_rel) == 1) ready(dst);
    }
  }
  outputs->clear();
  if (keep_expensive >= 0) {
    if (inline_ready->empty()) {
      run_here(keep_expensive);
    } else {
      schedule(keep_expensive);
    }
  }
  if (!handed_over && step->outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::function<void()> done = std::move(step->done);
    delete step;
    done();
  }
}

void Executor::Process(Step* step, std::deque<int> inline_ready) const {
  ProcessScope scope;
  const Layout& l = *layout_;
  std::vector<Tensor> outputs;
  std::vector<Shape> runtime_shapes;
  std::string trace_label;  // what a traced kernel says about its run (SetTraceLabel)
  while (!inline_ready.empty()) {
    const int id = inline_ready.front();
    inline_ready.pop_front();
    const Layout::Item& it = l.items[id];
    if (step->group->aborted()) {
      outputs.clear();
      Complete(step, id, errors::Aborted("step aborted"), &outputs, {}, &inline_ready);
      continue;
    }
    if (it.kernel->IsAsync()) {
      StartAsync(step, id);
      continue;
    }
    const auto t0 = step->group->stats() ? std::chrono::steady_clock::now()
                                         : std::chrono::steady_clock::time_point();
    OpKernelContext::Params params;
    runtime_shapes.clear();
    Status s = PrepareNode(step, id, &outputs, &runtime_shapes, &params);
    if (s.ok()) {
      if (step->group->stats()) {
        trace_label.clear();
        params.trace_label = &trace_label;
      }
      OpKernelContext ctx(params);
      s = Guarded([&] { return it.kernel->Compute(&ctx); });
    }
    Complete(step, id, s, &outputs, t0, &inline_ready, params.trace_label);
  }
}

}  // namespace pf
