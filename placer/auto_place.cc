#include "placeflow/placer/auto_place.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <string>

#include "placeflow/graph/op_registry.h"
#include "placeflow/placer/anchor_units.h"
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

// A plan must be predicted this much faster than the rules' own placement to replace it: less
// is within the cost model's error.
constexpr double kMinGain = 0.05;
// Plans tried with smaller budgets when the simulated step goes over a device's memory.
constexpr int kMemoryAttempts = 6;

// The group decisions and memory checks the three algorithms share. Memory is what the
// schedule holds as it goes (ListScheduler::InUse): the variables of the groups placed on a
// device, and the outputs (and copies) not yet released by their last consumer.
class Planner {
 public:
  Planner(const CostGraph& g, const CostModel& cost, const PlacementProblem& p,
          const AutoPlaceOptions& o, const std::vector<int64_t>& budget, ListScheduler* sched)
      : g_(g), cost_(cost), p_(p), o_(o), sched_(sched), budget_(budget) {
    group_device_.assign(p.candidates.size(), -1);
    group_persistent_.assign(p.candidates.size(), 0);
    group_largest_.assign(p.candidates.size(), 0);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const int group = p.group_of[i];
      group_persistent_[group] += g.persistent_bytes[i];
      group_largest_[group] = std::max(group_largest_[group], g.output_bytes[i]);
    }
    committed_us_.assign(static_cast<size_t>(cost.num_devices()), 0.0);
    if (o.algorithm == PlacementAlgorithm::kSct) {
      FindAnchors();
      FindUnits();
    }
  }

  int GroupDevice(int node) const { return group_device_[p_.group_of[node]]; }
  // Room on `device` for the group's variables, its largest output and the node's inputs that
  // would be copied there, besides what is held.
  bool Fits(int node, int device) const {
    const int group = p_.group_of[node];
    int64_t copies = 0;
    for (int e : g_.in_edges[node]) {
      const CostGraph::Edge& edge = g_.edges[e];
      const int from = sched_->device_of(edge.src);
      if (edge.output >= 0 && from >= 0 && from != device &&
          !cost_.machine().SharesMemory(from, device))
        copies += edge.bytes;
    }
    return sched_->InUse(device) + group_persistent_[group] + group_largest_[group] + copies <=
           budget_[device];
  }
  // The group's candidates with room for it, in preference order.
  std::vector<int> Open(int node) const {
    std::vector<int> out;
    for (int d : p_.candidates[p_.group_of[node]])
      if (Fits(node, d)) out.push_back(d);
    return out;
  }
  // The device `node` must use or gets: its group's, else `want` when open, else the first open.
  int Take(int node, int want) {
    if (GroupDevice(node) >= 0) return GroupDevice(node);
    const int group = p_.group_of[node];
    if (p_.candidates[group].size() == 1) {  // nowhere else to go: the simulation checks it
      Place(group, p_.candidates[group][0]);
      return group_device_[group];
    }
    const std::vector<int> open = Open(node);
    if (open.empty()) {
      if (error_.ok()) error_ = NoRoom(node);
      return p_.candidates[p_.group_of[node]].at(0);
    }
    const int d = std::find(open.begin(), open.end(), want) != open.end() ? want : open[0];
    Place(group, d);
    return d;
  }
  Status NoRoom(int node) const {
    const int group = p_.group_of[node];
    std::string free;
    for (int d : p_.candidates[group]) {
      free +=
          fmt::format("{}{}: {} of {} bytes", free.empty() ? "" : ", ",
                      cost_.machine().devices[d].name, budget_[d] - sched_->InUse(d), budget_[d]);
    }
    return errors::ResourceExhausted("Automatic placement (", PlacementAlgorithmName(o_.algorithm),
                                     "): no device has memory for ", g_.nodes[node]->name(), " (",
                                     g_.nodes[node]->op(),
                                     ") and its colocation group: ", group_persistent_[group],
                                     " bytes of variables and outputs of up to ",
                                     group_largest_[group], " bytes; free after headroom: ", free);
  }
  const Status& error() const { return error_; }

  // The device of the variable (a group holding variables) `node` reads the most bytes of, when
  // placed and open to `node`; else -1.
  int ParameterDevice(int node) const {
    int device = -1;
    int64_t most = 0;
    for (int e : g_.in_edges[node]) {
      const CostGraph::Edge& edge = g_.edges[e];
      const int from = sched_->device_of(edge.src);
      if (edge.output < 0 || from < 0 || edge.bytes <= most) continue;
      if (group_persistent_[p_.group_of[edge.src]] == 0) continue;
      most = edge.bytes;
      device = from;
    }
    if (device < 0) return -1;
    const std::vector<int> open = Open(node);
    return std::find(open.begin(), open.end(), device) != open.end() ? device : -1;
  }

  // m-sct: the device of the node's anchor, when placed and open to the node; else -1.
  int AnchorDevice(int node) const {
    const int a = Anchor(p_.group_of[node]);
    if (a < 0 || group_device_[a] < 0) return -1;
    const std::vector<int> open = Open(node);
    return std::find(open.begin(), open.end(), group_device_[a]) != open.end() ? group_device_[a]
                                                                               : -1;
  }
  // m-sct's balance of parameters: for a node whose anchor (FindAnchors) is not placed yet, the
  // open device where the work already anchored there plus this anchor's would end first (least
  // committed work, in each device's own time); -1 when there is no such anchor. Without it each
  // layer of a deep network goes to whichever device finishes its first step first, and two layers
  // can share a device while another idles.
  // An anchor whose unit (SequentialUnits) is placed goes to the unit's device when open; the
  // first anchor of a unit commits the whole unit's work.
  int LeastCommitted(int node) const {
    const int a = Anchor(p_.group_of[node]);
    if (a < 0 || group_device_[a] >= 0) return -1;
    const std::vector<int> open = Open(node);
    const int u = unit_[a];
    if (unit_device_[u] >= 0 && std::find(open.begin(), open.end(), unit_device_[u]) != open.end())
      return unit_device_[u];
    int best = -1;
    double best_us = std::numeric_limits<double>::infinity();
    for (int d : open) {
      const double us = committed_us_[d] + unit_us_[u][d];
      if (us < best_us) best_us = us, best = d;
    }
    return best;
  }

  // Unplaced, cheap, and reading nothing placed: it can wait for its first consumer.
  bool MayDefer(int node) const {
    if (GroupDevice(node) >= 0) return false;
    for (int e : g_.in_edges[node])
      if (!IsLoopBackEdge(g_, g_.edges[e]) && !sched_->deferred(g_.edges[e].src)) return false;
    const int d = p_.candidates[p_.group_of[node]].at(0);
    return sched_->Cheap(node, d);
  }

 private:
  void Place(int group, int device) {
    group_device_[group] = device;
    sched_->Hold(device, group_persistent_[group]);
    if (follow_us_.empty() || follow_us_[group].empty()) return;
    const int u = unit_[group];
    if (unit_device_[u] < 0) {
      unit_device_[u] = device;
      committed_us_[device] += unit_us_[u][device];
    } else if (unit_device_[u] != device) {  // no room on the unit's device
      committed_us_[device] += follow_us_[group][device];
      committed_us_[unit_device_[u]] -= follow_us_[group][unit_device_[u]];
    }
  }
  // m-sct: each anchor's unit, and each unit's work per device (the sum of its anchors').
  void FindUnits() {
    std::vector<int> anchor_of(g_.nodes.size());
    for (size_t i = 0; i < g_.nodes.size(); ++i) anchor_of[i] = Anchor(p_.group_of[i]);
    unit_ = SequentialUnits(g_, cost_, p_, anchor_of);
    unit_device_.assign(p_.candidates.size(), -1);
    unit_us_.assign(p_.candidates.size(), std::vector<double>(committed_us_.size(), 0.0));
    for (size_t a = 0; a < follow_us_.size(); ++a)
      for (size_t d = 0; d < follow_us_[a].size(); ++d) unit_us_[unit_[a]][d] += follow_us_[a][d];
  }
  // A variable group is its own anchor; another group's is anchor_[group] (or -1).
  int Anchor(int group) const {
    if (follow_us_.empty()) return -1;
    return group_persistent_[group] > 0 && !follow_us_[group].empty() ? group : anchor_[group];
  }
  // Each group's anchor, and per variable group and device the time of every node anchored to
  // it (its own included). A node's anchor is its largest input's: the variable group itself
  // when that input is a variable's, else the anchor of the node it comes from; where inputs of
  // the largest size disagree (a layer's input joined to its state), the anchor of the consumer
  // of its largest output. So a layer's ops (and, in their groups, their gradients) belong to
  // the layer's weights.
  void FindAnchors() {
    std::vector<int> node_anchor(g_.nodes.size(), -1);
    auto anchor_of = [&](int src) {
      const int from = p_.group_of[src];
      return group_persistent_[from] > 0 ? from : node_anchor[src];
    };
    for (int i : g_.topo) {                                 // producers first
      if (group_persistent_[p_.group_of[i]] > 0) continue;  // a variable group anchors itself
      int64_t most = -1;
      bool tie = false;  // two largest inputs with different anchors
      for (int e : g_.in_edges[i]) {
        const CostGraph::Edge& edge = g_.edges[e];
        if (edge.output < 0 || IsLoopBackEdge(g_, edge) || edge.bytes < most) continue;
        const int a = anchor_of(edge.src);
        if (edge.bytes > most) {
          most = edge.bytes, node_anchor[i] = a, tie = false;
        } else if (a >= 0 && node_anchor[i] < 0) {
          node_anchor[i] = a;  // an input without an anchor (a constant) says nothing
        } else if (a >= 0 && a != node_anchor[i]) {
          tie = true;
        }
      }
      if (tie) node_anchor[i] = -1;
    }
    for (auto it = g_.topo.rbegin(); it != g_.topo.rend(); ++it) {  // consumers first
      if (node_anchor[*it] >= 0 || group_persistent_[p_.group_of[*it]] > 0) continue;
      int64_t most = -1;
      for (int e : g_.out_edges[*it]) {
        const CostGraph::Edge& edge = g_.edges[e];
        if (edge.output < 0 || IsLoopBackEdge(g_, edge) || edge.bytes <= most) continue;
        most = edge.bytes;
        node_anchor[*it] = node_anchor[edge.dst];
      }
    }
    anchor_.assign(p_.candidates.size(), -1);
    for (int i : g_.topo) {
      int& a = anchor_[p_.group_of[i]];
      if (a < 0) a = node_anchor[i];
    }
    follow_us_.assign(p_.candidates.size(), {});
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const int group = p_.group_of[i];
      const int a = group_persistent_[group] > 0 ? group : anchor_[group];
      if (a < 0) continue;
      std::vector<double>& f = follow_us_[a];
      if (f.empty()) f.assign(committed_us_.size(), 0.0);
      for (size_t d = 0; d < f.size(); ++d) f[d] += sched_->ComputeUs(static_cast<int>(i), d);
    }
  }

  const CostGraph& g_;
  const CostModel& cost_;
  const PlacementProblem& p_;
  const AutoPlaceOptions& o_;
  ListScheduler* sched_;
  std::vector<int64_t> budget_, group_persistent_, group_largest_;  // budget_: per device
  std::vector<int> group_device_;
  std::vector<int> anchor_;                     // m-sct: per group
  std::vector<std::vector<double>> follow_us_;  // m-sct: per variable group, per device
  std::vector<double> committed_us_;            // per device: its placed anchors' follow_us_
  std::vector<int> unit_, unit_device_;         // m-sct: per group
  std::vector<std::vector<double>> unit_us_;    // m-sct: per unit, per device
  Status error_;
};

