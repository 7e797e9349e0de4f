// Executor: runs a fixed set of nodes by counting each node's unfinished inputs. The layout
// (items, edges, initial pending counts) is built once; each Run copies the counts, seeds the
// feeds, and runs ready nodes: cheap ones inline on the current thread, expensive ones on the
// pool (one of them inline when nothing cheap is waiting). The first error wins: scheduling
// stops, the step drains, and Run returns the error with the node and device attached.
//
//   pf::ExecutorSpec spec{.nodes = pruned, .feeds = {x_out}, .fetches = {loss}};
//   PF_ASSIGN_OR_RETURN(auto exec, pf::Executor::Create(spec, kernel_source));
//   std::vector<pf::Tensor> out;
//   PF_RETURN_IF_ERROR(exec->Run({batch}, &out));
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "placeflow/devices/device.h"
#include "placeflow/executor/collective.h"
#include "placeflow/executor/rendezvous.h"
#include "placeflow/executor/trace.h"
#include "placeflow/graph/cancellation.h"
#include "placeflow/graph/graph.h"
#include "placeflow/graph/kernel.h"

namespace pf {

// What the executors of one Session::Run share (one executor per device partition): the
// rendezvous their _Send/_Recv meet at, the collectives table, the cancellation of kernels that
// wait on shared state (queues, accumulators), the first error, and the trace.
class StepGroup {
 public:
  // `rendezvous` (default: an in-process one of its own) must outlive the group; a cluster
  // worker passes the step's rendezvous, which reaches other tasks.
  explicit StepGroup(RunMetadata* stats = nullptr, Rendezvous* rendezvous = nullptr)
      : rendezvous_(rendezvous ? rendezvous : &local_rendezvous_),
        stats_(stats),
        start_(std::chrono::steady_clock::now()) {}
  ~StepGroup();
  // The first error wins; it aborts the rendezvous so every waiting _Recv wakes, and cancels
  // every waiting kernel.
  void Fail(const Status& s);
  // Fails the step with DeadlineExceeded (naming what still waits) unless it ended within
  // `timeout_ms` (RunOptions::timeout_in_ms; <= 0: no limit). Call once, before the step starts.
  // `keep_alive` (the group's owner, when shared) is held while the timeout fires.
  void SetTimeout(int64_t timeout_ms, std::shared_ptr<void> keep_alive = nullptr);
  // Disarms the timeout (waits if it is firing on another thread); the destructor does too.
  void CancelTimeout();
  CancellationManager* cancellation() { return &cancellation_; }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  Status status() const;
  Rendezvous* rendezvous() { return rendezvous_; }
  CollectiveTable* collectives() { return &collectives_; }
  StepContainer* step_container() { return &step_container_; }
  RunMetadata* stats() const { return stats_; }
  std::chrono::steady_clock::time_point start() const { return start_; }
  void Record(NodeExecStats s);

