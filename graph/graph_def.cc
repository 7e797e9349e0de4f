#include "placeflow/graph/graph_def.h"

#include <google/protobuf/text_format.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "placeflow/core/logging.h"
#include "placeflow/core/shape_util.h"
#include "placeflow/graph/graph_def_loops.h"
#include "placeflow/graph/graph_def_tf.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/graph/proto_codecs.h"
#include "placeflow/graph/scope.h"
#include "placeflow/graph/variable.h"
#include "placeflow/io/proto/graph.pb.h"

namespace pf {
namespace {

namespace tfp = ::tensorflow;
using internal::InputRef;
using internal::InputRefs;

std::string DeviceFor(const Node* n, const std::map<std::string, std::string>& placement) {
  auto it = placement.find(n->name());
  if (it != placement.end()) return it->second;
  if (!n->assigned_device().empty()) return n->assigned_device();
  return n->requested_device();
}

// A node's name, op, inputs ("name", "name:1", then "^ctrl"), device, attrs and colocation
// ("_class"). With `only` (a placed graph), control inputs from nodes outside it are left out
// and every data input is "name:index": the runtime's own nodes have names with colons.
Status NodeToDef(const Node& n, const std::string& device, tfp::NodeDef* nd,
                 const std::unordered_set<const Node*>* only = nullptr) {
  nd->set_name(n.name());
  nd->set_op(n.op());
  for (const Output& in : n.inputs())
    nd->add_input(in.index == 0 && only == nullptr ? in.node->name() : in.name());
  for (const Node* c : n.control_inputs())
    if (only == nullptr || only->count(c)) nd->add_input("^" + c->name());
  nd->set_device(device);
  auto* attrs = nd->mutable_attr();
  for (const auto& [name, value] : n.attrs()) {
    Status s = AttrToProto(value, &(*attrs)[name]);
    if (!s.ok()) {
      return errors::InvalidArgument("cannot export attr '", name, "' of node '", n.name(),
                                     "' (op: '", n.op(), "'): ", s.message());
    }
  }
  if (!n.colocation_group().empty()) {
    auto* list = (*attrs)["_class"].mutable_list();
    for (const std::string& c : n.colocation_group()) list->add_s("loc:@" + c);
  }
  return Status();
}

StatusOr<tfp::GraphDef> ToGraphDef(const Graph& graph,
                                   const std::map<std::string, std::string>& placement) {
  tfp::GraphDef def;
  // TensorFlow 1.15's producer version: readers that check versions accept it.
  def.mutable_versions()->set_producer(134);
  for (const Node* n : graph.nodes())
    PF_RETURN_IF_ERROR(NodeToDef(*n, DeviceFor(n, placement), def.add_node()));
  return def;
}

// The prefixed name of a GraphDef node in the graph it is imported into.
std::string ImportedName(const ImportGraphDefOptions& options, const std::string& name) {
  return options.prefix.empty() ? name : options.prefix + "/" + name;
}

// A node's inputs, looked up in the graph: data inputs in order, control inputs apart.
Status FindInputs(const std::vector<InputRef>& refs, const std::string& where,
                  const ImportGraphDefOptions& options, Graph* graph, std::vector<Output>* data,
                  std::vector<Node*>* control) {
  for (const InputRef& r : refs) {
    if (r.back_edge) {  // a loop's NextIteration, not in yet
      data->emplace_back();
      continue;
    }
    Node* src = graph->FindNode(ImportedName(options, r.node));
    if (src == nullptr)
      return errors::NotFound("GraphDef ", where, ": input '", r.node, "' missing");
    if (r.control) {
      control->push_back(src);
    } else {
      if (r.index >= src->num_outputs()) {
        return errors::InvalidArgument("GraphDef ", where, ": input '", r.node, ":", r.index,
                                       "' but '", r.node, "' has ", src->num_outputs(), " outputs");
      }
      data->emplace_back(src, r.index);
    }
  }
  if (!internal::HasBackEdges(refs)) return Status();
  return internal::StandInForBackEdges("GraphDef " + where, data);
}

// Data inputs, grouped by the schema's arguments (a list argument takes its length attr's
// count, or the rest).
Status AddDataInputs(const tfp::NodeDef& nd, const OpDef& def, const std::string& where,
                     const std::vector<Output>& data, NodeBuilder* b) {
  size_t next = 0;
  for (const ArgDef& arg : def.inputs()) {
    if (arg.number_attr.empty()) {
      if (next >= data.size())
        return errors::InvalidArgument("GraphDef ", where, ": too few inputs (", data.size(), ")");
      b->Input(data[next++]);
      continue;
    }
    int64_t n = -1;
    auto it = nd.attr().find(arg.number_attr);
    if (it != nd.attr().end() && it->second.value_case() == tfp::AttrValue::kI) n = it->second.i();
    if (n < 0) n = static_cast<int64_t>(data.size() - next);  // the rest
    if (next + n > data.size())
      return errors::InvalidArgument("GraphDef ", where, ": list input '", arg.name, "' needs ", n,
                                     " tensors, ", data.size() - next, " left");
    b->InputList(std::vector<Output>(data.begin() + next, data.begin() + next + n));
    next += n;
  }
  if (next != data.size()) {
    return errors::InvalidArgument("GraphDef ", where, ": ", data.size(), " data inputs, op '",
                                   nd.op(), "' takes ", next);
  }
  return Status();
}

// The node's attrs, converted against the schema; "_class" gives the colocation groups.
Status AddAttrs(const tfp::NodeDef& nd, const OpDef& def, const std::string& where,
                const ImportGraphDefOptions& options, NodeBuilder* b,
                std::vector<std::string>* colocation) {
  for (const auto& [name, value] : nd.attr()) {
    if (name == "_class") {
      for (const std::string& s : value.list().s())
        if (s.rfind("loc:@", 0) == 0) colocation->push_back(ImportedName(options, s.substr(5)));
      continue;
    }
    auto declared = def.attrs().find(name);
    if (declared == def.attrs().end()) {
      // Internal attrs ("_output_shapes", ...) and attrs of newer TF versions.
      if (name[0] == '_' || options.drop_unknown_attrs) {
        PF_LOG_DEBUG("ImportGraphDef: dropping attr '{}' of {}", name, where);
        continue;
      }
      return errors::InvalidArgument("GraphDef ", where, ": attr '", name,
                                     "' is not in placeflow's op schema");
    }
    auto v = AttrFromProto(value, declared->second ? &*declared->second : nullptr);
    if (!v.ok()) {
      return Status(v.status().code(),
                    fmt::format("GraphDef {}: attr '{}': {}", where, name, v.status().message()));
    }
    AttrValue attr = std::move(v).value();
    // Each import of a loop is a loop of its own: its frame's name gets the prefix too.
    auto* frame = std::get_if<std::string>(&attr);
    if (frame != nullptr && name == "frame_name" && def.control_flow() == ControlFlowKind::kEnter)
      *frame = ImportedName(options, *frame);
    b->Attr(name, std::move(attr));
  }
  return Status();
}

// What importing one GraphDef shares across its nodes.
struct Import {
  const ImportGraphDefOptions& options;
  const InputRefs& inputs;
  // Loops' Merges made less specific than their Enters (LoopMergeShapes), by GraphDef name.
  const std::map<std::string, Shape>& merge_shapes;
};

Status ImportOne(const tfp::NodeDef& nd, const Import& im, Graph* graph) {
  const ImportGraphDefOptions& options = im.options;
  const std::string where = fmt::format("node '{}' (op: '{}')", nd.name(), nd.op());
  const OpDef* def = OpRegistry::Global()->Find(nd.op());
  if (def == nullptr)
    return errors::NotFound("GraphDef ", where, ": op type not registered in placeflow");
  auto full = [&](const std::string& name) { return ImportedName(options, name); };
  Scope scope = Scope::Root(graph).WithExactNameScope("").WithOpName(full(nd.name()));
  if (options.import_devices && !nd.device().empty()) {
    try {
      scope = scope.WithDevice(nd.device());
    } catch (const Error& e) {
      return errors::InvalidArgument("GraphDef ", where, ": ", e.what());
    }
  }
  NodeBuilder b(scope, nd.op());
  // Data inputs by the schema's arguments; control inputs after them.
  std::vector<Output> data;
  std::vector<Node*> control;
  std::vector<std::string> colocation;
  PF_RETURN_IF_ERROR(FindInputs(im.inputs.at(nd.name()), where, options, graph, &data, &control));
  PF_RETURN_IF_ERROR(AddDataInputs(nd, *def, where, data, &b));
  for (Node* c : control) b.ControlInput(c);
  PF_RETURN_IF_ERROR(AddAttrs(nd, *def, where, options, &b, &colocation));
  Node* n = nullptr;
  try {
    n = b.Finalize();
  } catch (const Error& e) {
    return Status(e.code(), fmt::format("GraphDef {}: {}", where, e.status().message()));
  }
  if (n->name() != full(nd.name())) {
    return errors::AlreadyExists("GraphDef ", where, ": a node named '", full(nd.name()),
                                 "' already exists in the graph");
  }
  for (std::string& c : colocation) n->AddColocation(std::move(c));
  if (auto it = im.merge_shapes.find(nd.name()); it != im.merge_shapes.end())
    graph->SetOutputShape(n, 0, MostSpecificCommonShape(n->output_shape(0), it->second));
  return Status();
}

// Adds the GraphDef's nodes in `order`, then closes the loops' back edges.
Status AddNodes(const tfp::GraphDef& def, const std::vector<int>& order, const Import& im,
                Graph* graph) {
  for (int i : order) PF_RETURN_IF_ERROR(ImportOne(def.node(i), im, graph));
  const auto find = [&](const std::string& name) {
    return graph->FindNode(ImportedName(im.options, name));
  };
  for (int i : order) {
    const tfp::NodeDef& nd = def.node(i);
    const std::vector<InputRef>& refs = im.inputs.at(nd.name());
    if (!internal::HasBackEdges(refs)) continue;
    PF_RETURN_IF_ERROR(internal::CloseBackEdges(
        refs, fmt::format("GraphDef node '{}' (op: '{}')", nd.name(), nd.op()), find,
        find(nd.name()), graph));
  }
  return Status();
}

// A loop's Merge gets the shape its Enter gives it. Where a back edge brings a shape that differs
// (a loop variable whose shape changes, under a shape invariant), the Merge takes only the dims
// both have: found by importing into scratch graphs until every back edge agrees with its Merge
// (each pass makes some Merge less specific; after kMaxPasses, every loop's Merge is unknown, as
// TensorFlow's importer leaves them).
Status LoopMergeShapes(const tfp::GraphDef& def, const std::vector<int>& order,
                       const ImportGraphDefOptions& options, const InputRefs& inputs,
                       std::map<std::string, Shape>* shapes) {
  ImportGraphDefOptions scratch_options = options;
  scratch_options.prefix.clear();
  constexpr int kMaxPasses = 8;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    Graph scratch;
    PF_RETURN_IF_ERROR(AddNodes(def, order, {scratch_options, inputs, *shapes}, &scratch));
    bool changed = false;
    for (const auto& [name, refs] : inputs) {
      if (!internal::HasBackEdges(refs)) continue;
      const Shape& merge = scratch.FindNode(name)->output_shape(0);
      Shape common = merge;
      for (const InputRef& r : refs) {
        if (r.back_edge)
          common = MostSpecificCommonShape(common, scratch.FindNode(r.node)->output_shape(r.index));
      }
      if (common == merge) continue;
      (*shapes)[name] = common;
      changed = true;
    }
    if (!changed) return Status();
  }
  for (const auto& [name, refs] : inputs)
    if (internal::HasBackEdges(refs)) (*shapes)[name] = Shape::Unknown();
  return Status();
}

// A placed graph's node keeps its outputs' dtypes and shapes in these attrs (TensorFlow's name
// for the second).
constexpr char kOutputTypes[] = "_output_types";
constexpr char kOutputShapes[] = "_output_shapes";

// One node of a placed graph, whose inputs are already in `graph`.
Status AddPlacedNode(const tfp::NodeDef& nd, const std::vector<InputRef>& inputs, Graph* graph) {
  const auto error = [&nd](std::string_view what, Code code = Code::kInvalidArgument) {
    return Status(code,
                  fmt::format("Placed graph node '{}' (op: '{}'): {}", nd.name(), nd.op(), what));
  };
  // A tensor of a node without a name could not be named (FindOutput, the fetches): refused,
  // as a name holding '^' (a control input's mark) is. (A libFuzzer reproducer.)
  if (nd.name().empty() || nd.name().find('^') != std::string::npos)
    return error("a node needs a name without '^'");
  NodeSpec spec;
  spec.name = nd.name();
  spec.op_def = OpRegistry::Global()->Find(nd.op());
  if (spec.op_def == nullptr)
    return error("op not registered in this build of placeflow", Code::kNotFound);
  for (const auto& [name, value] : nd.attr()) {
    if (name == kOutputTypes || name == kOutputShapes || name == "_class") continue;
    auto declared = spec.op_def->attrs().find(name);
    auto v = AttrFromProto(value, declared != spec.op_def->attrs().end() && declared->second
                                      ? &*declared->second
                                      : nullptr);
    if (!v.ok())
      return error(fmt::format("attr '{}': {}", name, v.status().message()), v.status().code());
    spec.attrs[name] = std::move(v).value();
  }
  for (const InputRef& r : inputs) {
    if (r.back_edge) {  // a loop's NextIteration, wired once it is in
      spec.inputs.emplace_back();
      continue;
    }
    Node* src = graph->FindNode(r.node);  // InputsFirst put it before
    if (r.control) {
      spec.control_inputs.push_back(src);
    } else if (r.index < src->num_outputs()) {
      spec.inputs.emplace_back(src, r.index);
    } else {
      return error(fmt::format("input '{}:{}' of a node with {} outputs", r.node, r.index,
                               src->num_outputs()));
    }
  }
  if (internal::HasBackEdges(inputs)) {
    PF_RETURN_IF_ERROR(internal::StandInForBackEdges(
        fmt::format("Placed graph node '{}' (op: '{}')", nd.name(), nd.op()), &spec.inputs));
  }
  auto types = nd.attr().find(kOutputTypes), shapes = nd.attr().find(kOutputShapes);
  if (types == nd.attr().end() || shapes == nd.attr().end() ||
      types->second.list().type_size() != shapes->second.list().shape_size())
    return error("no output dtypes and shapes of the same count");
  for (int k = 0; k < types->second.list().type_size(); ++k) {
    auto t = DTypeFromProto(types->second.list().type(k));
    auto shape = ShapeFromProto(shapes->second.list().shape(k));
    if (!t.ok() || !shape.ok()) {
      const Status& cause = t.ok() ? shape.status() : t.status();
      return error(fmt::format("output {}: {}", k, cause.message()), cause.code());
    }
    spec.output_dtypes.push_back(*t);
    spec.output_shapes.push_back(*shape);
  }
  spec.requested_device = nd.device();
  graph->AddNode(std::move(spec))->set_assigned_device(nd.device());
  return Status();
}

}  // namespace