// Longest path to the end, in average-device µs: what to run first among the ready.
std::vector<double> BottomLevels(const CostGraph& g, const CostModel& cost) {
  std::vector<double> level(g.nodes.size(), 0);
  for (auto it = g.topo.rbegin(); it != g.topo.rend(); ++it) {
    double below = 0;
    for (int e : g.out_edges[*it])
      if (!IsLoopBackEdge(g, g.edges[e])) below = std::max(below, level[g.edges[e].dst]);
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
      if (edge.output >= 0 && !IsLoopBackEdge(g, edge) && edge.bytes > child_bytes[i]) {
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
      if (edge.output >= 0 && !IsLoopBackEdge(g, edge) && edge.bytes > best)
        best = edge.bytes, from = edge.src;
    }
    if (from >= 0 && child[from] == j) parent[j] = from;
  }
  return parent;
}

// m-TOPO: the topological order in contiguous pieces of equal work, one per device of the
// preferred type (the rules' first choice for the first node: the GPUs when there are any).
std::vector<int> TopoWanted(const CostGraph& g, const CostModel& cost, const PlacementProblem& p) {
  const std::vector<int> devices = PreferredDevices(g, cost, p);
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

// One run of the algorithm within `budget` (bytes per device).
StatusOr<AutoPlan> PlanWithin(const CostGraph& graph, const CostModel& cost,
                              const PlacementProblem& problem, const AutoPlaceOptions& options,
                              const std::vector<int64_t>& budget) {
  ListScheduler sched(graph, cost, BottomLevels(graph, cost));
  Planner planner(graph, cost, problem, options, budget, &sched);
  const std::vector<int> topo_want = options.algorithm == PlacementAlgorithm::kTopo
                                         ? TopoWanted(graph, cost, problem)
                                         : std::vector<int>{};
  const std::vector<int> favourite =
      options.algorithm == PlacementAlgorithm::kSct ? FavouriteParents(graph) : std::vector<int>{};
  auto choose = [&](int i) -> StatusOr<int> {
    if (planner.GroupDevice(i) >= 0) return planner.GroupDevice(i);
    if (options.algorithm == PlacementAlgorithm::kTopo) return planner.Take(i, topo_want[i]);
    if (planner.MayDefer(i)) return ListScheduler::kDefer;
    if (!favourite.empty()) {
      if (const int d = planner.ParameterDevice(i); d >= 0) return planner.Take(i, d);
      if (const int d = planner.AnchorDevice(i); d >= 0) return planner.Take(i, d);
      if (const int d = planner.LeastCommitted(i); d >= 0) return planner.Take(i, d);
    }
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
  PF_RETURN_IF_ERROR(planner.error());  // a group no device had room for
  AutoPlan plan;
  plan.device_of.resize(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    plan.device_of[i] = sched.device_of(static_cast<int>(i));
  return plan;
}

// The rules' own placement (each group on its first candidate) when its simulated step fits
// every limit; else nullopt.
std::optional<AutoPlan> RulesPlan(const CostGraph& graph, const CostModel& cost,
                                  const PlacementProblem& problem,
                                  const std::vector<int64_t>& limit) {
  AutoPlan plan;
  plan.device_of.resize(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    plan.device_of[i] = problem.candidates[problem.group_of[i]][0];
  StatusOr<Schedule> s = Simulate(graph, cost, plan.device_of);
  if (!s.ok()) return std::nullopt;
  for (int k = 0; k < cost.num_devices(); ++k)
    if (s->peak_bytes[k] > limit[k]) return std::nullopt;
  plan.peak_bytes = s->peak_bytes;
  plan.step_us = s->step_us;
  plan.kept_rules = true;
  return plan;
}

// The rules' own choice (each group on its first candidate) replaces the plan unless the plan is
// predicted kMinGain faster, when it fits: a model too small to gain from more devices stays on
// one. With a profile, both are timed on the profiled step alone: the whole graph also holds
// the initializers, which a plan could overlap with the training step and so look faster.
void KeepRulesUnlessFaster(const CostGraph& graph, const CostModel& cost,
                           const PlacementProblem& problem, const std::vector<int64_t>& limit,
                           AutoPlan* plan) {
  std::optional<AutoPlan> rules = RulesPlan(graph, cost, problem, limit);
  if (!rules) return;
  double planned_us = plan->step_us, kept_us = rules->step_us;
  if (cost.options().profile && cost.options().profile->size() > 0) {
    CostModelOptions step_only = cost.options();
    step_only.only_profiled_step = true;
    const CostModel step_cost(cost.machine(), step_only);
    StatusOr<Schedule> planned = Simulate(graph, step_cost, plan->device_of);
    StatusOr<Schedule> kept = Simulate(graph, step_cost, rules->device_of);
    if (!planned.ok() || !kept.ok()) return;
    planned_us = planned->step_us;
    kept_us = kept->step_us;
  }
  if (kept_us * (1 - kMinGain) <= planned_us) *plan = std::move(*rules);
}

}  // namespace

StatusOr<AutoPlan> AutoPlace(const CostGraph& graph, const CostModel& cost,
                             const PlacementProblem& problem, const AutoPlaceOptions& options) {
  const size_t n = graph.nodes.size();
  const int d = cost.num_devices();
  if (problem.group_of.size() != n)
    return errors::InvalidArgument("AutoPlace: a group for each of the ", n, " nodes");
  for (size_t i = 0; i < n; ++i) {
    const int group = problem.group_of[i];
    if (group < 0 || static_cast<size_t>(group) >= problem.candidates.size() ||
        problem.candidates[group].empty()) {
      return errors::InvalidArgument("Automatic placement: no candidate device for ",
                                     graph.nodes[i]->name());
    }
    for (int c : problem.candidates[group]) {
      if (c < 0 || c >= d) {
        return errors::InvalidArgument("Automatic placement: candidate ", c, " of ",
                                       graph.nodes[i]->name(), " is not one of the ", d,
                                       " devices");
      }
    }
  }
  if (n == 0) return AutoPlan{{}, std::vector<int64_t>(d, 0)};
  std::vector<int64_t> limit(d, std::numeric_limits<int64_t>::max());
  for (int k = 0; k < d; ++k) {
    const int64_t m = cost.machine().devices[k].memory_bytes;
    if (m > 0)
      limit[k] = static_cast<int64_t>(static_cast<double>(m) * (1 - options.memory_headroom));
  }
  // The planner counts memory in the order it decides; the simulated step, in time. Where the
  // step holds more than a device's limit, plan again with that device's budget cut by the excess.
  std::vector<int64_t> budget = limit;
  Status failed;
  for (int attempt = 0; attempt < kMemoryAttempts; ++attempt) {
    StatusOr<AutoPlan> tried = PlanWithin(graph, cost, problem, options, budget);
    if (!tried.ok()) {
      failed = tried.status();
      break;
    }
    AutoPlan plan = std::move(*tried);
    PF_ASSIGN_OR_RETURN(Schedule s, Simulate(graph, cost, plan.device_of));
    bool over = false;
    for (int k = 0; k < d; ++k) {
      if (s.peak_bytes[k] <= limit[k]) continue;
      over = true;
      budget[k] = static_cast<int64_t>(static_cast<double>(budget[k]) * 0.95 *
                                       static_cast<double>(limit[k]) /
                                       static_cast<double>(s.peak_bytes[k]));
    }
    if (!over) {
      plan.peak_bytes = s.peak_bytes;
      plan.step_us = s.step_us;
      if (options.keep_rules_unless_faster)
        KeepRulesUnlessFaster(graph, cost, problem, limit, &plan);
      return plan;
    }
  }
  // No plan of the algorithm fits: the rules' placement still may.
  if (std::optional<AutoPlan> rules = RulesPlan(graph, cost, problem, limit)) return *rules;
  if (!failed.ok()) return failed;
  std::string held;
  for (int k = 0; k < d; ++k) {
    if (limit[k] < std::numeric_limits<int64_t>::max())
      held += fmt::format(" {}: limit {} bytes;", cost.machine().devices[k].name, limit[k]);
  }
  return errors::ResourceExhausted("Automatic placement (",
                                   PlacementAlgorithmName(options.algorithm),
                                   "): no plan found within the devices' memory after ",
                                   kMemoryAttempts, " tries (after headroom:", held, ")");
}

}  // namespace pf
