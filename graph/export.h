// Graph export: Graphviz DOT (nodes coloured by device once placed) and a readable JSON form.
//
//   std::string dot = pf::GraphToDot(g, sess.DevicePlacement());
//   std::string json = pf::GraphToJson(g);
#pragma once

#include <map>
#include <string>

#include "placeflow/graph/graph.h"

namespace pf {

// `placement` maps node name -> device; nodes are filled with one colour per device, and
// edges that cross devices are drawn bold red.
std::string GraphToDot(const Graph& graph,
                       const std::map<std::string, std::string>& placement = {});
// {"nodes": [{"name", "op", "inputs", "control_inputs", "device", "attrs", "outputs": [{"dtype",
// "shape"}]}]}
std::string GraphToJson(const Graph& graph,
                        const std::map<std::string, std::string>& placement = {});

}  // namespace pf
