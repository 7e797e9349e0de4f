#include "tools/placement_rules.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "placeflow/placer/placer.h"
#include "tools/train_flags.h"

namespace pf::app {

std::vector<PlaceRule> ParsePlacementRules(const std::string& rules) {
  std::vector<PlaceRule> parsed;
  size_t start = 0;
  while (start < rules.size()) {
    size_t end = rules.find(',', start);
    std::string rule =
        rules.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? rules.size() : end + 1;
    size_t eq = rule.rfind('=');
    if (eq == std::string::npos)
      throw UsageError("bad --place rule '" + rule + "': expected regex=device");
    std::string device = rule.substr(eq + 1);
    auto name = DeviceName::TryParse(device);
    if (!name.ok())
      throw UsageError("bad device in --place rule '" + rule + "': " + name.status().message());
    try {
      parsed.push_back({rule, device, std::regex(rule.substr(0, eq))});
    } catch (const std::regex_error& e) {
      throw UsageError("bad regex in --place rule '" + rule + "': " + e.what());
    }
  }
  return parsed;
}

std::vector<std::string> ApplyPlacementRules(Graph& g, const std::vector<PlaceRule>& rules) {
  std::vector<bool> matched(rules.size(), false);
  for (Node* n : g.nodes()) {
    for (size_t i = 0; i < rules.size(); ++i) {
      if (!std::regex_search(n->name(), rules[i].re)) continue;
      n->set_requested_device(rules[i].device);
      matched[i] = true;
    }
  }
  std::vector<std::string> unmatched;
  for (size_t i = 0; i < rules.size(); ++i) {
    if (matched[i]) continue;
    unmatched.push_back(rules[i].text);
    std::string some;
    for (int k = 0; k < std::min(g.num_nodes(), 5); ++k)
      some += (k ? ", " : "") + g.nodes()[k]->name();
    std::printf("pf-train: warning: --place '%s' matches no node of the graph (%d nodes: %s%s)\n",
                rules[i].text.c_str(), g.num_nodes(), some.c_str(),
                g.num_nodes() > 5 ? ", ..." : "");
  }
  std::fflush(stdout);
  return unmatched;
}

namespace {

// "/cpu:1, /cpu:0" and the node count: where the placer put the nodes that asked for `device`.
std::string WhereSoftPlaced(const std::vector<Node*>& nodes, const StatusOr<Placement>& placed,
                            const std::string& device, int* count) {
  *count = 0;
  if (!placed.ok()) return "another device";
  // Requests are stored normalised ("/device:CPU:3" for "/cpu:3"): compare them parsed.
  const DeviceName wanted = DeviceName::TryParse(device).ValueOrThrow();
  std::map<std::string, int> by_device;
  for (const Node* n : nodes) {
    auto request = DeviceName::TryParse(n->requested_device());
    if (!request.ok() || !(request.value() == wanted)) continue;
    auto it = placed.value().device.find(n);
    if (it != placed.value().device.end()) ++by_device[it->second->name()];
  }
  std::string where;
  for (const auto& [d, c] : by_device) {
    where += (where.empty() ? "" : ", ") + d;
    *count += c;
  }
  return where;
}

}  // namespace

Fallbacks ReportFallbacks(const Graph& g, const Session& sess,
                          const std::vector<std::pair<std::string, std::string>>& named) {
  std::vector<std::pair<std::string, std::string>> missing;
  for (const auto& [what, device] : named) {
    if (sess.devices().Matching(DeviceName::TryParse(device).ValueOrThrow()).empty())
      missing.emplace_back(what, device);
  }
  Fallbacks fallbacks;
  if (missing.empty()) return fallbacks;
  PlacerOptions po;
  po.allow_soft_placement = true;
  std::vector<Node*> nodes(g.nodes().begin(), g.nodes().end());
  auto placed = Place(nodes, sess.devices(), po);
  for (const auto& [what, device] : missing) {
    int count = 0;
    const std::string where = WhereSoftPlaced(nodes, placed, device, &count);
    if (count > 0) fallbacks[device] = where;
    std::printf(
        "pf-train: %s: no device matches %s (devices: %s); soft placement puts its %d node(s) "
        "on %s\n",
        what.c_str(), device.c_str(), sess.devices().NamesForError().c_str(), count, where.c_str());
  }
  std::fflush(stdout);
  return fallbacks;
}

std::string NoteFallbacks(std::string summary, const Fallbacks& fallbacks) {
  for (const auto& [device, where] : fallbacks) {
    const std::string from = "on " + device, to = "on " + where + " (no " + device + ")";
    size_t at = 0;
    while ((at = summary.find(from, at)) != std::string::npos) {
      const size_t end = at + from.size();
      // Whole device names only: "/cpu:1" is not the start of "/cpu:10".
      if (end < summary.size() && std::isalnum(static_cast<unsigned char>(summary[end]))) {
        at = end;
        continue;
      }
      summary.replace(at, from.size(), to);
      at += to.size();
    }
  }
  return summary;
}

}  // namespace pf::app
