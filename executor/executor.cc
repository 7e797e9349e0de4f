#include "placeflow/executor/executor.h"

#include <fmt/ranges.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include "placeflow/core/pool_wait.h"
#include "placeflow/executor/executor_state.h"
#include "placeflow/executor/frames.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/graph/scope.h"

namespace pf {
namespace {

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

// On a thread outside a pool that has a worker per core (a session's caller, an asynchronous
// kernel's callback), expensive nodes go to the pool: running one here would put a thread more
// than cores to work, and the OS would share a core between two of them. TensorFlow's caller
// hands every node to its pool too (benchmarks.md, "A waiting caller took a core").
bool CallerBesideFullPool(const ThreadPool& pool) {
  return pool.num_threads() > 0 && !LeavesCoreForCaller(pool) && !pool.InPool();
}

// The step has ended: its time decides whether the next one is small, and its caller hears.
void EndStep(const Executor::Layout& l, Executor::Step* step) {
  l.last_step_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - step->start)
                           .count(),
                       std::memory_order_relaxed);
  std::function<void()> done = std::move(step->done);
  delete step;
  done();
}

}  // namespace

Executor::Executor(std::unique_ptr<Layout> layout) : layout_(std::move(layout)) {}
Executor::~Executor() = default;
int Executor::num_nodes() const { return static_cast<int>(layout_->items.size()); }
bool Executor::own_pool() const { return layout_->own_pool; }

void Executor::RunAsync(const std::vector<Tensor>& feeds, std::vector<Tensor>* fetches,
                        int64_t step_id, StepGroup* group, std::function<void()> done) const {
  const Layout& l = *layout_;
  if (l.own_pool && !l.pool->InPool()) {  // the device's nodes run on its threads only
    l.pool->Schedule([this, feeds, fetches, step_id, group, done = std::move(done)]() mutable {
      RunAsync(feeds, fetches, step_id, group, std::move(done));
    });
    return;
  }
  auto* step = new Step(l);  // deleted when its last node completes
  step->start = std::chrono::steady_clock::now();
  const int64_t last_ns = l.last_step_ns.load(std::memory_order_relaxed);
  // A step after a small one runs on its caller as on a pool thread: handing its nodes to a
  // sleeping worker and waking the caller again cost more than the whole step (a Run of one
  // scalar op: 6 us handed over, 0.9 us kept; session_run_overhead), and so short a stretch of
  // one thread more than cores takes little from the workers.
  step->small = last_ns >= 0 && last_ns < l.small_step_ns;
  step->step_id = step_id;
  step->group = group;
  step->done = std::move(done);
  fetches->assign(l.num_fetches, Tensor());
  step->fetches = fetches;
  for (size_t f = 0; f < feeds.size() && f < l.feed_slots.size(); ++f) {
    for (int slot : l.feed_slots[f]) step->root.inputs[slot] = feeds[f];
    for (int fetch : l.feed_fetches[f]) (*fetches)[fetch] = feeds[f];
  }
  if (l.roots.empty()) return EndStep(l, step);
  step->outstanding.store(static_cast<int>(l.roots.size()));
  // Cheap roots and one expensive root run here (none beside a full pool, unless the step is
  // small); other expensive roots go to the pool.
  std::deque<TaggedNode> here;
  step->root.outstanding = static_cast<int>(l.roots.size());  // control flow's count
  const bool hand_over = !step->small && CallerBesideFullPool(*l.pool);
  for (int r : l.roots) {
    const TaggedNode t{r, &step->root};
    if (l.items[r].expensive && (!here.empty() || hand_over)) {
      l.pool->Schedule([this, step, t] { Process(step, {t}); });
    } else {
      here.push_back(t);
    }
  }
  BusyScope busy(*l.pool);  // idle workers of a small pool poll meanwhile (core/pool_wait.h)
  Process(step, std::move(here));
}

