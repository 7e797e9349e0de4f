// Automatic placement (issue 37): Baechi's memory-constrained algorithms (Jeon et al., SoCC 2020)
// over a CostGraph, choosing a device for each colocation group among its candidates (what the
// rule placer allows it: its request, kernels, soft placement). docs/placement.md has the
// algorithms, their guarantees and where they differ from the paper.
//
//   m-topo: the topological order cut into one contiguous piece per device, of equal work.
//   m-etf:  list scheduling; each node, when ready, goes to the device where it finishes first.
//   m-sct:  m-etf, except that a node's favourite child (the consumer it sends its largest
//           tensor to, when that is the child's largest input) follows it onto its device.
// All three: a group's device is chosen when its first member gets its turn, and only among
// devices whose memory (less the headroom) still holds all of the group's outputs and
// variables; so the memory a plan charges a device bounds its peak. Sources that cost nothing
// (variables, constants, their reads) wait and go where their first consumer goes.
//
//   PF_ASSIGN_OR_RETURN(pf::AutoPlan plan, pf::AutoPlace(graph, cost, problem, {}));
//   plan.device_of[i]   // per CostGraph node
#pragma once

#include <string_view>
#include <vector>

#include "placeflow/placer/cost_model.h"

namespace pf {

enum class PlacementAlgorithm { kTopo, kEtf, kSct };
// "m-topo", "m-etf", "m-sct" (also without "m-", any case).
StatusOr<PlacementAlgorithm> ParsePlacementAlgorithm(std::string_view name);
const char* PlacementAlgorithmName(PlacementAlgorithm algorithm);

struct AutoPlaceOptions {
  PlacementAlgorithm algorithm = PlacementAlgorithm::kSct;
  // The fraction of each device's memory the plan leaves free (for what the model does not see:
  // kernels' scratch space, fragmentation).
  double memory_headroom = 0.1;
};

struct PlacementProblem {
  std::vector<int> group_of;                 // per CostGraph node: its colocation group
  std::vector<std::vector<int>> candidates;  // per group: device indices, preferred first
};

struct AutoPlan {
  std::vector<int> device_of;          // per CostGraph node
  std::vector<int64_t> charged_bytes;  // per device: the outputs and variables placed there
};

// Errors: a group no device has memory left for (ResourceExhausted, naming a member, its bytes
// and each candidate's free memory); a group without candidates (InvalidArgument).
StatusOr<AutoPlan> AutoPlace(const CostGraph& graph, const CostModel& cost,
                             const PlacementProblem& problem, const AutoPlaceOptions& options);

}  // namespace pf
