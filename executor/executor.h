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

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "devices/device.h"
#include "executor/trace.h"
#include "graph/graph.h"
#include "graph/kernel.h"

namespace pf {

struct ExecutorSpec {
  std::vector<Node*> nodes;                         // the pruned subgraph
  std::unordered_map<const Node*, Device*> device;  // placement of every node
  std::vector<Output> feeds;                        // tensors supplied by the caller
  std::vector<Output> fetches;                      // tensors returned, in order
  ThreadPool* pool = nullptr;                       // inter-op pool (default: ThreadPool::Default())
};

// Hands out the kernel for a node on a device (the session caches them so stateful kernels
// keep their state across calls and signatures).
using KernelSource = std::function<StatusOr<OpKernel*>(const Node&, Device*)>;

class Executor {
 public:
  static StatusOr<std::unique_ptr<Executor>> Create(const ExecutorSpec& spec, const KernelSource& kernels);
  ~Executor();

  // `feeds` in the order of spec.feeds; fetched tensors are returned in spec.fetches order.
  // `stats`, when given, receives one record per node run (Chrome trace material).
  Status Run(const std::vector<Tensor>& feeds, std::vector<Tensor>* fetches, int64_t step_id = 0,
             RunMetadata* stats = nullptr) const;

  int num_nodes() const;

 private:
  struct Layout;
  struct Step;
  explicit Executor(std::unique_ptr<Layout> layout);
  // Runs `ready` and whatever it makes ready that should stay on this thread.
  void Process(Step* step, std::deque<int> ready) const;
  Status RunNode(Step* step, int item, std::vector<Tensor>* outputs) const;
  void Record(Step* step, int item, std::chrono::steady_clock::time_point t0, const std::vector<Tensor>& outputs) const;
  std::unique_ptr<Layout> layout_;
};

}  // namespace pf
