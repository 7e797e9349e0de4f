// Scope: where the next op goes — graph, name scope, device scope, colocation, control
// dependencies and variable scope. Scopes are values: every With*/New* returns a new one.
//
//   pf::Scope root = pf::Scope::Root(&g);
//   pf::Scope tower = root.NewSubScope("tower_0").WithDevice("/gpu:0");   // ops: tower_0/...
//   pf::Scope vs = tower.WithVariableScope("affine0");                     // variables:
//   affine0/... pf::Output y = pf::ops::MatMul(tower.WithOpName("logits"), x, w);     // node
//   "tower_0/logits" pf::Scope after = root.WithControlDependencies({init});
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "placeflow/core/device_name.h"
#include "placeflow/graph/graph.h"
#include "placeflow/graph/op_registry.h"

namespace pf {

class Variable;
struct VariableRequest;
// tf.variable_scope(custom_getter=...): sees every GetVariable in its scope and returns the
// variable, usually by calling `next` with a changed request (graph/variable.h).
using VariableGetterFn = std::function<Variable(const VariableRequest&)>;
using CustomGetter =
    std::function<Variable(const VariableRequest& request, const VariableGetterFn& next)>;

// Variable-scope reuse, as tf.variable_scope(reuse=...).
enum class Reuse {
  kInherit,    // keep the enclosing scope's mode (the root creates)
  kCreate,     // reuse=False: GetVariable must create; an existing name is an error
  kReuse,      // reuse=True: GetVariable must find an existing variable
  kAutoReuse,  // reuse=tf.AUTO_REUSE: find or create
};

class Scope {
 public:
  static Scope Root(Graph* graph);

  Graph* graph() const { return graph_; }
  // A child name scope; its name is made unique in the graph ("tower", "tower_1").
  Scope NewSubScope(std::string_view name) const;
  // The next op is named `name` (under the name scope), uniquified if taken.
  Scope WithOpName(std::string_view name) const;
  // Nested device scope: fields set in `device` replace the enclosing ones, like tf.device.
  // Throws pf::Error for a malformed specification.
  Scope WithDevice(std::string_view device) const;
  // Ops built in this scope share a device with `op` (and take its requested device).
  Scope ColocateWith(const Operation& op) const;
  Scope WithControlDependencies(const std::vector<Operation>& deps) const;
  Scope WithNoControlDependencies() const;
  // A variable scope (also opens a name scope of that name).
  Scope WithVariableScope(std::string_view name, Reuse reuse = Reuse::kInherit) const;
  Scope WithReuse(Reuse reuse) const;
  // GetVariable calls in this scope go through `getter`; a getter set inside another one is
  // called first, and its `next` is the enclosing getter.
  Scope WithCustomGetter(CustomGetter getter) const;
  Scope WithNoCustomGetter() const;
  // An absolute name scope, used as is (GetVariable puts "affine0/w/..." under the variable).
  Scope WithExactNameScope(std::string_view name_scope) const;

  const std::string& name_scope() const { return name_scope_; }
  const std::string& variable_scope() const { return var_scope_; }
  Reuse reuse() const { return reuse_; }
  const DeviceName& device() const { return device_; }
  std::string device_string() const { return device_.ToString(); }
  const std::vector<Node*>& control_dependencies() const { return control_deps_; }
  const std::vector<Node*>& colocation() const { return colocate_; }
  const std::shared_ptr<const CustomGetter>& custom_getter() const { return getter_; }

  // Full unique name for a new op: "<name scope>/<op name or default>".
  std::string GetUniqueNameForOp(std::string_view default_name) const;
  // "<name scope>/<name>" without uniquifying.
  std::string Qualify(std::string_view name) const;

 private:
  explicit Scope(Graph* g) : graph_(g) {}
  Graph* graph_;
  std::string name_scope_;
  std::string op_name_;
  DeviceName device_;
  std::vector<Node*> colocate_;
  std::vector<Node*> control_deps_;
  std::string var_scope_;
  Reuse reuse_ = Reuse::kInherit;
  std::shared_ptr<const CustomGetter> getter_;
};

// Adds one node after checking it against its op schema. Errors at build time are thrown as
// pf::Error and name the node, the op and the input shapes.
//
//   Node* n = pf::NodeBuilder(scope, "MatMul").Input(a).Input(b).Attr("transpose_a",
//   true).Finalize();
class NodeBuilder {
 public:
  NodeBuilder(const Scope& scope, std::string_view op, std::string_view default_name = {});
  NodeBuilder& Input(Output o);
  NodeBuilder& InputList(const std::vector<Output>& list);
  NodeBuilder& Attr(std::string name, AttrValue v);
  NodeBuilder& ControlInput(Node* n);
  Node* Finalize();  // throws pf::Error naming the node, the op and the input shapes

 private:
  StatusOr<Node*> TryFinalize();
  struct InputArg {
    bool is_list;
    std::vector<Output> values;
  };
  Status Check(NodeSpec* spec);
  Scope scope_;  // a copy: NodeBuilder b(scope.WithOpName("x"), ...) must not dangle
  std::string op_;
  std::string default_name_;
  std::vector<InputArg> args_;
  AttrMap attrs_;
  std::vector<Node*> extra_control_;
};

// Runs `node`'s shape function on the given input shapes and values (used at build time and
// by the executor at run time whenever a node's real input shapes differ from its static ones).
// A pf::Error thrown inside (a Shape past kMaxRank) becomes the Status; a fully defined output
// shape whose element count overflows int64 is an error.
Status RunShapeFn(const OpDef& op, const AttrMap& attrs, std::vector<Shape> input_shapes,
                  std::vector<DType> input_dtypes, std::vector<const Tensor*> input_values,
                  int num_outputs, std::vector<Shape>* out);

}  // namespace pf