bool IsTextProtoPath(const std::string& path) {
  return path.size() >= 6 && path.compare(path.size() - 6, 6, ".pbtxt") == 0;
}

StatusOr<std::string> SerializeGraphDef(const Graph& graph,
                                        const std::map<std::string, std::string>& placement) {
  PF_ASSIGN_OR_RETURN(tfp::GraphDef def, ToGraphDef(graph, placement));
  std::string out;
  if (!def.SerializeToString(&out)) return errors::Internal("GraphDef serialization failed");
  return out;
}

StatusOr<std::string> GraphDefText(const Graph& graph,
                                   const std::map<std::string, std::string>& placement) {
  PF_ASSIGN_OR_RETURN(tfp::GraphDef def, ToGraphDef(graph, placement));
  std::string out;
  if (!google::protobuf::TextFormat::PrintToString(def, &out))
    return errors::Internal("GraphDef text formatting failed");
  return out;
}

Status ImportGraphDefFromBytes(std::string_view bytes, Graph* graph,
                               const ImportGraphDefOptions& options, bool text) {
  tfp::GraphDef def;
  bool parsed = text ? google::protobuf::TextFormat::ParseFromString(std::string(bytes), &def)
                     : def.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  if (!parsed || bytes.size() > INT32_MAX)
    return errors::DataLoss("cannot parse a GraphDef from ", bytes.size(), " bytes");
  return ImportGraphDefProto(std::move(def), graph, options);
}

