#include "placeflow/placer/placer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "placeflow/core/logging.h"

namespace pf {
namespace {

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(int a, int b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<int> parent_;
};

std::string DebugGroup(const std::vector<const Node*>& members, const DeviceSet& devices,
                       const KernelRegistry& registry) {
  std::string s =
      "Colocation Debug Info:\nColocation group had the following types and supported devices:";
  for (const Node* n : members) {
    std::vector<std::string> types;
    for (const std::string& t : devices.DeviceTypes()) {
      if (registry.Supports(*n, t)) types.push_back(t);
    }
    s += fmt::format("\n  {}: {} (requested '{}', supported device types: [{}])", n->name(),
                     n->op(), n->requested_device(), fmt::join(types, ", "));
  }
  return s;
}

// A node that chose freely (no request, alone in its group) may move to where its data is
// used or made, as TensorFlow's placer does:
//  - a generator (no inputs, one output, one consumer) follows its consumer, so a constant
//    feeding a GPU op is made on that GPU instead of being copied there;
//  - a metadata op (Shape, Size, Rank) stays with its input: it needs only the input's shape.
void ApplyHeuristics(const std::vector<Node*>& nodes,
                     const std::unordered_map<const Node*, int>& index, UnionFind& uf,
                     const KernelRegistry& registry, Placement* placement) {
  std::vector<int> group_size(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) ++group_size[uf.Find(static_cast<int>(i))];
  auto free_choice = [&](const Node* n) {
    return n->requested_device().empty() && n->assigned_device().empty() &&
           group_size[uf.Find(index.at(n))] == 1;
  };
  auto move_to = [&](const Node* n, Device* d) {
    if (d != placement->device[n] && registry.Supports(*n, d->device_type()))
      placement->device[n] = d;
  };
  for (const Node* n : nodes) {
    if (!free_choice(n)) continue;
    if (n->num_inputs() == 0 && n->control_inputs().empty() && n->num_outputs() == 1 &&
        !n->IsStateful()) {
      const Node* consumer = nullptr;
      int consumers = 0;
      for (const Edge& e : n->out_edges()) {
        if (index.count(e.dst)) {
          ++consumers;
          consumer = e.dst;
        }
      }
      if (consumers == 1) move_to(n, placement->device[consumer]);
    }
  }
  for (const Node* n : nodes) {
    const std::string& op = n->op();
    if (free_choice(n) && (op == "Shape" || op == "Size" || op == "Rank") && n->num_inputs() == 1 &&
        index.count(n->input(0).node)) {
      move_to(n, placement->device[n->input(0).node]);
    }
  }
}

}  // namespace

std::string PlacementLogLine(const Node& node, const Device& device) {
  return fmt::format("{}: ({}): {}", node.name(), node.op(), device.name());
}

StatusOr<Placement> Place(const std::vector<Node*>& nodes, const DeviceSet& devices,
                          const PlacerOptions& options, const KernelRegistry& registry) {
  std::unordered_map<const Node*, int> index;
  std::unordered_map<std::string_view, int> by_name;
  for (size_t i = 0; i < nodes.size(); ++i) {
    index[nodes[i]] = static_cast<int>(i);
    by_name[nodes[i]->name()] = static_cast<int>(i);
  }
  UnionFind uf(static_cast<int>(nodes.size()));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    for (int k = 0; k < n->num_inputs(); ++k) {
      if (!n->IsRefInput(k)) continue;
      auto it = index.find(n->input(k).node);
      if (it != index.end()) uf.Union(static_cast<int>(i), it->second);
    }
    for (const std::string& target : n->colocation_group()) {
      auto it = by_name.find(target);
      if (it != by_name.end()) uf.Union(static_cast<int>(i), it->second);
    }
  }
  std::unordered_map<int, std::vector<const Node*>> groups;
  for (size_t i = 0; i < nodes.size(); ++i)
    groups[uf.Find(static_cast<int>(i))].push_back(nodes[i]);

  Placement placement;
  const std::vector<std::string> types = devices.DeviceTypes();
  for (auto& [root, members] : groups) {
    // Merge the requested (or already assigned) devices of the group.
    DeviceName spec;
    const Node* first_requester = nullptr;
    for (const Node* n : members) {
      const std::string& req =
          n->assigned_device().empty() ? n->requested_device() : n->assigned_device();
      if (req.empty()) continue;
      DeviceName parsed;
      if (!DeviceName::Parse(req, &parsed)) {
        return errors::InvalidArgument("Malformed device specification '", req, "' in node '",
                                       n->name(), "'");
      }
      Status merged = DeviceName::Merge(&spec, parsed, options.allow_soft_placement);
      if (!merged.ok()) {
        return errors::InvalidArgument("Cannot colocate nodes '", first_requester->name(),
                                       "' and '", n->name(), "': ", merged.message(), "\n",
                                       DebugGroup(members, devices, registry));
      }
      if (first_requester == nullptr) first_requester = n;
    }
    // Device types with a kernel for every member.
    std::vector<std::string> supported;
    for (const std::string& t : types) {
      bool all = std::all_of(members.begin(), members.end(),
                             [&](const Node* n) { return registry.Supports(*n, t); });
      if (all) supported.push_back(t);
    }
    if (supported.empty()) {
      for (const Node* n : members) {
        bool any = std::any_of(types.begin(), types.end(),
                               [&](const std::string& t) { return registry.Supports(*n, t); });
        if (!any) return registry.NotFoundError(*n, types);
      }
      return errors::InvalidArgument("Cannot colocate nodes of group '", members[0]->name(),
                                     "': no device type supports every op in it.\n",
                                     DebugGroup(members, devices, registry));
    }
    auto candidates = [&](const DeviceName& s) {
      std::vector<Device*> out;
      for (Device* d : devices.Matching(s)) {
        if (std::find(supported.begin(), supported.end(), d->device_type()) != supported.end())
          out.push_back(d);
      }
      return out;
    };
    std::vector<Device*> found = candidates(spec);
    if (found.empty()) {
      const std::string where = first_requester ? first_requester->name() : members[0]->name();
      if (!options.allow_soft_placement || options.strict_placement) {
        std::string reason =
            devices.Matching(spec).empty()
                ? fmt::format(
                      "no devices matching that specification are registered in this process; "
                      "available devices: {}",
                      devices.NamesForError())
                : fmt::format("no supported kernel for {} devices is available",
                              spec.has_type ? spec.type : std::string("the requested"));
        return errors::InvalidArgument("Cannot assign a device for operation ", where,
                                       ": Could not satisfy explicit device specification '",
                                       spec.ToString(), "' because ", reason, ".\n",
                                       DebugGroup(members, devices, registry));
      }
      // Soft placement: keep the type (any id), then give up the type too.
      DeviceName relaxed = spec;
      relaxed.has_id = false;
      found = candidates(relaxed);
      if (found.empty()) {
        relaxed.has_type = false;
        found = candidates(relaxed);
      }
      if (found.empty()) {
        return errors::InvalidArgument(
            "Cannot assign a device for operation ", where, ": no device satisfies '",
            spec.ToString(),
            "' even with soft placement; available devices: ", devices.NamesForError());
      }
      for (const Node* n : members) {
        std::string line = fmt::format("Soft placement: {} ({}) requested '{}', placed on {}",
                                       n->name(), n->op(), spec.ToString(), found[0]->name());
        PF_LOG_INFO("{}", line);
        placement.fallbacks.push_back(std::move(line));
      }
    }
    for (const Node* n : members) placement.device[n] = found[0];
  }
  ApplyHeuristics(nodes, index, uf, registry, &placement);
  return placement;
}

}  // namespace pf
