#include "placeflow/placer/auto_place.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>

#include "placeflow/graph/op_registry.h"
#include "placeflow/placer/schedule.h"

namespace pf {

StatusOr<PlacementAlgorithm> ParsePlacementAlgorithm(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s.rfind("m-", 0) == 0) s = s.substr(2);
  if (s == "topo") return PlacementAlgorithm::kTopo;
  if (s == "etf") return PlacementAlgorithm::kEtf;
  if (s == "sct") return PlacementAlgorithm::kSct;
  return errors::InvalidArgument("Unknown placement algorithm '", name, "' (m-topo, m-etf, m-sct)");
}

const char* PlacementAlgorithmName(PlacementAlgorithm algorithm) {
  switch (algorithm) {
    case PlacementAlgorithm::kTopo:
      return "m-topo";
    case PlacementAlgorithm::kEtf:
      return "m-etf";
    case PlacementAlgorithm::kSct:
      return "m-sct";
  }
  return "?";
}

namespace {

// A node that costs no more than this beyond the device's overhead may wait for its consumer.
constexpr double kCheapUs = 1.0;

bool BackEdge(const CostGraph& g, const CostGraph::Edge& e) {
  return g.nodes[e.src]->op_def().control_flow() == ControlFlowKind::kNextIteration;
}

// The memory bookkeeping and group decisions the three algorithms share.
class Planner {
 public:
  Planner(const CostGraph& g, const CostModel& cost, const PlacementProblem& p,
          const AutoPlaceOptions& o)
      : g_(g), cost_(cost), p_(p), o_(o) {
    const int d = cost.num_devices();
    budget_.assign(d, std::numeric_limits<int64_t>::max());
    for (int k = 0; k < d; ++k) {
      const int64_t m = cost.machine().devices[k].memory_bytes;
      if (m > 0)
        budget_[k] = static_cast<int64_t>(static_cast<double>(m) * (1 - o.memory_headroom));
    }
    used_.assign(d, 0);
    group_device_.assign(p.candidates.size(), -1);
    group_bytes_.assign(p.candidates.size(), 0);
    for (size_t i = 0; i < g.nodes.size(); ++i)
      group_bytes_[p.group_of[i]] += g.output_bytes[i] + g.persistent_bytes[i];
  }

  int GroupDevice(int node) const { return group_device_[p_.group_of[node]]; }
  bool Fits(int node, int device) const {
    return used_[device] + group_bytes_[p_.group_of[node]] <= budget_[device];
  }
  // The group's candidates with room for it, in preference order.
  std::vector<int> Open(int node) const {
    std::vector<int> out;
    for (int d : p_.candidates[p_.group_of[node]])
      if (Fits(node, d)) out.push_back(d);
    return out;
  }
  void Assign(int node, int device) {
    const int group = p_.group_of[node];
    group_device_[group] = device;
    used_[device] += group_bytes_[group];
  }
  // The device `node` must use or gets: its group's, else `want` when open, else the first open.
  int Take(int node, int want) {
    if (GroupDevice(node) >= 0) return GroupDevice(node);
    const std::vector<int> open = Open(node);
    if (open.empty()) {
      if (error_.ok()) error_ = NoRoom(node);
      return p_.candidates[p_.group_of[node]].at(0);
    }
    const int d = std::find(open.begin(), open.end(), want) != open.end() ? want : open[0];
    Assign(node, d);
    return d;
  }
  Status NoRoom(int node) const {
    std::string free;
    for (int d : p_.candidates[p_.group_of[node]]) {
      free += fmt::format("{}{}: {} of {} bytes", free.empty() ? "" : ", ",
                          cost_.machine().devices[d].name, budget_[d] - used_[d], budget_[d]);
    }
    return errors::ResourceExhausted(
        "Automatic placement (", PlacementAlgorithmName(o_.algorithm),
        "): no device has memory for ", g_.nodes[node]->name(), " (", g_.nodes[node]->op(),
        ") and its colocation group: ", group_bytes_[p_.group_of[node]],
        " bytes of outputs and variables; free after headroom: ", free);
  }
  const Status& error() const { return error_; }
  std::vector<int64_t> used() const { return used_; }

  // Unplaced, cheap, and reading nothing placed: it can wait for its first consumer.
  bool MayDefer(const ListScheduler& s, int node) const {
    if (GroupDevice(node) >= 0) return false;
    for (int e : g_.in_edges[node])
      if (!BackEdge(g_, g_.edges[e]) && !s.deferred(g_.edges[e].src)) return false;
    const int d = p_.candidates[p_.group_of[node]].at(0);
    return s.ComputeUs(node, d) <= cost_.machine().devices[d].op_overhead_us + kCheapUs;
  }

