// Placer: graph nodes + devices + kernel registry + options -> one device per node.
// Pure: it reads the graph and returns a placement, leaving the graph untouched.
//
//   pf::PlacerOptions opts{.allow_soft_placement = true};
//   PF_ASSIGN_OR_RETURN(pf::Placement p, pf::Place(nodes, devices, opts));
//   p.device.at(node)->name();   // "/job:localhost/replica:0/task:0/device:CPU:0"
//
// Rules (TensorFlow's, see docs/placement.md): every node needs a kernel on some device type,
// and a node that arrives with an assigned device keeps it (checked first). Nodes linked by a
// reference input (a variable and its Assign; the variable's request wins) or by ColocateWith
// form a group placed together; the group's requests merge; candidates are the devices matching
// the merged request whose type has a kernel for every member, ordered by kernel priority, then
// device priority. With soft placement a colocation that cannot hold is dropped, and a request
// that cannot be met falls back (same type any id, then any type; never away from an assigned
// device), each fallback logged. Then a node that chose freely follows its data: a generator
// (no inputs, one output) whose consumers share a device moves there, a metadata op
// (OpDef::is_metadata: Shape) to its input's device.
// Deterministic: errors and fallbacks follow the order of `nodes` (the first failing node's
// error; one fallback line per node, in order).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "placeflow/devices/device_set.h"
#include "placeflow/graph/graph.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/placer/auto_place.h"

namespace pf {

// Automatic placement (issue 37, docs/placement.md): the rules decide which devices each
// colocation group may use (its request, kernels, soft placement), then a cost model and one of
// Baechi's algorithms choose among them, and the plan's step is simulated.
struct AutomaticPlacement {
  std::shared_ptr<const CostModel> cost;  // its machine names every device of the DeviceSet
  AutoPlaceOptions options;
  // Decisions to keep (node name -> device name): a session's earlier plans, so that every
  // signature finds a variable where the first plan put it.
  std::map<std::string, std::string> planned;
  bool planned_kept_rules = false;  // the plan behind `planned` kept the rules' placement
};

struct PlacerOptions {
  bool allow_soft_placement = false;
  // Fallbacks are errors even with allow_soft_placement.
  bool strict_placement = false;
  // Fills the job/replica/task of a group whose request names no job (a cluster session's own task,
  // TensorFlow's client device): unconstrained nodes stay on that task. Empty: no default.
  DeviceName default_task;
  const AutomaticPlacement* automatic = nullptr;  // set: automatic placement
};

struct Placement {
  std::unordered_map<const Node*, Device*> device;
  std::vector<std::string> fallbacks;  // one line per soft fallback
  // Automatic placement only: the algorithm, the nodes it did not choose for (the rules left
  // their group one device: a request, an assigned device), and its prediction for these nodes.
  std::string algorithm;
  bool kept_rules = false;  // the rules' own placement was kept (AutoPlan::kept_rules)
  std::unordered_set<const Node*> fixed;
  double predicted_step_us = 0;
  std::map<std::string, int64_t> predicted_peak_bytes;  // device name -> bytes
  double planning_ms = 0;
};

StatusOr<Placement> Place(const std::vector<Node*>& nodes, const DeviceSet& devices,
                          const PlacerOptions& options,
                          const KernelRegistry& registry = *KernelRegistry::Global());

// One line per node in TensorFlow's log_device_placement format:
// "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0"
std::string PlacementLogLine(const Node& node, const Device& device);

}  // namespace pf
