// How GraphDef import orders a GraphDef's nodes and closes its while loops (internal to
// graph/graph_def.cc, for ImportGraphDef and PlacedGraphFromProto).
//
// A GraphDef need not be sorted, so nodes are added in an order where each follows its inputs.
// A while loop makes a cycle: its Merge takes the loop's NextIteration as a second input (the
// back edge). As TensorFlow's importer and placeflow's partitioner do, the order ignores back
// edges; a Merge is added with a stand-in for its back edge (its first other data input, the
// loop's Enter), and CloseBackEdges points the input at the NextIteration once that exists. An
// edge is a back edge when its source's op is a NextIteration and its destination's a Merge, by
// their OpDef's control-flow facts (OpDef::control_flow), never by op name. Any other cycle is
// an error naming a node on it.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"
#include "placeflow/graph/graph.h"

namespace tensorflow {
class GraphDef;
}  // namespace tensorflow

namespace pf::internal {

// "name", "name:1", "^name" -> (name, index, control).
struct InputRef {
  std::string node;
  int index = 0;
  bool control = false;
  bool back_edge = false;  // a loop's NextIteration -> Merge edge
};
// Each GraphDef node's inputs, by node name.
using InputRefs = std::unordered_map<std::string, std::vector<InputRef>>;

StatusOr<InputRef> ParseInput(const std::string& s);

// The GraphDef's nodes in an order where each follows the nodes it names as inputs, back edges
// aside (Kahn's algorithm): nodes with no inputs first, in file order, the rest as they become
// ready. Inputs must name nodes of the same GraphDef; `inputs` gets each node's, back edges
// marked. A cycle that is not a loop's back edge is InvalidArgument naming a node on it and the
// cycle.
StatusOr<std::vector<int>> InputsFirst(const tensorflow::GraphDef& def, InputRefs* inputs);

bool HasBackEdges(const std::vector<InputRef>& refs);

// `data`: a node's data inputs, with a null node where `refs` has a back edge; puts the node's
// first other data input there instead. InvalidArgument (naming `where`) when every data input
// is a back edge.
Status StandInForBackEdges(const std::string& where, std::vector<Output>* data);

// Points each back edge of `dst` (whose inputs in the GraphDef are `refs`) at its NextIteration,
// found by `find` (a GraphDef node name -> the node). InvalidArgument naming `where` when the
// NextIteration has no such output or its dtype is not the Merge's.
Status CloseBackEdges(const std::vector<InputRef>& refs, const std::string& where,
                      const std::function<Node*(const std::string&)>& find, Node* dst,
                      Graph* graph);

}  // namespace pf::internal