void Executor::WaitHelping(ThreadPool* pool, std::atomic<int>* remaining, std::mutex* mu,
                           std::condition_variable* cv) {
  // While other threads finish the step, help with queued work, where the waiting thread is
  // one of the pool's workforce: a pool that leaves it a core (SessionOptions::num_threads =
  // cores), or a pool thread waiting on a nested step (whose help may be what the step needs
  // when every worker waits). Such a pool is polled for ThreadPool::SpinMicros() first (and
  // while its workers are busy, when PF_POOL_BUSY_SPIN_US allows): the step's end is often
  // microseconds away, and waking a sleeping caller costs tens of them (executor_wide, issue
  // 34); and the helper wakes every 200 us to look at the queue again. Any other caller (beside
  // the default pool, a worker per core) sleeps until the step ends, as TensorFlow's does: the
  // workers run what is queued, and a caller that took queued work, polled (mnist_mlp_epoch ran
  // about 9% slower) or woke every 200 us (with two CPU devices of a thread each, one device's
  // nodes ran 11% slower: pf-bench auto_placement's wide model) took a core from one of them.
  const bool poll = pool != nullptr && LeavesCoreForCaller(*pool);
  const bool help = poll || (pool != nullptr && pool->InPool());
  auto finished = [&] { return remaining->load(std::memory_order_acquire) == 0; };
  int polls = 0;
  auto done_or_ran = [&] {  // the queue is looked at every 32 polls (it takes the lock)
    return finished() || ((++polls & 31) == 0 && pool->TryRunOne());
  };
  while (!finished()) {
    if (help && pool->TryRunOne()) continue;
    if (poll && SpinWhileBusy(*pool, done_or_ran)) continue;
    std::unique_lock<std::mutex> lock(*mu);
    if (help) {
      cv->wait_for(lock, std::chrono::microseconds(200), finished);
    } else {
      cv->wait(lock, finished);
    }
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
  WaitHelping(layout_->own_pool ? nullptr : layout_->pool, &remaining, &mu, &cv);
  if (stats) {
    stats->step_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - group.start())
                         .count();
  }
  return group.status();
}