 private:
  LocalRendezvous local_rendezvous_;
  Rendezvous* rendezvous_;
  LocalCollectiveTable collectives_;
  StepContainer step_container_;
  CancellationManager cancellation_;
  uint64_t timer_ = 0;  // the timeout's Timer id, 0 when none
  std::atomic<bool> aborted_{false};
  mutable std::mutex mu_;
  Status status_;
  RunMetadata* stats_;
  std::chrono::steady_clock::time_point start_;
};

struct ExecutorSpec {
  std::vector<Node*> nodes;                         // the pruned subgraph
  std::unordered_map<const Node*, Device*> device;  // placement of every node
  std::vector<Output> feeds;                        // tensors supplied by the caller
  std::vector<Output> fetches;                      // tensors returned, in order
  ThreadPool* pool = nullptr;  // inter-op pool (default: ThreadPool::Default())
  // The pool is the device's own (SessionOptions::cpu_device_threads): every node runs on its
  // threads. RunAsync called elsewhere starts the step there, an asynchronous node whose
  // completion arrives on another thread (a _Recv woken by another device's _Send) continues
  // there, and Run waits without helping.
  bool own_pool = false;
  const DeviceSet* devices = nullptr;  // for _Recv (which device sent)
  // The step's graph has control flow (a cond, a loop) on some device: a _Recv may bring a dead
  // tensor even into a partition without control-flow nodes (executor/frames.h).
  bool dead_tensors = false;
  // A caller beside a pool with a worker per core hands every expensive node to the pool, unless
  // the executor's last step took less than this: handing a step of a few microseconds to a
  // sleeping worker and waking the caller again cost more than the step (session_run_overhead).
  int64_t small_step_us = 50;
};

struct IterState;
// A node to run in one iteration of one frame (the step's only iteration when the graph has no
// control flow); `dead`: its inputs were dead, so it does not run and its outputs are dead.
struct TaggedNode {
  TaggedNode(int id, IterState* iter, bool dead = false) : iter(iter), id(id), dead(dead) {}
  IterState* iter;
  int id;
  bool dead;  // 16 bytes in all: the ready queues hold these
};

// Hands out the kernel for a node on a device (the session caches them so stateful kernels
// keep their state across calls and signatures).
using KernelSource = std::function<StatusOr<OpKernel*>(const Node&, Device*)>;

class Executor {
 public:
  static StatusOr<std::unique_ptr<Executor>> Create(const ExecutorSpec& spec,
                                                    const KernelSource& kernels);
  ~Executor();

  // Starts a step of this executor within `group`: `feeds` in spec.feeds order, fetched
  // tensors land in `fetches` (spec.fetches order). Runs what it can on the calling thread and
  // returns; `done` runs exactly once, on some thread, when every node has run or been skipped.
  void RunAsync(const std::vector<Tensor>& feeds, std::vector<Tensor>* fetches, int64_t step_id,
                StepGroup* group, std::function<void()> done) const;
  // One executor alone: runs the step, waits for it (helping the pool where WaitHelping does)
  // and returns the first error.
  Status Run(const std::vector<Tensor>& feeds, std::vector<Tensor>* fetches, int64_t step_id = 0,
             RunMetadata* stats = nullptr) const;
  // Waits until `*remaining` reaches zero, running queued pool work meanwhile where the waiting
  // thread is one of the pool's workforce (a pool thread, or a pool that leaves it a core); any
  // other caller sleeps. None when `pool` is null.
  static void WaitHelping(ThreadPool* pool, std::atomic<int>* remaining, std::mutex* mu,
                          std::condition_variable* cv);

  int num_nodes() const;
  // ExecutorSpec::own_pool.
  bool own_pool() const;

  // Defined in executor/executor_state.h (the executor's own files only).
  struct Layout;
  struct Step;

 private:
  explicit Executor(std::unique_ptr<Layout> layout);
  // Runs `ready` and whatever it makes ready that should stay on this thread.
  void Process(Step* step, std::deque<TaggedNode> ready) const;
  // Checks inputs, infers runtime shapes and fills the kernel parameters of node `t`.
  Status PrepareNode(Step* step, TaggedNode t, std::vector<Tensor>* outputs,
                     std::vector<Shape>* runtime_shapes, OpKernelContext::Params* p) const;
  // After node `t` ran: frees its inputs, records the error or hands its outputs to their
  // consumers, queues newly ready nodes (cheap ones on `inline_ready`), and ends the step when
  // nothing is left. `trace_label`: what the kernel said about its run, for the trace (moved).
  void Complete(Step* step, TaggedNode t, const Status& s, std::vector<Tensor>* outputs,
                std::chrono::steady_clock::time_point t0, std::deque<TaggedNode>* inline_ready,
                std::string* trace_label = nullptr) const;
  void StartAsync(Step* step, TaggedNode t) const;
  std::unique_ptr<Layout> layout_;
};

}  // namespace pf
