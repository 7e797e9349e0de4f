#include "placeflow/graph/scope.h"

#include <fmt/ranges.h>

#include <limits>

#include "placeflow/graph/variable.h"

namespace pf {
namespace {

// The most outputs one node may have (Split's num_split, a list output's length).
constexpr int64_t kMaxOutputs = int64_t{1} << 20;

std::string Join(const std::string& prefix, std::string_view name) {
  return prefix.empty() ? std::string(name) : prefix + "/" + std::string(name);
}

// The name TensorFlow's Python API gives an unnamed node of op `op`: the op type ("MatMul",
// "Relu", "Sum"), except the ops Python builds through operators and snake_case wrappers
// (`x + y` is "add", tf.concat is "concat"), so graphs built here and in TensorFlow name their
// nodes alike and GraphDefs exchanged both ways keep their names.
std::string_view TfDefaultName(std::string_view op) {
  static constexpr std::pair<std::string_view, std::string_view> kSnakeCase[] = {
      {"Add", "add"},
      {"AddV2", "add"},
      {"Sub", "sub"},
      {"Mul", "mul"},
      {"Div", "truediv"},
      {"RealDiv", "truediv"},
      {"Pow", "pow"},
      {"Concat", "concat"},
      {"ConcatV2", "concat"},
      {"Split", "split"},
      {"Transpose", "transpose"},
      {"OneHot", "one_hot"},
      {"ZerosLike", "zeros_like"},
      {"OnesLike", "ones_like"},
  };
  for (const auto& [type, name] : kSnakeCase)
    if (type == op) return name;
  return op;
}

}  // namespace

Scope Scope::Root(Graph* graph) { return Scope(graph); }

Scope Scope::NewSubScope(std::string_view name) const {
  Scope s = *this;
  s.op_name_.clear();
  if (name.empty()) return s;
  s.name_scope_ = graph_->UniqueName(Join(name_scope_, name));
  return s;
}

Scope Scope::WithOpName(std::string_view name) const {
  Scope s = *this;
  s.op_name_ = std::string(name);
  return s;
}

Scope Scope::WithDevice(std::string_view device) const {
  DeviceName parsed = DeviceName::TryParse(device).ValueOrThrow();
  Scope s = *this;
  DeviceName::MergeOverride(&s.device_, parsed);
  return s;
}

Scope Scope::ColocateWith(const Operation& op) const {
  Scope s = *this;
  s.colocate_.push_back(op.node);
  return s;
}

Scope Scope::WithControlDependencies(const std::vector<Operation>& deps) const {
  Scope s = *this;
  for (const Operation& d : deps) s.control_deps_.push_back(d.node);
  return s;
}

Scope Scope::WithNoControlDependencies() const {
  Scope s = *this;
  s.control_deps_.clear();
  return s;
}

Scope Scope::WithVariableScope(std::string_view name, Reuse reuse) const {
  Scope s = NewSubScope(name);
  s.var_scope_ = Join(var_scope_, name);
  // Like TensorFlow, reuse is sticky: inside a reusing scope every child scope reuses too.
  if (reuse != Reuse::kInherit && reuse_ != Reuse::kReuse && reuse_ != Reuse::kAutoReuse)
    s.reuse_ = reuse;
  if (reuse == Reuse::kAutoReuse && reuse_ != Reuse::kReuse) s.reuse_ = reuse;
  return s;
}

Scope Scope::WithReuse(Reuse reuse) const {
  Scope s = *this;
  s.reuse_ = reuse;
  return s;
}

Scope Scope::WithCustomGetter(CustomGetter getter) const {
  Scope s = *this;
  if (!getter_) {
    s.getter_ = std::make_shared<const CustomGetter>(std::move(getter));
    return s;
  }
  s.getter_ = std::make_shared<const CustomGetter>(
      [outer = getter_, inner = std::move(getter)](const VariableRequest& r,
                                                   const VariableGetterFn& next) {
        return inner(r, [&](const VariableRequest& q) { return (*outer)(q, next); });
      });
  return s;
}

Scope Scope::WithNoCustomGetter() const {
  Scope s = *this;
  s.getter_.reset();
  return s;
}

Scope Scope::WithExactNameScope(std::string_view name_scope) const {
  Scope s = *this;
  s.name_scope_ = std::string(name_scope);
  s.op_name_.clear();
  return s;
}

std::string Scope::GetUniqueNameForOp(std::string_view default_name) const {
  return graph_->UniqueName(
      Join(name_scope_, op_name_.empty() ? default_name : std::string_view(op_name_)));
}

std::string Scope::Qualify(std::string_view name) const { return Join(name_scope_, name); }

NodeBuilder::NodeBuilder(const Scope& scope, std::string_view op, std::string_view default_name)
    : scope_(scope),
      op_(op),
      default_name_(default_name.empty() ? TfDefaultName(op) : default_name) {}

NodeBuilder& NodeBuilder::Input(Output o) {
  args_.push_back({false, {o}});
  return *this;
}

NodeBuilder& NodeBuilder::InputList(const std::vector<Output>& list) {
  args_.push_back({true, list});
  return *this;
}

NodeBuilder& NodeBuilder::Attr(std::string name, AttrValue v) {
  attrs_[std::move(name)] = std::move(v);
  return *this;
}

NodeBuilder& NodeBuilder::ControlInput(Node* n) {
  extra_control_.push_back(n);
  return *this;
}

Node* NodeBuilder::Finalize() { return TryFinalize().ValueOrThrow(); }

Status RunShapeFn(const OpDef& op, const AttrMap& attrs, std::vector<Shape> input_shapes,
                  std::vector<DType> input_dtypes, std::vector<const Tensor*> input_values,
                  int num_outputs, std::vector<Shape>* out) {
  ShapeContext c(op, attrs, std::move(input_shapes), std::move(input_dtypes),
                 std::move(input_values), num_outputs);
  if (op.shape_fn()) {
    // Shape throws past kMaxRank (it has no Status to return).
    try {
      PF_RETURN_IF_ERROR(op.shape_fn()(c));
    } catch (const Error& e) {
      return e.status();
    }
  }
  for (int i = 0; i < num_outputs; ++i) {
    const Shape& s = c.output_shapes()[i];
    if (s.IsFullyDefined() && s.num_elements() < 0) {
      return errors::InvalidArgument("Output ", i, " of shape ", s.ToString(), " has more than ",
                                     std::numeric_limits<int64_t>::max(), " elements");
    }
  }
  *out = std::move(c.output_shapes());
  return Status::OK();
}

// Resolves a type spec ("T" or "int32") against the attrs.
static StatusOr<DType> ResolveType(const std::string& spec, const AttrMap& attrs) {
  auto it = attrs.find(spec);
  if (it != attrs.end() && std::holds_alternative<DType>(it->second))
    return std::get<DType>(it->second);
  return ParseDType(spec);
}

// One input tensor `o` of argument `arg`: from this graph, and of the argument's type, which it
// sets when the argument's type attr is still open (`type_source`: type attr -> the argument
// that set it; `requested`: the attrs the caller set).
static Status CheckInput(const OpDef& def, const ArgDef& arg, const Output& o,
                         const std::string& op, Graph* graph, const AttrMap& requested,
                         std::map<std::string, std::string>* type_source, NodeSpec* spec) {
  if (o.node == nullptr)
    return errors::InvalidArgument("Input '", arg.name, "' of '", op, "' Op is a null Output");
  if (graph->FindNode(o.node->name()) != o.node) {
    return errors::InvalidArgument("Input '", arg.name, "' of '", op, "' Op comes from node '",
                                   o.node->name(), "' of another graph");
  }
  DType t = o.dtype();
  if (def.type_attrs().count(arg.type)) {
    auto it = spec->attrs.find(arg.type);
    if (it == spec->attrs.end() || !type_source->count(arg.type)) {
      if (it != spec->attrs.end() && std::get<DType>(it->second) != t &&
          requested.count(arg.type)) {
        return errors::InvalidArgument("Input '", arg.name, "' of '", op, "' Op has type ",
                                       DTypeName(t), " that does not match the requested ",
                                       arg.type, "=", DTypeName(std::get<DType>(it->second)));
      }
      spec->attrs[arg.type] = t;
      (*type_source)[arg.type] = arg.name;
    } else if (std::get<DType>(it->second) != t) {
      return errors::InvalidArgument("Input '", arg.name, "' of '", op, "' Op has type ",
                                     DTypeName(t), " that does not match type ",
                                     DTypeName(std::get<DType>(it->second)), " of argument '",
                                     (*type_source)[arg.type], "'.");
    }
  } else {
    PF_ASSIGN_OR_RETURN(DType want, ParseDType(arg.type));
    if (want != t) {
      return errors::InvalidArgument("Input '", arg.name, "' of '", op, "' Op has type ",
                                     DTypeName(t), " that does not match expected type of ",
                                     DTypeName(want), ".");
    }
  }
  return Status::OK();
}

// Defaults, required attrs, type constraints, shape attrs.
static Status CheckAttrs(const OpDef& def, const std::string& op, const std::string& where,
                         NodeSpec* spec) {
  for (const auto& [name, default_value] : def.attrs()) {
    if (spec->attrs.count(name)) continue;
    if (!default_value) return errors::InvalidArgument("NodeDef missing attr '", name, "'", where);
    spec->attrs[name] = *default_value;
  }
  for (const auto& [name, value] : spec->attrs) {
    if (!def.attrs().count(name))
      return errors::InvalidArgument("NodeDef mentions attr '", name, "' not in Op '", op, "'");
  }
  for (const auto& [name, allowed] : def.type_attrs()) {
    DType t = std::get<DType>(spec->attrs[name]);
    if (std::find(allowed.begin(), allowed.end(), t) == allowed.end()) {
      std::vector<std::string_view> names;
      for (DType d : allowed) names.push_back(DTypeName(d));
      return errors::InvalidArgument(
          "Value for attr '", name, "' of ", DTypeName(t),
          " is not in the list of allowed values: ", fmt::join(names, ", "), where);
    }
  }
  for (const auto& [name, value] : spec->attrs) {
    // Only -1 means unknown (TensorFlow's PartialTensorShape rule).
    if (const Shape* shape = std::get_if<Shape>(&value)) {
      for (int64_t d : shape->dims()) {
        if (d < -1) {
          return errors::InvalidArgument("Dimension ", d, " in attr '", name,
                                         "' = ", shape->ToString(), " must be >= -1", where);
        }
      }
    }
  }
  return Status::OK();
}

// The output dtypes, list outputs expanded by their length attrs.
static Status AddOutputDTypes(const OpDef& def, const std::string& where, NodeSpec* spec) {
  for (const ArgDef& arg : def.outputs()) {
    PF_ASSIGN_OR_RETURN(DType t, ResolveType(arg.type, spec->attrs));
    int64_t n = 1;
    if (!arg.number_attr.empty()) {
      const int64_t* len = std::get_if<int64_t>(&spec->attrs[arg.number_attr]);
      if (len == nullptr)
        return errors::InvalidArgument("Attr '", arg.number_attr, "' must be an int", where);
      // A bound, so that a huge count is an error and not bad_alloc or gigabytes of nodes.
      if (*len > kMaxOutputs) {
        return errors::InvalidArgument("Attr '", arg.number_attr, "' = ", *len,
                                       " asks for more outputs than the ", kMaxOutputs,
                                       " a node may have", where);
      }
      n = *len;
    }
    for (int64_t i = 0; i < n; ++i) spec->output_dtypes.push_back(t);
  }
  return Status::OK();
}

// Static shapes, with the values of constant inputs.
static Status InferShapes(const OpDef& def, const std::string& where, NodeSpec* spec) {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  std::vector<const Tensor*> values;
  for (const Output& o : spec->inputs) {
    shapes.push_back(o.shape());
    dtypes.push_back(o.dtype());
    values.push_back(o.node->op_def().is_constant() ? &o.node->attr<Tensor>("value") : nullptr);
  }
  Status s = RunShapeFn(def, spec->attrs, shapes, dtypes, values,
                        static_cast<int>(spec->output_dtypes.size()), &spec->output_shapes);
  if (!s.ok()) {
    std::vector<std::string> in;
    for (const Shape& sh : shapes) in.push_back(sh.ToString());
    return Status(s.code(), fmt::format("{}{} with input shapes: {}.", s.message(), where,
                                        fmt::join(in, ", ")));
  }
  return Status::OK();
}

Status NodeBuilder::Check(NodeSpec* spec) {
  const OpDef* def = OpRegistry::Global()->Find(op_);
  if (def == nullptr) return errors::NotFound("Op type not registered '", op_, "'");
  spec->op_def = def;
  const std::string where = fmt::format(" for node '{}' (op: '{}')", spec->name, op_);
  if (args_.size() != def->inputs().size()) {
    return errors::InvalidArgument("Op '", op_, "' takes ", def->inputs().size(), " inputs but ",
                                   args_.size(), " were given", where);
  }
  // Infer type and length attrs from the inputs; check fixed types and agreement.
  std::map<std::string, std::string> type_source;  // type attr -> arg that set it
  for (size_t a = 0; a < args_.size(); ++a) {
    const ArgDef& arg = def->inputs()[a];
    const InputArg& in = args_[a];
    if (in.is_list != !arg.number_attr.empty()) {
      return errors::InvalidArgument(
          "Input '", arg.name, "' of '", op_, "' Op ",
          in.is_list ? "takes a single tensor, not a list" : "takes a list");
    }
    if (in.is_list) {
      if (in.values.empty())
        return errors::InvalidArgument("Input '", arg.name, "' of '", op_,
                                       "' Op needs at least one tensor");
      spec->attrs[arg.number_attr] = static_cast<int64_t>(in.values.size());
    }
    for (const Output& o : in.values) {
      PF_RETURN_IF_ERROR(CheckInput(*def, arg, o, op_, scope_.graph(), attrs_, &type_source, spec));
      spec->inputs.push_back(o);
    }
  }
  PF_RETURN_IF_ERROR(CheckAttrs(*def, op_, where, spec));
  PF_RETURN_IF_ERROR(AddOutputDTypes(*def, where, spec));
  return InferShapes(*def, where, spec);
}

StatusOr<Node*> NodeBuilder::TryFinalize() {
  NodeSpec spec;
  spec.name = scope_.GetUniqueNameForOp(default_name_);
  spec.attrs = attrs_;
  PF_RETURN_IF_ERROR(Check(&spec));
  spec.requested_device = scope_.device_string();
  for (Node* c : scope_.colocation()) {
    // TensorFlow: an op colocated with another takes that op's device.
    spec.requested_device = c->requested_device();
    std::vector<std::string> group =
        c->colocation_group().empty() ? std::vector<std::string>{c->name()} : c->colocation_group();
    for (auto& g : group) {
      if (std::find(spec.colocation.begin(), spec.colocation.end(), g) == spec.colocation.end())
        spec.colocation.push_back(g);
    }
  }
  spec.control_inputs = scope_.control_dependencies();
  for (Node* c : extra_control_) spec.control_inputs.push_back(c);
  return scope_.graph()->AddNode(std::move(spec));
}

}  // namespace pf
