// A step's schedule as the executor would run it, predicted from a CostGraph and a CostModel: a
// list scheduler (nodes start in the order their inputs become ready, on the first free thread of
// their device; a node large enough to split takes all of them), one transfer per tensor and
// destination device (each directed link carries one at a time), and per device the peak memory
// of the tensors alive (allocated when their producer starts or their copy arrives, freed when
// the last reader ends; between CPU devices of one task the copy is the sender's buffer, held
// until its last reader on either device) plus the variables. The simulator (Simulate) runs it on a
// given placement; the planners (placer/auto_place.h) choose each node's device as it gets its
// turn.
//
//   pf::CostGraph g = pf::BuildCostGraph(nodes, cost);
//   PF_ASSIGN_OR_RETURN(pf::Schedule s, pf::Simulate(g, cost, device_of));
//   s.step_us, s.peak_bytes[d], s.nodes[i].start
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "placeflow/placer/cost_model.h"

namespace pf {

struct Schedule {
  struct NodeRun {
    int device = -1;
    int slot = 0;  // the device's thread (0 for a node that took them all)
    double start = 0, end = 0;
  };
  struct Transfer {
    int src = 0, output = 0;  // the tensor (-1: a control token)
    int from = 0, to = 0;     // devices
    double start = 0, end = 0;
    int64_t bytes = 0;
  };
  std::vector<NodeRun> nodes;  // per CostGraph node
  std::vector<Transfer> transfers;
  double step_us = 0;
  std::vector<int64_t> peak_bytes;  // per device
  std::vector<double> busy_us;      // per device: the nodes' time
};

class ListScheduler {
 public:
  // `priority` (per node, higher first) breaks ties between nodes ready at the same time;
  // empty: graph order.
  ListScheduler(const CostGraph& graph, const CostModel& cost, std::vector<double> priority = {});

  // When a node's inputs are ready: the device it runs on, or kDefer to decide when a consumer
  // is placed (Resolve then places it; a deferred node is charged no device time).
  static constexpr int kDefer = -2;
  using Choose = std::function<StatusOr<int>(int node)>;
  // Where a deferred node goes once the consumer `consumer_device` runs on needs it.
  using Resolve = std::function<int(int node, int consumer_device)>;
  Status Run(const Choose& choose, const Resolve& resolve);
  // With each node's device known in advance (Simulate): order nodes as the executor's threads
  // do. A thread that finishes a node runs the successors it made ready on its device, that can
  // start at once, next: the cheap ones (Cheap), in order, and when there are none the last of
  // the others; the rest wait in the ready queue. So a gradient's optimizer update runs before an
  // older ready node, and frees the gradient sooner. The step's cheap roots (variables,
  // constants) start in that list too, as in the executor's inline queue, so they and the cheap
  // nodes they make ready run before any expensive node.
  void FollowExecutorThreads(std::vector<int> device_of) { fixed_device_ = std::move(device_of); }

  // What the choices can ask: the earliest start of `node` on `device`, given all scheduled so far.
  double StartOn(int node, int device) const;
  double ComputeUs(int node, int device) const;
  // IsCheap (placer/cost_model.h) on the node's time there.
  bool Cheap(int node, int device) const;
  int device_of(int node) const { return schedule_.nodes[node].device; }
  bool deferred(int node) const { return deferred_[node]; }
  // Memory as the scheduling goes: a node's output and its copies are held from when it is
  // scheduled until its last consumer is; Hold adds bytes for the rest of the step (variables).
  int64_t InUse(int device) const { return in_use_[device]; }
  const std::vector<int64_t>& PeakInUse() const { return peak_in_use_; }
  void Hold(int device, int64_t bytes);

  // Memory and totals; call once after Run.
  Schedule Finish();

 private:
  double Arrival(int edge, int device) const;
  void Commit(int node, int device);
  void ResolveInputs(int node, int device, const Resolve& resolve);
  void Allocate(int node, int device, int64_t bytes);
  void ConsumeInputs(int node);

  const CostGraph& g_;
  const CostModel& cost_;
  std::vector<double> priority_;
  Schedule schedule_;
  std::vector<std::vector<double>> slot_free_;  // per device, per thread
  std::vector<std::vector<double>> link_free_;  // per (from, to)
  std::vector<double> ready_at_;                // per node: inputs' end, ignoring transfers
  std::vector<bool> deferred_;
  std::vector<int> fixed_device_;  // FollowExecutorThreads; empty: every node goes to the queue
  std::vector<int64_t> in_use_, peak_in_use_;               // per device
  std::vector<int> consumers_left_;                         // per node: data edges not scheduled
  std::vector<std::vector<std::pair<int, int64_t>>> held_;  // per node: (device, bytes) held
  std::map<std::tuple<int, int, int>, int> copies_;         // (src, output, to) -> transfer index
};

// A loop's NextIteration -> Merge edge: left out of every order, schedule and count (a loop
// counts as one iteration).
bool IsLoopBackEdge(const CostGraph& graph, const CostGraph::Edge& edge);

// Fills `schedule`'s step time and per-device peak memory from its nodes' and transfers' times
// (what Finish does; also for a schedule read from a measured step's trace).
void AccountMemory(const CostGraph& graph, const MachineModel& machine, Schedule* schedule);

// The schedule of `device_of` (per CostGraph node, an index into the model's devices).
StatusOr<Schedule> Simulate(const CostGraph& graph, const CostModel& cost,
                            const std::vector<int>& device_of);

}  // namespace pf
