#include "placeflow/placer/schedule.h"

#include <algorithm>
#include <deque>
#include <queue>
#include <tuple>

#include "placeflow/graph/op_registry.h"

namespace pf {

bool IsLoopBackEdge(const CostGraph& graph, const CostGraph::Edge& edge) {
  return graph.nodes[edge.src]->op_def().control_flow() == ControlFlowKind::kNextIteration;
}

ListScheduler::ListScheduler(const CostGraph& graph, const CostModel& cost,
                             std::vector<double> priority)
    : g_(graph), cost_(cost), priority_(std::move(priority)) {
  const int n = static_cast<int>(g_.nodes.size()), d = cost_.num_devices();
  schedule_.nodes.resize(n);
  schedule_.busy_us.assign(d, 0);
  slot_free_.resize(d);
  for (int k = 0; k < d; ++k)
    slot_free_[k].assign(std::max(1, cost_.machine().devices[k].threads), 0);
  link_free_.assign(d, std::vector<double>(d, 0));
  ready_at_.assign(n, 0);
  deferred_.assign(n, false);
  if (priority_.empty()) priority_.assign(n, 0);
  in_use_.assign(d, 0);
  peak_in_use_.assign(d, 0);
  held_.resize(n);
  consumers_left_.assign(n, 0);
  for (const CostGraph::Edge& e : g_.edges)
    if (e.output >= 0 && !IsLoopBackEdge(g_, e)) ++consumers_left_[e.src];
}

void ListScheduler::Hold(int device, int64_t bytes) {
  in_use_[device] += bytes;
  peak_in_use_[device] = std::max(peak_in_use_[device], in_use_[device]);
}

void ListScheduler::Allocate(int node, int device, int64_t bytes) {
  if (bytes <= 0) return;
  Hold(device, bytes);
  held_[node].emplace_back(device, bytes);
}

// The inputs `node` read are released once their last consumer is scheduled; an output nobody
// reads, at once.
// A forwarder's input is read through it: its buffer is released with the forwarder's readers.
void ListScheduler::ConsumeInputs(int node) {
  std::vector<int> done;  // nodes whose readers are all scheduled
  for (int e : g_.in_edges[node]) {
    const CostGraph::Edge& edge = g_.edges[e];
    if (edge.output < 0 || IsLoopBackEdge(g_, edge) || g_.forwards_from[node] == edge.src) continue;
    if (--consumers_left_[edge.src] == 0) done.push_back(edge.src);
  }
  if (consumers_left_[node] == 0) done.push_back(node);
  while (!done.empty()) {
    const int src = done.back();
    done.pop_back();
    for (const auto& [device, bytes] : held_[src]) in_use_[device] -= bytes;
    held_[src].clear();
    const int from = g_.forwards_from[src];
    if (from >= 0 && --consumers_left_[from] == 0) done.push_back(from);
  }
}

double ListScheduler::ComputeUs(int node, int device) const {
  return cost_.ComputeUs(*g_.nodes[node], device);
}

bool ListScheduler::Cheap(int node, int device) const {
  return IsCheap(ComputeUs(node, device), cost_.machine().devices[device]);
}

double ListScheduler::Arrival(int edge, int device) const {
  const CostGraph::Edge& e = g_.edges[edge];
  const Schedule::NodeRun& src = schedule_.nodes[e.src];
  if (src.device < 0 || src.device == device) return src.end;  // unresolved: goes where it is read
  auto it = copies_.find({e.src, e.output, device});
  if (it != copies_.end()) return schedule_.transfers[it->second].end;
  const double start = std::max(src.end, link_free_[src.device][device]);
  return start + cost_.TransferUs(e.bytes, src.device, device);
}

double ListScheduler::StartOn(int node, int device) const {
  double t = 0;
  for (int e : g_.in_edges[node])
    if (!IsLoopBackEdge(g_, g_.edges[e])) t = std::max(t, Arrival(e, device));
  const std::vector<double>& slots = slot_free_[device];
  const bool all = cost_.Threads(*g_.nodes[node], device) > 1;
  const double free = all ? *std::max_element(slots.begin(), slots.end())
                          : *std::min_element(slots.begin(), slots.end());
  return std::max(t, free);
}

void ListScheduler::Commit(int node, int device) {
  for (int e : g_.in_edges[node]) {
    const CostGraph::Edge& edge = g_.edges[e];
    const Schedule::NodeRun& src = schedule_.nodes[edge.src];
    if (IsLoopBackEdge(g_, edge) || src.device < 0 || src.device == device) continue;
    auto key = std::make_tuple(edge.src, edge.output, device);
    if (copies_.count(key)) continue;
    Schedule::Transfer t{edge.src, edge.output, src.device, device, 0, 0, edge.bytes};
    t.start = std::max(src.end, link_free_[src.device][device]);
    t.end = t.start + cost_.TransferUs(edge.bytes, src.device, device);
    link_free_[src.device][device] = t.end;
    // A copy between devices sharing memory is the sender's buffer, held until its last reader.
    if (edge.output >= 0 && !cost_.machine().SharesMemory(src.device, device))
      Allocate(edge.src, device, edge.bytes);
    copies_[key] = static_cast<int>(schedule_.transfers.size());
    schedule_.transfers.push_back(t);
  }
  Schedule::NodeRun& run = schedule_.nodes[node];
  run.device = device;
  run.start = StartOn(node, device);
  const double us = ComputeUs(node, device);
  run.end = run.start + us;
  std::vector<double>& slots = slot_free_[device];
  if (cost_.Threads(*g_.nodes[node], device) > 1) {
    std::fill(slots.begin(), slots.end(), run.end);
  } else {
    auto it = std::min_element(slots.begin(), slots.end());
    run.slot = static_cast<int>(it - slots.begin());
    *it = run.end;
  }
  schedule_.busy_us[device] += us;
  Allocate(node, device, g_.output_bytes[node]);
  ConsumeInputs(node);
}

// Iterative (a chain of deferred nodes may be as long as the graph): each deferred input is
// placed before its own inputs are visited, and allocated after them, in post-order.
void ListScheduler::ResolveInputs(int node, int device, const Resolve& resolve) {
  struct Frame {
    int node, device;
    size_t next = 0;  // the next in-edge to look at
  };
  std::vector<Frame> stack{{node, device}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == g_.in_edges[f.node].size()) {
      const int done = f.node;
      stack.pop_back();
      if (done != node) {
        Allocate(done, schedule_.nodes[done].device, g_.output_bytes[done]);
        ConsumeInputs(done);
      }
      continue;
    }
    const int src = g_.edges[g_.in_edges[f.node][f.next++]].src;
    if (!deferred_[src] || schedule_.nodes[src].device >= 0) continue;
    schedule_.nodes[src].device = resolve(src, f.device);
    stack.push_back({src, schedule_.nodes[src].device});
  }
}

