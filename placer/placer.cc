#include "placeflow/placer/placer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "placeflow/core/logging.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/placer/placer_messages.h"
#include "placeflow/placer/schedule.h"

namespace pf {
namespace {

using placer_internal::GroupInfo;
using placer_internal::TypePriorities;

bool HasPriorities(const TypePriorities& types) {
  return std::any_of(types.begin(), types.end(), [](const auto& t) { return t.second != 0; });
}

// The device types in both lists (empty when none), ordered with priorities as
// TensorFlow merges them: a side with kernel priorities wins over one without; two sides that
// order the common types differently fall back to the device types' own order.
TypePriorities IntersectTypes(const TypePriorities& a, const TypePriorities& b,
                              const std::vector<std::string>& device_order) {
  auto common = [](const TypePriorities& from, const TypePriorities& other) {
    TypePriorities out;
    for (const auto& t : from) {
      if (std::any_of(other.begin(), other.end(),
                      [&](const auto& o) { return o.first == t.first; }))
        out.push_back(t);
    }
    return out;  // still ordered by priority, then device order
  };
  TypePriorities in_a = common(a, b), in_b = common(b, a);
  const bool a_prio = HasPriorities(in_a), b_prio = HasPriorities(in_b);
  if (!b_prio) return in_a;
  if (!a_prio) return in_b;
  auto types_of = [](const TypePriorities& v) {
    std::vector<std::string> out;
    for (const auto& t : v) out.push_back(t.first);
    return out;
  };
  if (types_of(in_a) == types_of(in_b)) return in_a;
  TypePriorities plain;
  for (const std::string& t : device_order) {
    if (std::any_of(in_a.begin(), in_a.end(), [&](const auto& x) { return x.first == t; }))
      plain.emplace_back(t, 0);
  }
  return plain;
}

// What a colocation group (a union-find root) knows: merged requests and assigned devices, and
// the device types every member has a kernel for.
struct Member {
  DeviceName requested;  // softened on conflict where soft placement allows
  DeviceName assigned;   // never softened: a node that arrives placed stays there
  TypePriorities supported;
};

// A group once formed: members in node order; `spec` is what its device must match.
struct Group {
  GroupInfo info;
  DeviceName spec;  // requested, overridden by assigned, with the default task filled in
  Device* device = nullptr;
  std::vector<Device*> candidates;  // where the rules allow it, best first
  bool fell_back = false;           // soft placement gave up part of `spec`
};

// Place's steps, in TensorFlow's order: check every node (kernels, assigned devices, requests),
// colocate along reference edges, then along explicit colocation, place each group (pick a
// candidate or fall back), let free nodes follow their data, list the fallbacks. Groups are
// visited in the order of their first member and fallbacks listed in node order, so errors and
// logs follow the order of `nodes`.
class Placer {
 public:
  Placer(const std::vector<Node*>& nodes, const DeviceSet& devices, const PlacerOptions& options,
         const KernelRegistry& registry)
      : nodes_(nodes),
        devices_(devices),
        options_(options),
        registry_(registry),
        types_(devices.DeviceTypes()),
        soft_(options.allow_soft_placement && !options.strict_placement) {}

  StatusOr<Placement> Run() {
    if (devices_.devices().empty()) return errors::FailedPrecondition("No devices are registered");
    PF_RETURN_IF_ERROR(InitializeMembers());
    PF_RETURN_IF_ERROR(ColocateReferenceEdges());
    PF_RETURN_IF_ERROR(ColocateExplicitly());
    FormGroups();
    for (Group& g : groups_) PF_RETURN_IF_ERROR(PlaceGroup(g));
    Placement placement;
    if (options_.automatic != nullptr) PF_RETURN_IF_ERROR(PlaceAutomatically(&placement));
    for (size_t i = 0; i < nodes_.size(); ++i) placement.device[nodes_[i]] = GroupOf(i).device;
    ApplyHeuristics(&placement);
    ListFallbacks(&placement);
    if (options_.automatic != nullptr) PF_RETURN_IF_ERROR(Predict(&placement));
    return placement;
  }

 private:
  Group& GroupOf(size_t i) { return groups_[group_of_[i]]; }

  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }

