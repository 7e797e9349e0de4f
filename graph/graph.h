// Graph: nodes joined by data edges (Output -> input slot) and control edges.
//
//   pf::Graph g;
//   pf::Scope root = pf::Scope::Root(&g);
//   pf::Output c = pf::ops::Const(root, 3.f);
//   pf::Node* n = g.FindNode("Const");       // nullptr when absent
//   n->requested_device();                   // "" unless a device scope set one
//   for (const pf::Node* node : g.nodes()) ...
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "placeflow/core/dtype.h"
#include "placeflow/core/shape.h"
#include "placeflow/graph/attr.h"

namespace pf {

class Node;
class OpDef;
struct ArgDef;

// One output of a node: what flows along a data edge.
struct Output {
  Node* node = nullptr;
  int index = 0;

  Output() = default;
  Output(Node* n, int i = 0) : node(n), index(i) {}  // NOLINT: a Node converts to its output 0
  DType dtype() const;
  const Shape& shape() const;  // the statically inferred shape
  std::string name() const;    // "node:index"
  bool operator==(const Output& o) const { return node == o.node && index == o.index; }
  bool operator<(const Output& o) const;
};

// A node used for its effect (a target in Session::Run, a control dependency).
struct Operation {
  Node* node = nullptr;
  Operation() = default;
  Operation(Node* n) : node(n) {}               // NOLINT
  Operation(const Output& o) : node(o.node) {}  // NOLINT
  const std::string& name() const;
};

struct Edge {
  Node* src;
  int src_output;  // -1 for a control edge
  Node* dst;
  int dst_input;  // -1 for a control edge
  bool IsControl() const { return src_output < 0; }
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& op() const;
  const OpDef& op_def() const { return *op_def_; }
  const AttrMap& attrs() const { return attrs_; }
  template <typename T>
  const T& attr(std::string_view name) const {
    return std::get<T>(attrs_.find(name)->second);
  }
  bool HasAttr(std::string_view name) const { return attrs_.find(name) != attrs_.end(); }
  // Changes an attr the op declares (a runtime filling in what it decided, on its own copy of
  // a node); the node's shapes are not inferred again.
  void SetAttr(const std::string& name, AttrValue value) { attrs_[name] = std::move(value); }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Output& input(int i) const { return inputs_[i]; }
  const std::vector<Output>& inputs() const { return inputs_; }
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }
  int num_outputs() const { return static_cast<int>(output_dtypes_.size()); }
  DType output_dtype(int i) const { return output_dtypes_[i]; }
  const Shape& output_shape(int i) const { return output_shapes_[i]; }
  DType input_dtype(int i) const;
  // True when input i is a variable reference (the op updates the variable in place).
  bool IsRefInput(int i) const;
  // The op's argument that input (output) i belongs to, list arguments expanded; nullptr for a
  // tensor no argument declares.
  const ArgDef* input_arg(int i) const;
  const ArgDef* output_arg(int i) const;
  // Out-edges, data and control, in creation order.
  const std::vector<Edge>& out_edges() const { return out_edges_; }

  // The device the user asked for (canonical string, may be partial or empty).
  const std::string& requested_device() const { return requested_device_; }
  void set_requested_device(std::string d) { requested_device_ = std::move(d); }
  // The device the placer chose (full name), empty until placed.
  const std::string& assigned_device() const { return assigned_device_; }
  void set_assigned_device(std::string d) { assigned_device_ = std::move(d); }
  // Names of nodes this one must share a device with ("_class" = ["loc:@name"] in TensorFlow).
  const std::vector<std::string>& colocation_group() const { return colocation_; }
  void AddColocation(std::string name) { colocation_.push_back(std::move(name)); }

  bool IsStateful() const;
  std::string DebugString() const;  // "name (Op) inputs: [a:0, b:0] device: /cpu:0"

 private:
  friend class Graph;
  int id_ = 0;
  std::string name_;
  const OpDef* op_def_ = nullptr;
  AttrMap attrs_;
  std::vector<Output> inputs_;
  std::vector<Node*> control_inputs_;
  std::vector<DType> output_dtypes_;
  std::vector<Shape> output_shapes_;
  std::vector<Edge> out_edges_;
  std::string requested_device_;
  std::string assigned_device_;
  std::vector<std::string> colocation_;
};

