#include "placeflow/placer/anchor_units.h"

#include <algorithm>
#include <string>
#include <utility>

#include "placeflow/placer/schedule.h"

namespace pf {

namespace {

using Spans = std::vector<std::pair<double, double>>;  // sorted, disjoint intervals, µs

Spans Coalesce(Spans s) {  // sorts, and joins overlapping and touching intervals
  std::sort(s.begin(), s.end());
  Spans out;
  for (const auto& iv : s) {
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}
double Length(const Spans& s) {
  double t = 0;
  for (const auto& [a, b] : s) t += b - a;
  return t;
}
double Overlap(const Spans& x, const Spans& y) {
  double t = 0;
  for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    t += std::max(0.0, std::min(x[i].second, y[j].second) - std::max(x[i].first, y[j].first));
    x[i].second < y[j].second ? ++i : ++j;
  }
  return t;
}

// When each anchor's expensive nodes would run with unlimited devices: each node as soon as its
// inputs are done, at its time on its group's first candidate. Only the nodes of the profiled
// step count when there is a profile; else all but the initializers (Assigns and what feeds
// only them: ready at once, they would make every anchor overlap). The parallelism (the
// counted work over the time it takes) says how many devices the graph can keep busy.
struct AnchorTimes {
  std::vector<Spans> spans;  // per anchor
  std::vector<double> work;  // per anchor: its counted nodes' time
  double total = 0;          // every counted node's time
  double parallelism = 0;
};
AnchorTimes TimeAnchors(const CostGraph& g, const CostModel& cost, const PlacementProblem& p,
                        const std::vector<int>& anchor_of) {
  const size_t n = g.nodes.size();
  const Profile* profile = cost.options().profile.get();
  std::vector<bool> initializer(n, false);
  for (auto it = g.topo.rbegin(); it != g.topo.rend(); ++it) {
    bool read = false, only_initializers = true;
    for (int e : g.out_edges[*it]) {
      if (g.edges[e].output < 0 || IsLoopBackEdge(g, g.edges[e])) continue;
      read = true;
      only_initializers = only_initializers && initializer[g.edges[e].dst];
    }
    initializer[*it] = g.nodes[*it]->op() == "Assign" || (read && only_initializers);
  }
  std::vector<double> end(n, 0);
  AnchorTimes t;
  t.spans.resize(p.candidates.size());
  t.work.assign(p.candidates.size(), 0.0);
  double last = 0;
  for (int i : g.topo) {
    double start = 0;
    for (int e : g.in_edges[i])
      if (!IsLoopBackEdge(g, g.edges[e])) start = std::max(start, end[g.edges[e].src]);
    const int d = p.candidates[p.group_of[i]][0];
    const double us = cost.ComputeUs(*g.nodes[i], d);
    end[i] = start + us;
    const bool counted = profile == nullptr || profile->size() == 0
                             ? !initializer[i]
                             : profile->Has(g.nodes[i]->name());
    if (!counted || IsCheap(us, cost.machine().devices[d])) continue;
    t.total += us;
    last = std::max(last, end[i]);
    if (anchor_of[i] < 0) continue;
    t.spans[anchor_of[i]].emplace_back(start, end[i]);
    t.work[anchor_of[i]] += us;
  }
  t.parallelism = last > 0 ? t.total / last : 0;
  for (Spans& s : t.spans) s = Coalesce(std::move(s));
  return t;
}

}  // namespace

std::vector<int> PreferredDevices(const CostGraph& g, const CostModel& cost,
                                  const PlacementProblem& p) {
  std::vector<int> devices;
  const std::string& type = cost.machine().devices[p.candidates[p.group_of[g.topo[0]]][0]].type;
  for (int d = 0; d < cost.num_devices(); ++d)
    if (cost.machine().devices[d].type == type) devices.push_back(d);
  return devices;
}

std::vector<int> SequentialUnits(const CostGraph& g, const CostModel& cost,
                                 const PlacementProblem& p, const std::vector<int>& anchor_of) {
  AnchorTimes t = TimeAnchors(g, cost, p, anchor_of);
  std::vector<Spans>& spans = t.spans;
  const int devices = static_cast<int>(PreferredDevices(g, cost, p).size());
  const bool parallel = t.parallelism >= devices;
  const double share = t.total / std::max(1, devices);  // a device's part of the work
  std::vector<int> from(p.candidates.size(), -1);       // each anchor's largest source anchor
  std::vector<int64_t> most(p.candidates.size(), 0);
  for (const CostGraph::Edge& e : g.edges) {
    const int a = anchor_of[e.src], b = anchor_of[e.dst];
    if (e.output < 0 || IsLoopBackEdge(g, e) || a < 0 || b < 0 || a == b) continue;
    if (e.bytes > most[b]) most[b] = e.bytes, from[b] = a;
  }
  std::vector<int> unit(p.candidates.size());
  for (size_t k = 0; k < unit.size(); ++k) unit[k] = static_cast<int>(k);
  auto find = [&](int k) {
    while (unit[k] != k) k = unit[k] = unit[unit[k]];
    return k;
  };
  std::vector<bool> seen(p.candidates.size(), false);
  for (int i : g.topo) {  // anchors in the order their first node runs
    const int b = anchor_of[i];
    if (b < 0 || seen[b] || from[b] < 0) continue;
    seen[b] = true;
    const int ua = find(from[b]), ub = find(b);
    if (ua == ub || spans[ua].empty() || spans[ub].empty()) continue;
    const double overlap =
        Overlap(spans[ua], spans[ub]) / std::min(Length(spans[ua]), Length(spans[ub]));
    const bool within_share = t.work[ua] + t.work[ub] <= share * 1.001;
    if (overlap >= 0.25 && !(parallel && overlap < 0.75 && within_share)) continue;
    unit[ub] = ua;
    t.work[ua] += t.work[ub];
    spans[ua].insert(spans[ua].end(), spans[ub].begin(), spans[ub].end());
    spans[ua] = Coalesce(std::move(spans[ua]));
    spans[ub].clear();
  }
  for (size_t k = 0; k < unit.size(); ++k) unit[k] = find(static_cast<int>(k));
  return unit;
}

}  // namespace pf