Status ImportGraphDefProto(tfp::GraphDef def, Graph* graph, const ImportGraphDefOptions& options) {
  PF_RETURN_IF_ERROR(internal::RewriteTensorFlowNodes(&def));
  InputRefs inputs;
  PF_ASSIGN_OR_RETURN(std::vector<int> order, internal::InputsFirst(def, &inputs));
  std::map<std::string, Shape> merge_shapes;
  for (const auto& [name, refs] : inputs) {
    if (!internal::HasBackEdges(refs)) continue;
    PF_RETURN_IF_ERROR(LoopMergeShapes(def, order, options, inputs, &merge_shapes));
    break;
  }
  PF_RETURN_IF_ERROR(AddNodes(def, order, {options, inputs, merge_shapes}, graph));
  // The imported variables join the graph's variable collections (a GraphDef has none:
  // floating-point variables count as trainable; ImportMetaGraph sets both lists exactly).
  for (const tfp::NodeDef& nd : def.node()) {
    Node* n = graph->FindNode(ImportedName(options, nd.name()));
    if (n == nullptr || !n->op_def().is_variable()) continue;
    graph->AddToCollection(kGlobalVariables, n);
    const DType t = n->output_dtype(0);
    if (t == DT_FLOAT || t == DT_DOUBLE || t == DT_HALF || t == DT_BFLOAT16)
      graph->AddToCollection(kTrainableVariables, n);
  }
  return Status();
}