// The variable that `o` refers to when `o` is a reference, or nullptr: a variable's output, or
// output 0 of an op that updates its reference input 0 in place and returns it (Assign,
// AssignAdd, AssignSub, the optimizers' Apply ops: TensorFlow's Ref(T) outputs), so that
// `AssignSub(AssignAdd(v, 1), 1)` updates v twice. A loop, not recursion: chains may be long.
const Node* ReferencedVariable(const Output& o);

// A tensor's name split: "node:3" -> {"node", 3}; "node" -> {"node", 0}. The one parser of
// tensor names (sessions, GraphDef inputs, the wire): InvalidArgument for an empty node name
// or an index that is not a plain decimal number below 2^31 ("a:", "a:1x", "a:-1", "a: 2").
struct TensorName {
  std::string node;
  int index = 0;
};
StatusOr<TensorName> ParseTensorName(std::string_view name);

// Everything needed to add a node; Graph::AddNode checks nothing beyond name uniqueness:
// NodeBuilder (graph/scope.h) validates against the op schema first.
struct NodeSpec {
  std::string name;
  const OpDef* op_def = nullptr;
  AttrMap attrs;
  std::vector<Output> inputs;
  std::vector<Node*> control_inputs;
  std::vector<DType> output_dtypes;
  std::vector<Shape> output_shapes;
  std::string requested_device;
  std::vector<std::string> colocation;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Node* AddNode(NodeSpec spec);
  void AddControlEdge(Node* src, Node* dst);
  Node* FindNode(std::string_view name) const;
  const std::vector<Node*>& nodes() const { return node_ptrs_; }
  int num_nodes() const { return static_cast<int>(node_ptrs_.size()); }
  // UpdateEdge points input `dst_input` of `dst` at `new_src` (TensorFlow's Graph::UpdateEdge;
  // the while-loop builder closes a loop's back edge with it). RemoveNode is for graph rewrites
  // on a runtime's own copy of a graph, and for a builder's own node that no handle outside it
  // reaches (MapFn's unused accumulator); never for a user's node, whose Output and Operation
  // handles would dangle: it drops `n` with its edges, and its name can be used again. Node ids
  // stay unique: a removed node's id is never handed out again.
  void UpdateEdge(Output new_src, Node* dst, int dst_input);
  void RemoveNode(Node* n);
  // Sets the static shape of output `index` of `n` (a while loop's Merge takes its loop
  // variable's shape invariant, which may be less defined than what its Enter gives it).
  void SetOutputShape(Node* n, int index, Shape shape) {
    n->output_shapes_[index] = std::move(shape);
  }
  // Sets the dtype of output `index` of `n` (a rewrite that changed the node's type attr, and
  // fixes every edge from it: executor/mixed_precision.h).
  void SetOutputDType(Node* n, int index, DType dtype) { n->output_dtypes_[index] = dtype; }

  // A name not yet used: `base`, else `base_1`, `base_2`, ... (TensorFlow's unique_name).
  std::string UniqueName(const std::string& base);
  bool IsNameUsed(std::string_view name) const;

  // Graph-level random seed (tf.set_random_seed); ops without their own seed derive one from it.
  void set_seed(int64_t seed) {
    seed_ = seed;
    has_seed_ = true;
  }
  bool has_seed() const { return has_seed_; }
  int64_t seed() const { return seed_; }

  // Collections by key (see graph/variable.h for the standard keys).
  void AddToCollection(const std::string& key, Output value) { collections_[key].push_back(value); }
  const std::vector<Output>& GetCollection(const std::string& key) const;
  void SetCollection(const std::string& key, std::vector<Output> values) {
    collections_[key] = std::move(values);
  }

  // Opaque per-graph state owned by other modules (the variable store lives here).
  template <typename T>
  T* GetOrCreateExtension() {
    auto& slot = extensions_[typeid(T).name()];
    if (!slot) slot = std::shared_ptr<void>(new T(), [](void* p) { delete static_cast<T*>(p); });
    return static_cast<T*>(slot.get());
  }

 private:
  std::deque<std::unique_ptr<Node>> nodes_;
  std::vector<Node*> node_ptrs_;
  std::unordered_map<std::string, Node*> by_name_;
  std::unordered_map<std::string, int> name_counts_;
  std::map<std::string, std::vector<Output>> collections_;
  std::map<std::string, std::shared_ptr<void>> extensions_;
  int64_t seed_ = 0;
  bool has_seed_ = false;
};

}  // namespace pf
