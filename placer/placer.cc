#include "placeflow/placer/placer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "placeflow/core/logging.h"
#include "placeflow/graph/op_registry.h"

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

// A colocation group: nodes placed together, members in node order.
struct Group {
  std::vector<const Node*> members;
  DeviceName request;  // the members' requests, merged
  const Node* first_requester = nullptr;
  std::vector<std::string> supported;  // device types with a kernel for every member
  Device* device = nullptr;
  bool fell_back = false;  // soft placement gave up part of `request`
};

// Place's steps, in order: form the groups, place each group (merge its requests, find the
// device types that can run all of it, pick a candidate or fall back), let free nodes follow
// their data, list the fallbacks. Groups are visited in the order of their first member and
// fallbacks listed in node order, so errors and logs follow the order of `nodes`.
class Placer {
 public:
  Placer(const std::vector<Node*>& nodes, const DeviceSet& devices, const PlacerOptions& options,
         const KernelRegistry& registry)
      : nodes_(nodes),
        devices_(devices),
        options_(options),
        registry_(registry),
        types_(devices.DeviceTypes()) {}

  StatusOr<Placement> Run() {
    FormGroups();
    for (Group& g : groups_) PF_RETURN_IF_ERROR(PlaceGroup(g));
    Placement placement;
    for (size_t i = 0; i < nodes_.size(); ++i) placement.device[nodes_[i]] = GroupOf(i).device;
    ApplyHeuristics(&placement);
    ListFallbacks(&placement);
    return placement;
  }

 private:
  Group& GroupOf(size_t i) { return groups_[group_of_[i]]; }

