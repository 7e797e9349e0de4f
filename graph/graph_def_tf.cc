#include "placeflow/graph/graph_def_tf.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "placeflow/graph/graph.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/graph/proto_codecs.h"
#include "placeflow/io/proto/graph.pb.h"

namespace pf::internal {
namespace {

namespace tfp = ::tensorflow;

struct Rename {
  const char* from;
  const char* to;
  const char* dtype_attr;  // renamed to "T" when set
};

// TensorFlow ops that are placeflow ops under another name (and attr name).
constexpr Rename kRenames[] = {
    {"AddV2", "Add", nullptr},
    {"RealDiv", "Div", nullptr},
    {"VariableV2", "Variable", nullptr},
    {"VarHandleOp", "Variable", nullptr},
    {"ReadVariableOp", "Identity", "dtype"},
    {"AssignVariableOp", "Assign", "dtype"},
    {"AssignAddVariableOp", "AssignAdd", "dtype"},
    {"AssignSubVariableOp", "AssignSub", "dtype"},
    // Control flow on reference tensors (a reference variable used in a cond or a loop): the
    // plain ops carry them too; graph.h ReferencedVariable sees through Enter and Switch, which
    // is what TensorFlow's cond and while_loop make (an update through a RefMerge's, RefExit's
    // or RefNextIteration's output is not supported).
    {"RefEnter", "Enter", nullptr},
    {"RefSwitch", "Switch", nullptr},
    {"RefMerge", "Merge", nullptr},
    {"RefExit", "Exit", nullptr},
    {"RefNextIteration", "NextIteration", nullptr},
};

bool Registered(const std::string& op) { return OpRegistry::Global()->Find(op) != nullptr; }

std::string Where(const tfp::NodeDef& nd) {
  return "GraphDef node '" + nd.name() + "' (op: '" + nd.op() + "')";
}

void RenameOp(tfp::NodeDef* nd) {
  if (Registered(nd->op())) return;  // a build that has the op itself uses it
  for (const Rename& r : kRenames) {
    if (nd->op() != r.from) continue;
    nd->set_op(r.to);
    auto* attrs = nd->mutable_attr();
    if (r.dtype_attr != nullptr && attrs->count(std::string(r.dtype_attr))) {
      const tfp::AttrValue dtype = attrs->at(std::string(r.dtype_attr));
      attrs->erase(std::string(r.dtype_attr));
      (*attrs)["T"] = dtype;
    }
    // Resource and sharing attrs have no meaning here: a handle is the variable.
    for (std::string a : {"container", "shared_name", "allowed_devices", "debug_name"})
      attrs->erase(a);
    return;
  }
}

std::vector<int> DataInputPositions(const tfp::NodeDef& nd) {
  std::vector<int> out;
  for (int i = 0; i < nd.input_size(); ++i)
    if (nd.input(i).empty() || nd.input(i)[0] != '^') out.push_back(i);
  return out;
}

using ByName = std::unordered_map<std::string, const tfp::NodeDef*>;

// The ints of the Const that `input` names (an int32 or int64 scalar or vector): nullopt when it
// names no Const; InvalidArgument, `what` naming the value, when the Const holds anything else.
StatusOr<std::optional<std::vector<int64_t>>> ConstInts(const ByName& by_name,
                                                        const tfp::NodeDef& nd,
                                                        const std::string& input,
                                                        const std::string& what) {
  auto name = ParseTensorName(input);
  auto it = name.ok() ? by_name.find(name->node) : by_name.end();
  if (it == by_name.end() || it->second->op() != "Const" ||
      !it->second->attr().count(std::string("value")))
    return std::optional<std::vector<int64_t>>();
  auto t = TensorFromProto(it->second->attr().at(std::string("value")).tensor());
  if (!t.ok() || (t->dtype() != DT_INT32 && t->dtype() != DT_INT64) || t->shape().rank() > 1) {
    return errors::InvalidArgument(Where(nd), ": ", what, " '", input,
                                   "' are not a scalar or vector of int32 or int64");
  }
  std::vector<int64_t> list;
  for (int64_t i = 0; i < t->num_elements(); ++i)
    list.push_back(t->dtype() == DT_INT32 ? t->data<int32_t>()[i] : t->data<int64_t>()[i]);
  return std::optional(std::move(list));
}

// A reduction whose axes come as a second input from a Const: the axes become the attr.
Status FoldReductionAxes(const ByName& by_name, tfp::NodeDef* nd) {
  const OpDef* def = OpRegistry::Global()->Find(nd->op());
  if (def == nullptr || !def->attrs().count("axes") || def->inputs().size() != 1) return Status();
  std::vector<int> data = DataInputPositions(*nd);
  if (data.size() != 2) return Status();
  PF_ASSIGN_OR_RETURN(auto axes, ConstInts(by_name, *nd, nd->input(data[1]), "axes"));
  if (!axes) {
    return errors::Unimplemented(Where(*nd), ": its axes ('", nd->input(data[1]),
                                 "') must come from a Const; placeflow's reductions take their "
                                 "axes as an attr");
  }
  nd->mutable_input()->erase(nd->mutable_input()->begin() + data[1]);
  auto* attrs = nd->mutable_attr();
  attrs->erase(std::string("Tidx"));
  if (axes->empty()) {  // TensorFlow reduces over no axis: the input as it is
    nd->set_op("Identity");
    attrs->erase(std::string("keep_dims"));
    return Status();
  }
  auto* l = (*attrs)["axes"].mutable_list();
  for (int64_t a : *axes) l->add_i(a);
  return Status();
}

// ConcatV2 (values..., axis) with its axis from a Const -> Concat with that "axis" attr.
Status FoldConcatAxis(const ByName& by_name, tfp::NodeDef* nd) {
  if (nd->op() != "ConcatV2" || Registered("ConcatV2")) return Status();
  std::vector<int> data = DataInputPositions(*nd);
  if (data.size() < 2) return errors::InvalidArgument(Where(*nd), ": no values and axis inputs");
  PF_ASSIGN_OR_RETURN(auto axis, ConstInts(by_name, *nd, nd->input(data.back()), "axis"));
  if (!axis || axis->size() != 1) {
    return errors::Unimplemented(Where(*nd), ": its axis ('", nd->input(data.back()),
                                 "') must be a scalar Const; placeflow's Concat takes its axis as "
                                 "an attr");
  }
  nd->mutable_input()->erase(nd->mutable_input()->begin() + data.back());
  nd->set_op("Concat");
  nd->mutable_attr()->erase(std::string("Tidx"));
  (*nd->mutable_attr())["axis"].set_i((*axis)[0]);
  return Status();
}

// IdentityN "n" -> Identity nodes "n", "n/output_1", ...; returns (n, i) -> the new name.
using OutputRenames = std::map<std::pair<std::string, int>, std::string>;

Status SplitIdentityN(const std::set<std::string>& taken, tfp::NodeDef* nd,
                      std::vector<tfp::NodeDef>* added, OutputRenames* renames) {
  std::vector<int> data = DataInputPositions(*nd);
  auto t = nd->attr().find("T");
  if (t == nd->attr().end() || t->second.list().type_size() != static_cast<int>(data.size()))
    return errors::InvalidArgument(Where(*nd), ": attr 'T' does not list one type per input");
  const auto types = t->second.list().type();  // a copy: *nd is replaced below
  std::vector<std::string> control;
  for (const std::string& in : nd->input())
    if (!in.empty() && in[0] == '^') control.push_back(in);
  const tfp::NodeDef original = *nd;
  for (size_t i = 0; i < data.size(); ++i) {
    tfp::NodeDef one;
    std::string name = i == 0 ? original.name() : original.name() + "/output_" + std::to_string(i);
    while (i > 0 && taken.count(name)) name += "_";
    one.set_name(name);
    one.set_op("Identity");
    one.set_device(original.device());
    one.add_input(original.input(data[i]));
    for (const std::string& c : control) one.add_input(c);
    (*one.mutable_attr())["T"].set_type(static_cast<tfp::DataType>(types.Get(static_cast<int>(i))));
    (*renames)[{original.name(), static_cast<int>(i)}] = name;
    if (i == 0)
      *nd = std::move(one);
    else
      added->push_back(std::move(one));
  }
  return Status();
}

// Points inputs naming a split IdentityN's outputs at the new nodes.
void RewriteInputs(const OutputRenames& renames, tfp::NodeDef* nd) {
  if (renames.empty()) return;
  std::vector<std::string> out;
  for (const std::string& in : nd->input()) {
    const bool control = !in.empty() && in[0] == '^';
    auto name = ParseTensorName(control ? in.substr(1) : in);
    if (!name.ok() || !renames.count({name->node, 0})) {
      out.push_back(in);
      continue;
    }
    if (control) {
      for (int i = 0; renames.count({name->node, i}); ++i)
        out.push_back("^" + renames.at({name->node, i}));
      continue;
    }
    auto it = renames.find({name->node, name->index});
    out.push_back(it == renames.end() ? in : it->second);  // a bad index fails at import
  }
  nd->mutable_input()->Clear();
  for (std::string& s : out) nd->add_input(std::move(s));
}

// Drops unused VarIsInitializedOp nodes; one that is used is an error.
Status DropVarIsInitialized(tfp::GraphDef* def) {
  std::set<std::string> dropped;
  for (const tfp::NodeDef& nd : def->node())
    if (nd.op() == "VarIsInitializedOp" && !Registered(nd.op())) dropped.insert(nd.name());
  if (dropped.empty()) return Status();
  for (const tfp::NodeDef& nd : def->node()) {
    for (const std::string& in : nd.input()) {
      auto name = ParseTensorName(!in.empty() && in[0] == '^' ? in.substr(1) : in);
      if (name.ok() && dropped.count(name->node)) {
        return errors::Unimplemented("GraphDef node '", name->node,
                                     "' (op: 'VarIsInitializedOp') is used by node '", nd.name(),
                                     "': placeflow has no op that tests whether a variable is "
                                     "initialised");
      }
    }
  }
  google::protobuf::RepeatedPtrField<tfp::NodeDef> kept;
  for (tfp::NodeDef& nd : *def->mutable_node())
    if (!dropped.count(nd.name())) *kept.Add() = std::move(nd);
  def->mutable_node()->Swap(&kept);
  return Status();
}

// A TF stack's handle is a resource; placeflow's StackV2 gives an int64. The nodes that carry a
// StackV2's handle on (a loop gradient's Enter, and whatever forwards it with a "T" of
// DT_RESOURCE) carry int64 here.
void RetypeStackHandles(tfp::GraphDef* def) {
  std::unordered_map<std::string, std::vector<tfp::NodeDef*>> consumers;
  std::vector<const tfp::NodeDef*> todo;
  for (tfp::NodeDef& nd : *def->mutable_node()) {
    if (nd.op() == "StackV2") todo.push_back(&nd);
    for (int i : DataInputPositions(nd)) {
      auto name = ParseTensorName(nd.input(i));
      if (name.ok()) consumers[name->node].push_back(&nd);
    }
  }
  while (!todo.empty()) {
    const tfp::NodeDef* from = todo.back();
    todo.pop_back();
    for (tfp::NodeDef* c : consumers[from->name()]) {
      auto t = c->mutable_attr()->find("T");
      if (t == c->mutable_attr()->end() || t->second.type() != tfp::DT_RESOURCE) continue;
      t->second.set_type(tfp::DT_INT64);
      todo.push_back(c);
    }
  }
}

}  // namespace

Status RewriteTensorFlowNodes(tfp::GraphDef* def) {
  PF_RETURN_IF_ERROR(DropVarIsInitialized(def));
  std::set<std::string> taken;
  for (const tfp::NodeDef& nd : def->node()) taken.insert(nd.name());
  std::vector<tfp::NodeDef> added;
  OutputRenames renames;
  for (tfp::NodeDef& nd : *def->mutable_node()) {
    RenameOp(&nd);
    if (nd.op() == "IdentityN" && !Registered("IdentityN"))
      PF_RETURN_IF_ERROR(SplitIdentityN(taken, &nd, &added, &renames));
  }
  for (tfp::NodeDef& nd : added) *def->add_node() = std::move(nd);
  RetypeStackHandles(def);
  ByName by_name;
  for (const tfp::NodeDef& nd : def->node()) by_name[nd.name()] = &nd;
  for (tfp::NodeDef& nd : *def->mutable_node()) {
    RewriteInputs(renames, &nd);
    PF_RETURN_IF_ERROR(FoldReductionAxes(by_name, &nd));
    PF_RETURN_IF_ERROR(FoldConcatAxis(by_name, &nd));
  }
  return Status();
}

}  // namespace pf::internal
