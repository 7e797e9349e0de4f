// Partition: splits a placed subgraph into one graph per device, with a _Send/_Recv pair on
// every cross-device data edge (one _Recv per tensor and destination device) and a tiny
// constant sent for cross-device control edges (one per destination node and source device,
// after all of that node's sources there). Fed tensors enter a partition through
// _Arg nodes. The user's graph is not touched: partitions hold copies of its nodes (same
// names, so variables and kernels are found by name).
//
//   PF_ASSIGN_OR_RETURN(pf::Partitions parts, pf::Partition(nodes, placement.device, fed));
//   parts.parts[i].device, parts.parts[i].nodes, parts.send_recv_pairs
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "placeflow/devices/device.h"
#include "placeflow/graph/graph.h"

namespace pf {

struct Partitions {
  struct Part {
    Device* device = nullptr;
    std::unique_ptr<Graph> graph;  // owns the copies, _Send, _Recv and _Arg nodes
    std::vector<Node*> nodes;      // what the part's executor runs (not the _Args)
    // fed tensor (user graph) -> its _Arg outputs here: one per memory type its consumers
    // read it in (a GPU partition may need it both in host memory and in device memory)
    std::multimap<Output, Output> args;
  };
  std::deque<Part> parts;  // a deque: references to parts stay valid as parts are added
  std::unordered_map<const Node*, Node*> copy_of;  // user node -> its copy
  int send_recv_pairs = 0;  // _Send/_Recv pairs in all, control tokens included
  int control_tokens = 0;   // pairs that carry cross-device control edges
};

// `nodes` must contain every node it needs except fed tensors' producers. Errors: a node without
// a device (Internal), an input that is neither in `nodes` nor fed (TensorFlow's "Incomplete
// graph, missing N inputs for X", InvalidArgument).
StatusOr<Partitions> Partition(const std::vector<Node*>& nodes,
                               const std::unordered_map<const Node*, Device*>& device,
                               const std::set<Output>& fed);

}  // namespace pf