  // Nodes joined by a reference input (a variable and its Assign) or by ColocateWith.
  void FormGroups() {
    std::unordered_map<std::string_view, int> by_name;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      index_[nodes_[i]] = static_cast<int>(i);
      by_name[nodes_[i]->name()] = static_cast<int>(i);
    }
    UnionFind uf(static_cast<int>(nodes_.size()));
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node* n = nodes_[i];
      for (int k = 0; k < n->num_inputs(); ++k) {
        if (!n->IsRefInput(k)) continue;
        auto it = index_.find(n->input(k).node);
        if (it != index_.end()) uf.Union(static_cast<int>(i), it->second);
      }
      for (const std::string& target : n->colocation_group()) {
        auto it = by_name.find(target);
        if (it != by_name.end()) uf.Union(static_cast<int>(i), it->second);
      }
    }
    std::vector<int> group_of_root(nodes_.size(), -1);
    group_of_.resize(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      int& group = group_of_root[uf.Find(static_cast<int>(i))];
      if (group < 0) {
        group = static_cast<int>(groups_.size());
        groups_.emplace_back();
      }
      group_of_[i] = group;
      groups_[group].members.push_back(nodes_[i]);
    }
  }

  Status PlaceGroup(Group& g) {
    PF_RETURN_IF_ERROR(MergeRequests(g));
    PF_RETURN_IF_ERROR(FindSupportedTypes(g));
    std::vector<Device*> found = Candidates(g, g.request);
    if (found.empty()) {
      PF_ASSIGN_OR_RETURN(found, SoftFallback(g));
    }
    g.device = found[0];
    return Status::OK();
  }

  // Merges the requested (or already assigned) devices of the group.
  Status MergeRequests(Group& g) {
    for (const Node* n : g.members) {
      const std::string& req =
          n->assigned_device().empty() ? n->requested_device() : n->assigned_device();
      if (req.empty()) continue;
      DeviceName parsed;
      if (!DeviceName::Parse(req, &parsed)) {
        return errors::InvalidArgument("Malformed device specification '", req, "' in node '",
                                       n->name(), "'");
      }
      Status merged = DeviceName::Merge(&g.request, parsed, options_.allow_soft_placement);
      if (!merged.ok()) {
        return errors::InvalidArgument("Cannot colocate nodes '", g.first_requester->name(),
                                       "' and '", n->name(), "': ", merged.message(), "\n",
                                       DebugGroup(g.members, devices_, registry_));
      }
      if (g.first_requester == nullptr) g.first_requester = n;
    }
    if (g.request.has_job) return Status::OK();  // "/job:ps": any of that job's tasks
    DeviceName task;                             // only the task fields of the default
    task.has_job = options_.default_task.has_job;
    task.job = options_.default_task.job;
    task.has_replica = options_.default_task.has_replica;
    task.replica = options_.default_task.replica;
    task.has_task = options_.default_task.has_task;
    task.task = options_.default_task.task;
    DeviceName::MergeUnset(&g.request, task);
    return Status::OK();
  }

  Status FindSupportedTypes(Group& g) {
    for (const std::string& t : types_) {
      bool all = std::all_of(g.members.begin(), g.members.end(),
                             [&](const Node* n) { return registry_.Supports(*n, t); });
      if (all) g.supported.push_back(t);
    }
    if (!g.supported.empty()) return Status::OK();
    for (const Node* n : g.members) {
      bool any = std::any_of(types_.begin(), types_.end(),
                             [&](const std::string& t) { return registry_.Supports(*n, t); });
      if (!any) return registry_.NotFoundError(*n, types_);
    }
    return errors::InvalidArgument("Cannot colocate nodes of group '", g.members[0]->name(),
                                   "': no device type supports every op in it.\n",
                                   DebugGroup(g.members, devices_, registry_));
  }

  // Devices matching `spec` with a supported type, best priority first.
  std::vector<Device*> Candidates(const Group& g, const DeviceName& spec) const {
    std::vector<Device*> out;
    for (Device* d : devices_.Matching(spec)) {
      if (std::find(g.supported.begin(), g.supported.end(), d->device_type()) != g.supported.end())
        out.push_back(d);
    }
    return out;
  }

  // No candidate meets the request: an error, or with soft placement the same type on any id,
  // then any type.
  StatusOr<std::vector<Device*>> SoftFallback(Group& g) const {
    const DeviceName& spec = g.request;
    const std::string where = g.first_requester ? g.first_requester->name() : g.members[0]->name();
    if (!options_.allow_soft_placement || options_.strict_placement) {
      std::string reason =
          devices_.Matching(spec).empty()
              ? fmt::format(
                    "no devices matching that specification are registered in this process; "
                    "available devices: {}",
                    devices_.NamesForError())
              : fmt::format("no supported kernel for {} devices is available",
                            spec.has_type ? spec.type : std::string("the requested"));
      return errors::InvalidArgument("Cannot assign a device for operation ", where,
                                     ": Could not satisfy explicit device specification '",
                                     spec.ToString(), "' because ", reason, ".\n",
                                     DebugGroup(g.members, devices_, registry_));
    }
    DeviceName relaxed = spec;
    relaxed.has_id = false;
    std::vector<Device*> found = Candidates(g, relaxed);
    if (found.empty()) {
      relaxed.has_type = false;
      found = Candidates(g, relaxed);
    }
    if (found.empty()) {
      return errors::InvalidArgument(
          "Cannot assign a device for operation ", where, ": no device satisfies '",
          spec.ToString(),
          "' even with soft placement; available devices: ", devices_.NamesForError());
    }
    g.fell_back = true;
    return found;
  }

  // A node that chose freely (no request, alone in its group) may move to where its data is
  // used or made, as TensorFlow's placer does:
  //  - a generator (no inputs, one output, one consumer) follows its consumer, so a constant
  //    feeding a GPU op is made on that GPU instead of being copied there;
  //  - a metadata op (OpDef::is_metadata, e.g. Shape) stays with its input: it needs
  //    only the input's shape.
  void ApplyHeuristics(Placement* placement) {
    auto free_choice = [&](const Node* n) {
      return n->requested_device().empty() && n->assigned_device().empty() &&
             GroupOf(index_.at(n)).members.size() == 1;
    };
    auto move_to = [&](const Node* n, Device* d) {
      if (d != placement->device[n] && registry_.Supports(*n, d->device_type()))
        placement->device[n] = d;
    };
    for (const Node* n : nodes_) {
      if (!free_choice(n)) continue;
      if (n->num_inputs() == 0 && n->control_inputs().empty() && n->num_outputs() == 1 &&
          !n->IsStateful()) {
        const Node* consumer = nullptr;
        int consumers = 0;
        for (const Edge& e : n->out_edges()) {
          if (index_.count(e.dst)) {
            ++consumers;
            consumer = e.dst;
          }
        }
        if (consumers == 1) move_to(n, placement->device[consumer]);
      }
    }
    for (const Node* n : nodes_) {
      if (free_choice(n) && n->op_def().is_metadata() && n->num_inputs() == 1 &&
          index_.count(n->input(0).node)) {
        move_to(n, placement->device[n->input(0).node]);
      }
    }
  }

  // One line per member of a group that fell back, in node order, each logged at info level.
  void ListFallbacks(Placement* placement) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Group& g = GroupOf(i);
      if (!g.fell_back) continue;
      const Node* n = nodes_[i];
      std::string line = fmt::format("Soft placement: {} ({}) requested '{}', placed on {}",
                                     n->name(), n->op(), g.request.ToString(), g.device->name());
      PF_LOG_INFO("{}", line);
      placement->fallbacks.push_back(std::move(line));
    }
  }

  const std::vector<Node*>& nodes_;
  const DeviceSet& devices_;
  const PlacerOptions& options_;
  const KernelRegistry& registry_;
  const std::vector<std::string> types_;
  std::unordered_map<const Node*, int> index_;  // position in nodes_
  std::vector<int> group_of_;                   // per node: its group's index in groups_
  std::vector<Group> groups_;                   // in the order of their first member
};

}  // namespace

std::string PlacementLogLine(const Node& node, const Device& device) {
  return fmt::format("{}: ({}): {}", node.name(), node.op(), device.name());
}

StatusOr<Placement> Place(const std::vector<Node*>& nodes, const DeviceSet& devices,
                          const PlacerOptions& options, const KernelRegistry& registry) {
  return Placer(nodes, devices, options, registry).Run();
}

}  // namespace pf