Status Executor::PrepareNode(Step* step, TaggedNode t, std::vector<Tensor>* outputs,
                             std::vector<Shape>* runtime_shapes,
                             OpKernelContext::Params* params) const {
  const Layout::Item& it = layout_->items[t.id];
  const Node& n = *it.node;
  Tensor* inputs = t.iter->inputs.data() + it.input_base;
  for (int k = 0; k < it.num_inputs; ++k) {
    if (inputs[k].IsInitialized() || (!it.ref_inputs.empty() && it.ref_inputs[k] != nullptr) ||
        it.runs_dead)  // a Merge's or _Send's dead inputs are unset
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
  p.rendezvous = t.iter->rendezvous ? t.iter->rendezvous.get() : step->group->rendezvous();
  p.collectives = step->group->collectives();
  p.step_container = step->group->step_container();
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

// Adds a node's run to the step's trace.
void Record(StepGroup* group, const std::string& node, const std::string& op,
            const std::string& device, const std::vector<Tensor>& outputs,
            std::chrono::steady_clock::time_point t0, std::string* trace_label) {
  NodeExecStats rec;
  rec.node = node;
  rec.op = op;
  rec.device = device;
  rec.thread = TraceThreadId();
  rec.start_us = std::chrono::duration_cast<std::chrono::microseconds>(t0 - group->start()).count();
  rec.end_us = std::chrono::duration_cast<std::chrono::microseconds>(
                   std::chrono::steady_clock::now() - group->start())
                   .count();
  for (const Tensor& t : outputs) rec.output_bytes += static_cast<int64_t>(t.TotalBytes());
  if (trace_label != nullptr) rec.label = std::move(*trace_label);
  group->Record(std::move(rec));
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

void Executor::StartAsync(Step* step, TaggedNode t) const {
  const Layout::Item& it = layout_->items[t.id];
  auto state = std::make_shared<AsyncNode>();
  state->t0 = step->group->stats() ? std::chrono::steady_clock::now()
                                   : std::chrono::steady_clock::time_point();
  Status s = PrepareNode(step, t, &state->outputs, &state->shapes, &state->params);
  if (!s.ok()) {
    std::deque<TaggedNode> ready;
    Complete(step, t, s, &state->outputs, state->t0, &ready);
    if (!ready.empty()) Process(step, std::move(ready));
    return;
  }
  if (step->group->stats()) state->params.trace_label = &state->trace_label;
  state->params.outputs = state->outputs.data();
  if (!state->shapes.empty()) state->params.output_shapes = state->shapes.data();
  state->ctx = std::make_unique<OpKernelContext>(state->params);
  it.kernel->ComputeAsync(state->ctx.get(), [this, step, t, state](Status done_status) {
    auto complete = [this, step, t, state, done_status] {
      std::deque<TaggedNode> ready;
      Complete(step, t, done_status, &state->outputs, state->t0, &ready, &state->trace_label);
      if (!ready.empty()) Process(step, std::move(ready));
    };
    const Layout& l = *layout_;
    if (l.own_pool && !l.pool->InPool()) {  // back onto the device's threads
      l.pool->Schedule(std::move(complete));
    } else {
      RunCompletion(std::move(complete));
    }
  });
}

void Executor::Complete(Step* step, TaggedNode t, const Status& s, std::vector<Tensor>* outputs,
                        std::chrono::steady_clock::time_point t0,
                        std::deque<TaggedNode>* inline_ready, std::string* trace_label) const {
  const Layout& l = *layout_;
  const Layout::Item& it = l.items[t.id];
  IterState* iter = t.iter;
  if (step->group->stats() && !step->group->aborted() && !t.dead)
    Record(step->group, it.node->name(), it.node->op(), it.device->name(), *outputs, t0,
           trace_label);
  // Inputs die as soon as their last consumer has run.
  for (int k = 0; k < it.num_inputs; ++k) iter->inputs[it.input_base + k] = Tensor();
  // Cheap successors run inline; of the expensive ones, the last stays inline when nothing
  // else is queued here (and this is no caller beside a full pool, or the step is small) and the
  // rest go to the pool. A node counts as outstanding before it can run, except the first that
  // will run inline here: it takes over this node's count (so a chain of nodes never touches the
  // shared counter, which both threads would contend for).
  std::optional<TaggedNode> keep_expensive;
  bool handed_over = false;
  auto run_here = [&](TaggedNode r) {
    if (handed_over) {
      step->outstanding.fetch_add(1, std::memory_order_relaxed);
    } else {
      handed_over = true;
    }
    inline_ready->push_back(r);
  };
  auto schedule = [&](TaggedNode r) {
    step->outstanding.fetch_add(1, std::memory_order_relaxed);
    l.pool->Schedule([this, step, r] { Process(step, {r}); });
  };
  auto ready = [&](TaggedNode r) {
    if (!l.items[r.id].expensive || r.dead) {
      run_here(r);
      return;
    }
    if (keep_expensive) schedule(*keep_expensive);
    keep_expensive = r;
  };
  if (!s.ok()) {
    // Aborted _Recvs report the step's first error, which already names its node.
    if (!step->group->aborted()) step->group->Fail(Annotate(s, *it.node, *it.device));
  } else if (!l.control_flow) {  // the fast path: one iteration, atomic counts
    for (const Layout::OutEdge& e : it.out_edges) {
      if (e.dst_item < 0) {
        (*step->fetches)[e.dst_slot] = (*outputs)[e.src_output];
        continue;
      }
      iter->inputs[e.dst_slot] = (*outputs)[e.src_output];
      if (iter->pending[e.dst_local].fetch_sub(1, std::memory_order_acq_rel) == 1)
        ready({e.dst_item, iter});
    }
    for (int dst : it.out_control) {  // one frame: an item's local index is its id
      if (iter->pending[dst].fetch_sub(1, std::memory_order_acq_rel) == 1) ready({dst, iter});
    }
  } else {
    ReadyList made_ready;
    PropagateInFrames(l, step, t, outputs, &made_ready);
    made_ready.ForEach(ready);
  }
  outputs->clear();
  if (keep_expensive) {
    if (inline_ready->empty() && (step->small || !CallerBesideFullPool(*l.pool))) {
      run_here(*keep_expensive);
    } else {
      schedule(*keep_expensive);
    }
  }
  if (!handed_over && step->outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // Nothing runs any more: a loop instance still alive waits for a value that cannot come
    // (a malformed loop); its fetches would be missing, so the step fails instead.
    if (l.control_flow && !step->frames.empty() && !step->group->aborted()) {
      step->group->Fail(errors::Internal("The step ended with ", step->frames.size(),
                                         " while loop instance(s) still waiting for inputs"));
    }
    EndStep(l, step);
  }
}

void Executor::Process(Step* step, std::deque<TaggedNode> inline_ready) const {
  ProcessScope scope;
  const Layout& l = *layout_;
  std::vector<Tensor> outputs;
  std::vector<Shape> runtime_shapes;
  std::string trace_label;  // what a traced kernel says about its run (SetTraceLabel)
  while (!inline_ready.empty()) {
    const TaggedNode t = inline_ready.front();
    inline_ready.pop_front();
    const Layout::Item& it = l.items[t.id];
    if (step->group->aborted()) {
      outputs.clear();
      Complete(step, t, errors::Aborted("step aborted"), &outputs, {}, &inline_ready);
      continue;
    }
    if (t.dead) {  // an untaken branch: its outputs are dead (executor/frames.h)
      outputs.clear();
      Complete(step, t, Status::OK(), &outputs, {}, &inline_ready);
      continue;
    }
    if (it.kernel->IsAsync()) {
      StartAsync(step, t);
      continue;
    }
    const auto t0 = step->group->stats() ? std::chrono::steady_clock::now()
                                         : std::chrono::steady_clock::time_point();
    OpKernelContext::Params params;
    runtime_shapes.clear();
    Status s = PrepareNode(step, t, &outputs, &runtime_shapes, &params);
    if (s.ok()) {
      if (step->group->stats()) {
        trace_label.clear();
        params.trace_label = &trace_label;
      }
      OpKernelContext ctx(params);
      s = Guarded([&] { return it.kernel->Compute(&ctx); });
    }
    Complete(step, t, s, &outputs, t0, &inline_ready, params.trace_label);
  }
}

}  // namespace pf
