#include "placeflow/graph/export.h"

#include <fmt/ranges.h>

#include <vector>

#include "placeflow/core/strings.h"
#include "placeflow/graph/op_registry.h"

namespace pf {
namespace {

const std::string& DeviceOf(const Node* n, const std::map<std::string, std::string>& placement) {
  auto it = placement.find(n->name());
  return it != placement.end() ? it->second : n->requested_device();
}

}  // namespace

std::string GraphToDot(const Graph& graph, const std::map<std::string, std::string>& placement) {
  static const char* kPalette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
                                   "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd"};
  std::map<std::string, int> colour;
  std::string s =
      "digraph placeflow {\n  node [shape=box, style=filled, fontname=\"Helvetica\"];\n";
  for (const Node* n : graph.nodes()) {
    const std::string& dev = DeviceOf(n, placement);
    if (!colour.count(dev)) colour[dev] = static_cast<int>(colour.size());
    s += fmt::format("  \"{}\" [label=\"{}\\n{}\\n{}\", fillcolor=\"{}\"];\n",
                     EscapeQuoted(n->name()), EscapeQuoted(n->name()), n->op(), EscapeQuoted(dev),
                     dev.empty() ? "white" : kPalette[colour[dev] % 10]);
  }
  for (const Node* n : graph.nodes()) {
    for (const Edge& e : n->out_edges()) {
      bool cross = DeviceOf(e.src, placement) != DeviceOf(e.dst, placement);
      std::string style = e.IsControl() ? "style=dashed" : "";
      if (cross) style += std::string(style.empty() ? "" : ", ") + "color=red, penwidth=2";
      // Cross-device edges are where the partitioner puts a _Send/_Recv pair.
      std::string label = e.IsControl() ? ""
                                        : fmt::format("label=\"{}{}\"",
                                                      e.src->output_shape(e.src_output).ToString(),
                                                      cross ? " Send/Recv" : "");
      std::vector<std::string> attrs;
      if (!style.empty()) attrs.push_back(style);
      if (!label.empty()) attrs.push_back(label);
      s += fmt::format("  \"{}\" -> \"{}\" [{}];\n", EscapeQuoted(e.src->name()),
                       EscapeQuoted(e.dst->name()), fmt::join(attrs, ", "));
    }
  }
  if (!colour.empty()) {
    s += "  subgraph cluster_legend {\n    label=\"devices\";\n";
    for (const auto& [dev, c] : colour) {
      if (dev.empty()) continue;
      s += fmt::format("    \"legend:{}\" [label=\"{}\", fillcolor=\"{}\"];\n", EscapeQuoted(dev),
                       EscapeQuoted(dev), kPalette[c % 10]);
    }
    s += "  }\n";
  }
  return s + "}\n";
}

std::string GraphToJson(const Graph& graph, const std::map<std::string, std::string>& placement) {
  std::vector<std::string> nodes;
  for (const Node* n : graph.nodes()) {
    std::vector<std::string> inputs, controls, attrs, outputs;
    for (const Output& o : n->inputs())
      inputs.push_back(fmt::format("\"{}\"", EscapeQuoted(o.name())));
    for (const Node* c : n->control_inputs())
      controls.push_back(fmt::format("\"{}\"", EscapeQuoted(c->name())));
    for (const auto& [k, v] : n->attrs())
      attrs.push_back(
          fmt::format("\"{}\": \"{}\"", EscapeQuoted(k), EscapeQuoted(AttrValueToString(v))));
    for (int i = 0; i < n->num_outputs(); ++i) {
      outputs.push_back(fmt::format("{{\"dtype\": \"{}\", \"shape\": \"{}\"}}",
                                    DTypeName(n->output_dtype(i)), n->output_shape(i).ToString()));
    }
    nodes.push_back(fmt::format(
        "    {{\"name\": \"{}\", \"op\": \"{}\", \"inputs\": [{}], \"control_inputs\": [{}], "
        "\"device\": \"{}\", "
        "\"attrs\": {{{}}}, \"outputs\": [{}]}}",
        EscapeQuoted(n->name()), n->op(), fmt::join(inputs, ", "), fmt::join(controls, ", "),
        EscapeQuoted(DeviceOf(n, placement)), fmt::join(attrs, ", "), fmt::join(outputs, ", ")));
  }
  return fmt::format("{{\n  \"nodes\": [\n{}\n  ]\n}}\n", fmt::join(nodes, ",\n"));
}

}  // namespace pf