Status ListScheduler::Run(const Choose& choose, const Resolve& resolve) {
  const int n = static_cast<int>(g_.nodes.size());
  std::vector<int> pending(n, 0);
  for (const CostGraph::Edge& e : g_.edges)
    if (!IsLoopBackEdge(g_, e)) ++pending[e.dst];
  using Item = std::tuple<double, double, int>;  // ready time, -priority, node
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  std::deque<int> here;  // FollowExecutorThreads: what the thread that ran the last node runs next
  for (int i = 0; i < n; ++i) {
    if (pending[i] != 0) continue;
    // The executor seeds its inline queue with the step's cheap roots (variables, constants),
    // so they and the cheap nodes they make ready run before any expensive node starts.
    if (!fixed_device_.empty() && Cheap(i, fixed_device_[i]))
      here.push_back(i);
    else
      ready.emplace(0.0, -priority_[i], i);
  }
  std::vector<bool> seen(n, false);
  auto place = [&](int i) -> Status {
    seen[i] = true;
    PF_ASSIGN_OR_RETURN(int device, choose(i));
    if (device == kDefer) {
      deferred_[i] = true;
      return Status::OK();
    }
    ResolveInputs(i, device, resolve);
    Commit(i, device);
    return Status::OK();
  };
  auto enqueue = [&](int j) { ready.emplace(ready_at_[j], -priority_[j], j); };
  while (!here.empty() || !ready.empty()) {
    int i;
    if (!here.empty()) {
      i = here.front();
      here.pop_front();
    } else {
      i = std::get<2>(ready.top());
      ready.pop();
    }
    PF_RETURN_IF_ERROR(place(i));
    const int device = schedule_.nodes[i].device;
    int keep = -1;  // the last expensive successor made ready on this device
    for (int e : g_.out_edges[i]) {
      const CostGraph::Edge& edge = g_.edges[e];
      if (IsLoopBackEdge(g_, edge)) continue;
      const int j = edge.dst;
      ready_at_[j] = std::max(ready_at_[j], schedule_.nodes[i].end);
      if (--pending[j] != 0) continue;
      // Only a successor that can start as the node ends: one waiting for a transfer would make
      // the thread idle, and the executor's thread would run queued work meanwhile.
      if (fixed_device_.empty() || device < 0 || fixed_device_[j] != device ||
          StartOn(j, device) > schedule_.nodes[i].end) {
        enqueue(j);
      } else if (Cheap(j, device)) {
        here.push_back(j);
      } else {
        if (keep >= 0) enqueue(keep);
        keep = j;
      }
    }
    if (keep >= 0) {
      if (here.empty()) {
        here.push_back(keep);
      } else {
        enqueue(keep);
      }
    }
  }
  for (int i : g_.topo)  // in a cycle no loop explains: in graph order
    if (!seen[i]) PF_RETURN_IF_ERROR(place(i));
  for (int i : g_.topo) {
    if (deferred_[i] && schedule_.nodes[i].device < 0) {
      schedule_.nodes[i].device = resolve(i, -1);  // nobody placed reads it
      ResolveInputs(i, schedule_.nodes[i].device, resolve);
      Allocate(i, schedule_.nodes[i].device, g_.output_bytes[i]);
      ConsumeInputs(i);
    }
  }
  return Status::OK();
}