  // Per node, in order, as TensorFlow's placer checks them before anything else: an assigned
  // device must parse, exist and have a kernel for the node (INTERNAL errors: the runtime
  // assigned it); any other node needs a kernel on some device type (INVALID_ARGUMENT) and a
  // request that parses.
  Status InitializeMembers() {
    members_.resize(nodes_.size());
    parent_.resize(nodes_.size());
    own_.resize(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node* n = nodes_[i];
      index_[n] = static_cast<int>(i);
      by_name_[n->name()] = static_cast<int>(i);
      parent_[i] = static_cast<int>(i);
      Member& m = members_[i];
      m.supported = registry_.PrioritizedTypes(*n, types_);
      if (const std::string& a = n->assigned_device(); !a.empty()) {
        if (!DeviceName::Parse(a, &m.assigned))
          return errors::Internal("Malformed assigned device '", a, "'");
        const Device* d = devices_.Find(a);
        if (d == nullptr)
          return errors::Internal("Assigned device '", a, "' does not match any device");
        if (!registry_.Supports(*n, d->device_type())) {
          return errors::Internal("Assigned device '", a,
                                  "' does not have registered OpKernel support for ", n->op());
        }
        m.requested = m.assigned;  // an assigned node's request is its device
      } else {
        if (m.supported.empty())
          return errors::InvalidArgument(registry_.NoKernelMessage(*n, types_));
        if (const std::string& r = n->requested_device(); !DeviceName::Parse(r, &m.requested)) {
          return errors::InvalidArgument("Malformed device specification '", r, "' in node '",
                                         n->name(), "'");
        }
      }
      own_[i] = m.requested;
    }
    return Status::OK();
  }

  // TensorFlow's ColocateNodes: merges y's group into x's, or changes nothing and says why.
  Status Colocate(int x, int y) {
    const int rx = Find(x), ry = Find(y);
    if (rx == ry) return Status::OK();
    Member merged = members_[rx];
    const Member& other = members_[ry];
    Status s = DeviceName::Merge(&merged.assigned, other.assigned);
    if (s.ok()) s = DeviceName::Merge(&merged.requested, other.requested, soft_);
    const std::string pair = fmt::format(
        "Cannot colocate nodes {{{{colocation_node {}}}}} and "
        "{{{{colocation_node {}}}}}",
        nodes_[x]->name(), nodes_[y]->name());
    if (!s.ok()) return errors::InvalidArgument(pair, ": ", s.message());
    DeviceName::MergeUnset(&merged.requested, merged.assigned);
    merged.supported = IntersectTypes(merged.supported, other.supported, types_);
    if (merged.supported.empty()) {
      return errors::InvalidArgument(
          pair,
          " because no device type supports both of those nodes and the other nodes colocated "
          "with them.",
          DebugInfo(rx), DebugInfo(ry));
    }
    const int root = std::min(rx, ry);
    parent_[std::max(rx, ry)] = root;
    members_[root] = std::move(merged);
    return Status::OK();
  }

