// Automatic placement (issue 37): Baechi's memory-constrained algorithms (Jeon et al., SoCC 2020)
// over a CostGraph, choosing a device for each colocation group among its candidates (what the
// rule placer allows it: its request, kernels, soft placement). docs/placement.md has the
// algorithms, their guarantees and where they differ from the paper.
//
//   m-topo: the topological order cut into one contiguous piece per device, of equal work.
//   m-etf:  list scheduling; each node, when ready, goes to the device where it finishes first.
//   m-sct:  m-etf, except that a node's favourite child (the consumer it sends its largest
//           tensor to, when that is the child's largest input) follows it onto its device.
// All three run the list scheduler of placer/schedule.h as they decide, and track each device's
// memory along it: the variables of the groups placed there, and every output and copy until
// its last consumer is scheduled. A group's device is chosen when its first member gets its
// turn, among devices with room for the group's variables, its largest output and the inputs it
// would copy in. The plan's step is then simulated (placer/schedule.h); where it holds more than
// a device's memory less the headroom, the algorithm runs again with that device's budget cut
// by the excess (up to 6 times). A returned plan's simulated peak is within every limit. Last,
// the rules' own placement is simulated too, and kept when it fits and the plan is not predicted
// at least 5% faster (less is within the cost model's error); and when no plan of the
// algorithm fits the memory, the rules' placement is the plan if it fits.
// Sources that cost nothing (variables, constants, their reads) wait and go where their first
// consumer goes.
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
  // Keep the rules' placement unless the plan is predicted 5% faster (off: the algorithm's plan,
  // as the tests of each algorithm want it).
  bool keep_rules_unless_faster = true;
};

struct PlacementProblem {
  std::vector<int> group_of;                 // per CostGraph node: its colocation group
  std::vector<std::vector<int>> candidates;  // per group: device indices, preferred first
};

struct AutoPlan {
  std::vector<int> device_of;       // per CostGraph node
  std::vector<int64_t> peak_bytes;  // per device: the simulated step's peak (Simulate)
  double step_us = 0;               // the simulated step
  // The rules' placement (every group on its first candidate) fit and the algorithm's plan was
  // not predicted 5% faster: it is the plan (a model too small to gain stays on one device).
  bool kept_rules = false;
};

// Errors: a group no device has memory left for (ResourceExhausted, naming a member, its bytes
// and each candidate's free memory); a group without candidates (InvalidArgument).
StatusOr<AutoPlan> AutoPlace(const CostGraph& graph, const CostModel& cost,
                             const PlacementProblem& problem, const AutoPlaceOptions& options);

}  // namespace pf
