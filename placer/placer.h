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

#include <string>
#include <unordered_map>
#include <vector>

#include "placeflow/devices/device_set.h"
#include "placeflow/graph/graph.h"
#include "placeflow/graph/kernel.h"

namespace pf {

struct PlacerOptions {
  bool allow_soft_placement = false;
  // Fallbacks are errors even with allow_soft_placement.
  bool strict_placement = false;
  // Fills the job/replica/task of a group whose request names no job (a cluster session's own task,
  // TensorFlow's client device): unconstrained nodes stay on that task. Empty: no default.
  DeviceName default_task;
};

struct Placement {
  std::unordered_map<const Node*, Device*> device;
  std::vector<std::string> fallbacks;  // one line per soft fallback
};

StatusOr<Placement> Place(const std::vector<Node*>& nodes, const DeviceSet& devices,
                          const PlacerOptions& options,
                          const KernelRegistry& registry = *KernelRegistry::Global());

// One line per node in TensorFlow's log_device_placement format:
// "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0"
std::string PlacementLogLine(const Node& node, const Device& device);

}  // namespace pf