  // A variable and the ops that take it by reference share its storage: always colocated, even
  // against the consumer's explicit request (the variable's side wins) and without soft
  // placement. Assigned devices alone can make that impossible.
  Status ColocateReferenceEdges() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node* dst = nodes_[i];
      for (int k = 0; k < dst->num_inputs(); ++k) {
        if (!dst->IsRefInput(k)) continue;
        auto it = index_.find(dst->input(k).node);
        if (it == index_.end()) continue;
        const Node* src = nodes_[it->second];
        Member& s = members_[Find(it->second)];
        Member& d = members_[Find(static_cast<int>(i))];
        if (&s == &d) continue;
        if (!DeviceName::AreCompatible(s.assigned, d.assigned)) {
          return errors::InvalidArgument(
              "Cannot place the graph because a reference or resource edge connects colocation "
              "groups with incompatible assigned devices: ",
              s.assigned.ToString(), " vs ", d.assigned.ToString(), ". The edge src node is ",
              src->name(), " , and the dst node is ", dst->name());
        }
        if (!DeviceName::AreCompatible(s.requested, d.requested)) {
          PF_LOG_INFO(
              "Ignoring device specification {} for node '{}' because the input edge from '{}' "
              "is a reference connection and already has a device field set to {}",
              d.requested.ToString(), dst->name(), src->name(), s.requested.ToString());
          d.requested = s.requested;
          DeviceName::MergeUnset(&d.requested, d.assigned);
        }
        Status st = Colocate(it->second, static_cast<int>(i));
        if (!st.ok()) {
          return errors::InvalidArgument(
              "Nodes were connected by a reference or resource connection (requiring them to be "
              "on the same device), but the two nodes were assigned two different devices: ",
              st.message());
        }
      }
    }
    return Status::OK();
  }

  // ColocateWith, in node order. Under soft placement a colocation that cannot hold (no common
  // device type, or assigned devices that differ) is dropped and the nodes placed apart.
  Status ColocateExplicitly() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      for (const std::string& target : nodes_[i]->colocation_group()) {
        auto it = by_name_.find(target);
        if (it == by_name_.end()) continue;
        Status s = Colocate(static_cast<int>(i), it->second);
        if (s.ok()) continue;
        if (!soft_) return s;
        PF_LOG_INFO(
            "Ignoring request to colocate node '{}' with nodes in colocation group '{}' because "
            "soft placement is on and an attempt at doing so resulted in the following error: {}",
            nodes_[i]->name(), target, s.message());
      }
    }
    return Status::OK();
  }

  void FormGroups() {
    std::vector<int> group_of_root(nodes_.size(), -1);
    group_of_.resize(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const int root = Find(static_cast<int>(i));
      int& group = group_of_root[root];
      if (group < 0) {
        group = static_cast<int>(groups_.size());
        Group& g = groups_.emplace_back();
        g.info.requested = members_[root].requested;
        g.info.assigned = members_[root].assigned;
        g.info.supported = members_[root].supported;
        g.spec = g.info.requested;
        DeviceName::MergeOverride(&g.spec, g.info.assigned);
        FillDefaultTask(&g.spec);
      }
      group_of_[i] = group;
      groups_[group].info.members.push_back(nodes_[i]);
    }
  }

  // A request that names no job stays on the session's own task (a cluster's client device).
  void FillDefaultTask(DeviceName* spec) const {
    if (spec->has_job) return;  // "/job:ps": any of that job's tasks
    DeviceName task;
    task.has_job = options_.default_task.has_job;
    task.job = options_.default_task.job;
    task.has_replica = options_.default_task.has_replica;
    task.replica = options_.default_task.replica;
    task.has_task = options_.default_task.has_task;
    task.task = options_.default_task.task;
    DeviceName::MergeUnset(spec, task);
  }

  Status PlaceGroup(Group& g) {
    std::vector<Device*> found = Candidates(g, g.spec);
    // Soft placement never moves a node that arrived with an assigned device.
    const bool may_relax = soft_ && g.info.assigned.IsEmpty();
    if (found.empty() && may_relax) {
      DeviceName relaxed = g.spec;
      relaxed.has_id = false;  // first keep the type the user asked for
      found = Candidates(g, relaxed);
      if (found.empty()) {
        relaxed.has_type = false;
        found = Candidates(g, relaxed);
      }
      g.fell_back = !found.empty();
    }
    if (found.empty()) return NoDeviceError(g, may_relax);
    g.device = found[0];
    g.candidates = std::move(found);
    return Status::OK();
  }

  // The machine model's index of `d` (Internal when the model lacks it).
  StatusOr<int> ModelIndex(const Device* d) const {
    const int i = options_.automatic->cost->machine().Find(d->name());
    if (i < 0) return errors::Internal("The placement cost model has no device ", d->name());
    return i;
  }

  // The algorithm chooses each group's device among its candidates; a group keeps the device an
  // earlier plan gave one of its members when the rules still allow it.
  Status PlaceAutomatically(Placement* placement) {
    const auto t0 = std::chrono::steady_clock::now();
    const AutomaticPlacement& a = *options_.automatic;
    PlacementProblem problem;
    problem.group_of = group_of_;
    problem.candidates.resize(groups_.size());
    bool free = false;  // a group the algorithm chooses for
    for (size_t k = 0; k < groups_.size(); ++k) {
      std::vector<int>& c = problem.candidates[k];
      for (const Device* d : groups_[k].candidates) {
        PF_ASSIGN_OR_RETURN(int i, ModelIndex(d));
        c.push_back(i);
      }
      if (c.size() == 1)  // the rules leave one device (a request, an assigned device)
        placement->fixed.insert(groups_[k].info.members.begin(), groups_[k].info.members.end());
      for (const Node* n : groups_[k].info.members) {
        auto it = a.planned.find(n->name());
        const int i = it == a.planned.end() ? -1 : a.cost->machine().Find(it->second);
        if (i >= 0 && std::find(c.begin(), c.end(), i) != c.end()) {
          c = {i};
          break;
        }
      }
      free = free || c.size() > 1;
    }
    cost_graph_ = BuildCostGraph(nodes_, *a.cost);
    AutoPlan plan;
    if (free) {
      PF_ASSIGN_OR_RETURN(plan, AutoPlace(cost_graph_, *a.cost, problem, a.options));
    } else {  // every group has one device left: nothing to choose
      plan.kept_rules = a.planned_kept_rules;
      for (size_t i = 0; i < nodes_.size(); ++i)
        plan.device_of.push_back(problem.candidates[group_of_[i]][0]);
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      GroupOf(i).device = devices_.Find(a.cost->machine().devices[plan.device_of[i]].name);
    }
    placement->algorithm = PlacementAlgorithmName(a.options.algorithm);
    placement->kept_rules = plan.kept_rules;
    placement->planning_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return Status::OK();
  }

  // The step these nodes make on the final placement (after the heuristics), simulated.
  Status Predict(Placement* placement) const {
    const CostModel& cost = *options_.automatic->cost;
    std::vector<int> device_of(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      PF_ASSIGN_OR_RETURN(device_of[i], ModelIndex(placement->device.at(nodes_[i])));
    }
    PF_ASSIGN_OR_RETURN(Schedule s, Simulate(cost_graph_, cost, device_of));
    placement->predicted_step_us = s.step_us;
    for (int d = 0; d < cost.num_devices(); ++d) {
      if (s.busy_us[d] > 0 || s.peak_bytes[d] > 0)
        placement->predicted_peak_bytes[cost.machine().devices[d].name] = s.peak_bytes[d];
    }
    return Status::OK();
  }

  // Devices matching `spec` with a supported type: by the group's type order (kernel priority,
  // then device priority), then by device order.
  std::vector<Device*> Candidates(const Group& g, const DeviceName& spec) const {
    const TypePriorities& types = g.info.supported;
    auto rank = [&](const Device* d) {
      for (size_t k = 0; k < types.size(); ++k)
        if (types[k].first == d->device_type()) return static_cast<int>(k);
      return -1;
    };
    std::vector<Device*> out;
    for (Device* d : devices_.Matching(spec))
      if (rank(d) >= 0) out.push_back(d);
    std::stable_sort(out.begin(), out.end(),
                     [&](const Device* a, const Device* b) { return rank(a) < rank(b); });
    return out;
  }

  // TensorFlow's texts for a group no device can take. They name the node that carried the
  // group's request, or, when the request is the group's but another member cannot run there,
  // that member ("colocated with a group of nodes that required incompatible device"). Under
  // soft placement they end with why relaxing the request found nothing either.
  Status NoDeviceError(const Group& g, bool soft_tried) const {
    const std::vector<const Node*>& members = g.info.members;
    auto own = [&](const Node* n) -> const DeviceName& { return own_[index_.at(n)]; };
    auto first = [&](auto pred) -> const Node* {
      auto it = std::find_if(members.begin(), members.end(), pred);
      return it == members.end() ? nullptr : *it;
    };
    const Node* named = first([&](const Node* n) { return own(n) == g.info.requested; });
    if (named == nullptr) named = first([&](const Node* n) { return !own(n).IsEmpty(); });
    if (named == nullptr) named = members[0];
    const std::vector<Device*> matching = devices_.Matching(g.spec);
    // A member with no kernel on any device of the request.
    const Node* blocker = first([&](const Node* n) {
      return std::none_of(matching.begin(), matching.end(), [&](const Device* d) {
        return registry_.Supports(*n, d->device_type());
      });
    });
    auto asked = [&](const Node* n) {
      return n == named && own(n).IsEmpty() ? g.spec.ToString() : own(n).ToString();
    };
    const std::string debug = placer_internal::ColocationDebugInfo(g.info, devices_, registry_);
    std::string why;
    if (matching.empty()) {
      why = fmt::format(
          "{{{{node {}}}}} was explicitly assigned to {} but available devices are {}. Make sure "
          "the device specification refers to a valid device.{}",
          named->name(), asked(named), placer_internal::SortedDeviceList(devices_),
          placer_internal::GpuNotEnabledNote(g.spec));
    } else if (blocker != nullptr && blocker != named) {
      named = blocker;
      why = fmt::format(
          "Could not satisfy explicit device specification '{}' because the node "
          "{{{{colocation_node {}}}}} was colocated with a group of nodes that required "
          "incompatible device '{}'. All available devices {}. {}",
          own(blocker).ToString(), blocker->name(), g.spec.ToString(),
          placer_internal::SortedDeviceList(devices_, "[", "]"), debug);
    } else if (g.spec.has_type) {
      std::vector<std::string> registered;
      for (const KernelDef* k : registry_.KernelsForOp(named->op()))
        registered.push_back("  " + k->DebugString());
      why = fmt::format(
          "Could not satisfy explicit device specification '{}' because no supported kernel for "
          "{} devices is available.{}\nOp: {}\nRegistered kernels:\n{}",
          asked(named), g.spec.type, debug, named->op(), fmt::join(registered, "\n"));
    } else {
      why = fmt::format(
          "Could not satisfy explicit device specification '{}' because no device of that "
          "specification has a kernel for every op of the group.{}",
          asked(named), debug);
    }
    if (soft_tried) {
      DeviceName relaxed = g.spec;
      relaxed.has_type = relaxed.has_id = false;
      std::vector<std::string> types;
      for (const auto& [t, p] : g.info.supported) types.push_back(t);
      why += devices_.Matching(relaxed).empty()
                 ? fmt::format("\nSoft placement found no device either: no device matches '{}'.",
                               relaxed.ToString())
                 : fmt::format(
                       "\nSoft placement found no device either: no device matching '{}' has a "
                       "kernel for every op of the group (supported device types: [{}]).",
                       relaxed.ToString(), fmt::join(types, ", "));
    }
    return errors::InvalidArgument("Cannot assign a device for operation ", named->name(), ": ",
                                   why, "\n\t [[{{node ", named->name(), "}}]]");
  }

  std::string DebugInfo(int root) {
    GroupInfo info;
    info.requested = members_[root].requested;
    info.assigned = members_[root].assigned;
    info.supported = members_[root].supported;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (Find(static_cast<int>(i)) == root) info.members.push_back(nodes_[i]);
    return placer_internal::ColocationDebugInfo(info, devices_, registry_);
  }

  // A node that chose freely (no request, alone in its group) may move to where its data is
  // used or made, as TensorFlow's placer does:
  //  - a generator (no inputs, one output) whose consumers all sit on one device follows them,
  //    so a constant feeding a GPU op is made on that GPU instead of being copied there;
  //  - a metadata op (OpDef::is_metadata, e.g. Shape) stays with its input: it needs
  //    only the input's shape.
  void ApplyHeuristics(Placement* placement) {
    auto free_choice = [&](const Node* n) {
      return n->requested_device().empty() && n->assigned_device().empty() &&
             GroupOf(index_.at(n)).info.members.size() == 1;
    };
    auto move_to = [&](const Node* n, Device* d) {
      if (d != placement->device[n] && registry_.Supports(*n, d->device_type()))
        placement->device[n] = d;
    };
    for (const Node* n : nodes_) {
      if (options_.automatic != nullptr) break;  // the planner placed sources with consumers
      if (!free_choice(n) || n->num_inputs() != 0 || !n->control_inputs().empty() ||
          n->num_outputs() != 1 || n->IsStateful()) {
        continue;
      }
      std::unordered_set<Device*> consumer_devices;
      for (const Edge& e : n->out_edges()) {
        if (index_.count(e.dst)) consumer_devices.insert(placement->device[e.dst]);
      }
      if (consumer_devices.size() == 1) move_to(n, *consumer_devices.begin());
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
                                     n->name(), n->op(), g.spec.ToString(), g.device->name());
      PF_LOG_INFO("{}", line);
      placement->fallbacks.push_back(std::move(line));
    }
  }

  const std::vector<Node*>& nodes_;
  const DeviceSet& devices_;
  const PlacerOptions& options_;
  const KernelRegistry& registry_;
  const std::vector<std::string> types_;
  const bool soft_;  // soft placement allowed (and not turned into errors by strict_placement)
  std::unordered_map<const Node*, int> index_;         // position in nodes_
  std::unordered_map<std::string_view, int> by_name_;  // node name -> position
  std::vector<int> parent_;                            // union-find over positions
  std::vector<Member> members_;                        // per position; valid at roots
  std::vector<DeviceName> own_;                        // per node: its own request (or assigned)
  std::vector<int> group_of_;                          // per node: its group's index in groups_
  std::vector<Group> groups_;                          // in the order of their first member
  CostGraph cost_graph_;                               // automatic placement's
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