void ExportGraphDef(const Graph& graph, const std::string& path,
                    const std::map<std::string, std::string>& placement) {
  auto bytes =
      IsTextProtoPath(path) ? GraphDefText(graph, placement) : SerializeGraphDef(graph, placement);
  ThrowIfError(bytes.status());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) ThrowIfError(errors::NotFound("cannot open '", path, "' for writing"));
  f.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  f.close();
  if (!f) ThrowIfError(errors::Internal("cannot write GraphDef to '", path, "'"));
}

void ImportGraphDef(const std::string& path, Graph* graph, const ImportGraphDefOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) ThrowIfError(errors::NotFound("cannot open GraphDef file '", path, "'"));
  std::stringstream ss;
  ss << f.rdbuf();
  Status s = ImportGraphDefFromBytes(ss.str(), graph, options, IsTextProtoPath(path));
  if (!s.ok()) ThrowIfError(Status(s.code(), fmt::format("{} (file '{}')", s.message(), path)));
}

Status PlacedGraphToProto(const std::vector<const Node*>& nodes, tfp::GraphDef* def) {
  const std::unordered_set<const Node*> encoded(nodes.begin(), nodes.end());
  for (const Node* n : nodes) {
    tfp::NodeDef* nd = def->add_node();
    PF_RETURN_IF_ERROR(NodeToDef(*n, n->assigned_device(), nd, &encoded));
    auto* types = (*nd->mutable_attr())[kOutputTypes].mutable_list();
    auto* shapes = (*nd->mutable_attr())[kOutputShapes].mutable_list();
    for (int i = 0; i < n->num_outputs(); ++i) {
      PF_ASSIGN_OR_RETURN(tfp::DataType t, DTypeToProto(n->output_dtype(i)));
      types->add_type(t);
      ShapeToProto(n->output_shape(i), shapes->add_shape());
    }
  }
  return Status();
}

