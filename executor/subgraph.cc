#include "placeflow/executor/subgraph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_set>

#include "placeflow/core/logging.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/graph/op_registry.h"

namespace pf {

// A collective whose participants are not all in this call would wait forever: every
// participant of a group must run (e.g. fetch the update of every tower, not one tower's).
Status CheckCollectivesComplete(const std::vector<Node*>& nodes) {
  std::map<std::string, std::pair<int64_t, std::vector<const Node*>>> groups;
  for (const Node* n : nodes) {
    if (!n->HasAttr("group_key") || !n->HasAttr("group_size")) continue;
    auto& [size, members] = groups[n->attr<std::string>("group_key")];
    size = n->attr<int64_t>("group_size");
    members.push_back(n);
  }
  for (const auto& [key, group] : groups) {
    const auto& [size, members] = group;
    if (static_cast<int64_t>(members.size()) == size) continue;
    std::string names;
    for (const Node* n : members) names += (names.empty() ? "" : ", ") + n->name();
    return errors::InvalidArgument(
        "Collective '", key, "' needs ", size, " participants but this call runs ", members.size(),
        " of them (", names, "): run an op that depends on every tower, such as the training op");
  }
  return Status::OK();
}

// The variable whose buffer `o` may view (later steps update it in place): a variable, an op
// that updates one in place (it returns its reference input 0, as TensorFlow's Ref(T) outputs
// do), or either seen through ops that forward their input's buffer.
const Node* AliasedVariable(const Output& o) {
  // A loop, not recursion: a chain of 100,000 Identity nodes must not overflow the stack.
  for (const Node* n = o.node;; n = n->input(0).node) {
    if (n->op_def().is_variable()) return n;
    if (n->num_inputs() == 0 || !(n->IsRefInput(0) || n->op_def().forwards_input())) return nullptr;
  }
}

// Nodes needed for the fetches and targets, not walking into fed tensors.
std::vector<Node*> Prune(const std::vector<Output>& feeds, const std::vector<Output>& fetches,
                         const std::vector<Operation>& targets) {
  std::set<Output> fed(feeds.begin(), feeds.end());
  std::unordered_set<const Node*> seen;
  std::vector<Node*> stack, order;
  auto visit = [&](Node* n) {
    if (seen.insert(n).second) stack.push_back(n);
  };
  for (const Output& f : fetches) {
    if (!fed.count(f)) visit(f.node);
  }
  for (const Operation& t : targets) visit(t.node);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (const Output& in : n->inputs()) {
      if (!fed.count(in)) visit(in.node);
    }
    for (Node* c : n->control_inputs()) visit(c);
  }
  return order;
}

// The cache key of a call: node ids of feeds, fetches and targets.
std::string SignatureKey(const FeedDict& feeds, const std::vector<Output>& fetches,
                         const std::vector<Operation>& targets) {
  std::string key;
  for (const auto& [o, t] : feeds)
    fmt::format_to(std::back_inserter(key), "{}:{},", o.node->id(), o.index);
  key += '|';
  for (const Output& o : fetches)
    fmt::format_to(std::back_inserter(key), "{}:{},", o.node->id(), o.index);
  key += '|';
  for (const Operation& t : targets) fmt::format_to(std::back_inserter(key), "{},", t.node->id());
  return key;
}

// Whether a feed entering a partition on `d` through `arg` is used in host memory: always on a
// device whose memory is the host's, else only when every consumer reads it as HostMemory.
bool FeedStaysOnHost(const Node& arg, const Device& d) {
  if (d.uses_host_memory()) return true;
  for (const Edge& e : arg.out_edges()) {
    if (e.IsControl()) continue;
    std::vector<bool> host_in, host_out;
    KernelRegistry::Global()->MemoryTypes(*e.dst, d.device_type(), &host_in, &host_out);
    if (!host_in[e.dst_input]) return false;
  }
  return true;
}

std::string DeviceMappingText(const DeviceSet& devices) {
  std::string text = "Device mapping:\n";
  for (const Device* d : devices.devices())
    text += fmt::format("{} -> {}\n", d->name(), d->Description());
  return text;
}

void LogDeviceMapping(const DeviceSet& devices) {
  std::string text = DeviceMappingText(devices);
  text.pop_back();  // the logger ends the record
  LogRequested(text);
}

PlacementLog PlacementLogText(const std::vector<Node*>& nodes, const Placement& placement,
                              int send_recv_pairs,
                              const std::map<std::string, std::string>& logged) {
  PlacementLog log;
  std::map<std::string, int> per_device;
  std::vector<const Node*> by_id(nodes.begin(), nodes.end());
  std::sort(by_id.begin(), by_id.end(),
            [](const Node* a, const Node* b) { return a->id() < b->id(); });
  for (const Node* n : by_id) {
    const Device* d = placement.device.at(n);
    // One process: "CPU:0"; a cluster: the full name, as CPU:0 is on every task.
    ++per_device[d->parsed_name().job == "localhost" ? d->parsed_name().LocalName() : d->name()];
    if (logged.count(n->name())) continue;
    log.node_lines += PlacementLogLine(*n, *d);
    // Automatic placement: who chose (the algorithm, or the rules when one device was left).
    if (!placement.algorithm.empty())
      log.node_lines += placement.fixed.count(n) || placement.kept_rules
                            ? " [rules]"
                            : " [" + placement.algorithm + "]";
    log.node_lines += "\n";
  }
  std::vector<std::string> counts;
  for (const auto& [dev, count] : per_device)
    counts.push_back(fmt::format("{} nodes on {}", count, dev));
  log.summary = fmt::format("Placement summary: {}, {} Send/Recv pairs, {} soft fallbacks",
                            fmt::join(counts, ", "), send_recv_pairs, placement.fallbacks.size());
  for (const std::string& line : placement.fallbacks) log.summary += "\n" + line;
  if (!placement.algorithm.empty()) {
    std::vector<std::string> peaks;
    for (const auto& [dev, bytes] : placement.predicted_peak_bytes)
      peaks.push_back(fmt::format("{} {:.1f} MB", ShortDeviceName(dev), bytes / 1e6));
    log.summary += fmt::format(
        "\nAutomatic placement ({}{}): {} of {} nodes chosen by it, planned in {:.1f} ms; "
        "predicted "
        "step {:.3f} ms, peak memory {}",
        placement.algorithm,
        placement.kept_rules ? ", which kept the rules' placement: its plan was not 5% faster" : "",
        placement.kept_rules ? 0 : nodes.size() - placement.fixed.size(), nodes.size(),
        placement.planning_ms, placement.predicted_step_us / 1e3, fmt::join(peaks, ", "));
  }
  return log;
}

void EmitPlacementLog(const PlacementLog& log) {
  if (!log.node_lines.empty()) {
    std::fputs(log.node_lines.c_str(), stdout);
    std::fflush(stdout);
  }
  LogRequested(log.summary);
}

}  // namespace pf