Schedule ListScheduler::Finish() {
  AccountMemory(g_, cost_.machine(), &schedule_);
  return std::move(schedule_);
}

void AccountMemory(const CostGraph& g, const MachineModel& machine, Schedule* schedule) {
  const int d = static_cast<int>(machine.devices.size());
  std::vector<double> free_at(g.nodes.size(), 0);
  std::map<std::tuple<int, int, int>, double> copy_free;
  for (size_t i = 0; i < g.nodes.size(); ++i) free_at[i] = schedule->nodes[i].end;
  std::vector<std::vector<int>> forwarders(g.nodes.size());  // who forwards each node's output
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.forwards_from[i] >= 0) forwarders[g.forwards_from[i]].push_back(static_cast<int>(i));
  for (const CostGraph::Edge& e : g.edges) {
    if (e.output < 0) continue;
    const Schedule::NodeRun& src = schedule->nodes[e.src];
    const Schedule::NodeRun& dst = schedule->nodes[e.dst];
    if (src.device == dst.device || machine.SharesMemory(src.device, dst.device)) {
      free_at[e.src] = std::max(free_at[e.src], dst.end);
    } else {
      double& f = copy_free[{e.src, e.output, dst.device}];
      f = std::max(f, dst.end);
    }
  }
  std::vector<std::vector<std::pair<double, int64_t>>> events(d);
  for (const Schedule::Transfer& t : schedule->transfers) {
    schedule->step_us = std::max(schedule->step_us, t.end);
    free_at[t.src] = std::max(free_at[t.src], t.end);
  }
  // A buffer read through forwarders lives as long as their readers: producers after them.
  for (auto it = g.topo.rbegin(); it != g.topo.rend(); ++it)
    for (int f : forwarders[*it]) free_at[*it] = std::max(free_at[*it], free_at[f]);
  for (const Schedule::Transfer& t : schedule->transfers) {
    if (t.output < 0 || machine.SharesMemory(t.from, t.to)) continue;
    const double f = std::max(t.end, copy_free[{t.src, t.output, t.to}]);
    events[t.to].emplace_back(t.start, t.bytes);
    events[t.to].emplace_back(f, -t.bytes);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Schedule::NodeRun& run = schedule->nodes[i];
    if (run.device < 0) continue;
    schedule->step_us = std::max(schedule->step_us, run.end);
    if (g.persistent_bytes[i] > 0) events[run.device].emplace_back(0.0, g.persistent_bytes[i]);
    if (g.output_bytes[i] > 0) {
      events[run.device].emplace_back(run.start, g.output_bytes[i]);
      events[run.device].emplace_back(free_at[i], -g.output_bytes[i]);
    }
  }
  schedule->peak_bytes.assign(d, 0);
  for (int k = 0; k < d; ++k) {
    std::sort(events[k].begin(), events[k].end());  // at one time, frees (negative) first
    int64_t now = 0;
    for (const auto& [t, delta] : events[k]) {
      now += delta;
      schedule->peak_bytes[k] = std::max(schedule->peak_bytes[k], now);
    }
  }
}

StatusOr<Schedule> Simulate(const CostGraph& graph, const CostModel& cost,
                            const std::vector<int>& device_of) {
  if (device_of.size() != graph.nodes.size())
    return errors::InvalidArgument("Simulate: a device for each of the ", graph.nodes.size(),
                                   " nodes");
  for (size_t i = 0; i < device_of.size(); ++i) {
    if (device_of[i] < 0 || device_of[i] >= cost.num_devices()) {
      return errors::InvalidArgument("Simulate: node ", graph.nodes[i]->name(), " has device ",
                                     device_of[i], " of ", cost.num_devices());
    }
  }
  ListScheduler s(graph, cost);
  s.FollowExecutorThreads(device_of);
  PF_RETURN_IF_ERROR(s.Run([&](int i) -> StatusOr<int> { return device_of[i]; },
                           [&](int i, int) { return device_of[i]; }));
  return s.Finish();
}

}  // namespace pf