StatusOr<std::unique_ptr<Graph>> PlacedGraphFromProto(const tfp::GraphDef& def) {
  InputRefs inputs;
  PF_ASSIGN_OR_RETURN(std::vector<int> order, internal::InputsFirst(def, &inputs));
  auto graph = std::make_unique<Graph>();
  for (int i : order)
    PF_RETURN_IF_ERROR(AddPlacedNode(def.node(i), inputs.at(def.node(i).name()), graph.get()));
  const auto find = [&graph](const std::string& name) { return graph->FindNode(name); };
  for (int i : order) {
    const tfp::NodeDef& nd = def.node(i);
    const std::vector<InputRef>& refs = inputs.at(nd.name());
    if (!internal::HasBackEdges(refs)) continue;
    PF_RETURN_IF_ERROR(internal::CloseBackEdges(
        refs, fmt::format("Placed graph node '{}' (op: '{}')", nd.name(), nd.op()), find,
        graph->FindNode(nd.name()), graph.get()));
  }
  return graph;
}

StatusOr<Output> FindOutput(const Graph& graph, const std::string& name) {
  auto t = ParseTensorName(name);
  Node* n = t.ok() ? graph.FindNode(t->node) : nullptr;
  if (n == nullptr || t->index >= n->num_outputs())
    return errors::InvalidArgument("Tensor '", name, "' is not in the graph");
  return Output(n, t->index);
}

}  // namespace pf