 private:
  const CostGraph& g_;
  const CostModel& cost_;
  const PlacementProblem& p_;
  const AutoPlaceOptions& o_;
  std::vector<int64_t> budget_, used_, group_bytes_;
  std::vector<int> group_device_;
  Status error_;
};

// Longest path to the end, in average-device µs: what to run first among the ready.
std::vector<double> BottomLevels(const CostGraph& g, const CostModel& cost) {
  std::vector<double> level(g.nodes.size(), 0);
  for (auto it = g.topo.rbegin(); it != g.topo.rend(); ++it) {
    double below = 0;
    for (int e : g.out_edges[*it])
      if (!BackEdge(g, g.edges[e])) below = std::max(below, level[g.edges[e].dst]);
    level[*it] = cost.ComputeUs(*g.nodes[*it], 0) + below;
  }
  return level;
}

// Each node's favourite parent (or -1): the producer of its largest input, when that tensor is
// also the largest the producer sends to any consumer (each parent has one favourite child).
std::vector<int> FavouriteParents(const CostGraph& g) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<int> parent(n, -1), child(n, -1);
  std::vector<int64_t> child_bytes(n, -1);
  for (int i = 0; i < n; ++i) {
    for (int e : g.out_edges[i]) {
      const CostGraph::Edge& edge = g.edges[e];
      if (edge.output >= 0 && !BackEdge(g, edge) && edge.bytes > child_bytes[i]) {
        child_bytes[i] = edge.bytes;
        child[i] = edge.dst;
      }
    }
  }
  for (int j = 0; j < n; ++j) {
    int64_t best = -1;
    int from = -1;
    for (int e : g.in_edges[j]) {
      const CostGraph::Edge& edge = g.edges[e];
      if (edge.output >= 0 && !BackEdge(g, edge) && edge.bytes > best)
        best = edge.bytes, from = edge.src;
    }
    if (from >= 0 && child[from] == j) parent[j] = from;
  }
  return parent;
}

// m-TOPO: the topological order in contiguous pieces of equal work, one per device of the
// preferred type (the first device's), skipping full devices.
std::vector<int> TopoWanted(const CostGraph& g, const CostModel& cost) {
  std::vector<int> devices;
  const std::string& type = cost.machine().devices[0].type;
  for (int d = 0; d < cost.num_devices(); ++d)
    if (cost.machine().devices[d].type == type) devices.push_back(d);
  double total = 0;
  for (int i : g.topo) total += cost.ComputeUs(*g.nodes[i], devices[0]);
  const double share = total / static_cast<double>(devices.size());
  std::vector<int> want(g.nodes.size(), devices[0]);
  double load = 0;
  size_t k = 0;
  for (int i : g.topo) {
    want[i] = devices[k];
    load += cost.ComputeUs(*g.nodes[i], devices[k]);
    if (load >= share * static_cast<double>(k + 1) && k + 1 < devices.size()) ++k;
  }
  return want;
}

}  // namespace

StatusOr<AutoPlan> AutoPlace(const CostGraph& graph, const CostModel& cost,
                             const PlacementProblem& problem, const AutoPlaceOptions& options) {
  const size_t n = graph.nodes.size();
  if (problem.group_of.size() != n)
    return errors::InvalidArgument("AutoPlace: a group for each of the ", n, " nodes");
  for (size_t i = 0; i < n; ++i) {
    if (problem.candidates.at(problem.group_of[i]).empty()) {
      return errors::InvalidArgument("Automatic placement: no candidate device for ",
                                     graph.nodes[i]->name());
    }
  }
  Planner planner(graph, cost, problem, options);
  ListScheduler sched(graph, cost, BottomLevels(graph, cost));
  const std::vector<int> topo_want =
      options.algorithm == PlacementAlgorithm::kTopo ? TopoWanted(graph, cost) : std::vector<int>{};
  const std::vector<int> favourite =
      options.algorithm == PlacementAlgorithm::kSct ? FavouriteParents(graph) : std::vector<int>{};
  auto choose = [&](int i) -> StatusOr<int> {
    if (planner.GroupDevice(i) >= 0) return planner.GroupDevice(i);
    if (options.algorithm == PlacementAlgorithm::kTopo) return planner.Take(i, topo_want[i]);
    if (planner.MayDefer(sched, i)) return ListScheduler::kDefer;
    if (!favourite.empty() && favourite[i] >= 0) {
      const int d = sched.device_of(favourite[i]);
      std::vector<int> open = planner.Open(i);
      if (d >= 0 && std::find(open.begin(), open.end(), d) != open.end()) return planner.Take(i, d);
    }
    int best = -1;
    double best_end = std::numeric_limits<double>::infinity();
    for (int d : planner.Open(i)) {
      const double end = sched.StartOn(i, d) + sched.ComputeUs(i, d);
      if (end < best_end) best_end = end, best = d;
    }
    return planner.Take(i, best);
  };
  auto resolve = [&](int i, int consumer_device) { return planner.Take(i, consumer_device); };
  PF_RETURN_IF_ERROR(sched.Run(choose, resolve));
  PF_RETURN_IF_ERROR(planner.error());
  AutoPlan plan;
  plan.device_of.resize(n);
  for (size_t i = 0; i < n; ++i) plan.device_of[i] = sched.device_of(static_cast<int>(i));
  plan.charged_bytes = planner.used();
  return plan;
}

}  // namespace pf
