// Op schemas: inputs, outputs, attrs, type constraints, statefulness and a shape function.
// Each op registers once, beside its kernel, with a static registrar:
//
//   PF_REGISTER_OP(pf::OpDef("MatMul")
//                      .Input("a", "T").Input("b", "T").Output("product", "T")
//                      .Attr("transpose_a", false).Attr("transpose_b", false)
//                      .TypeAttr("T", {pf::DT_FLOAT, pf::DT_DOUBLE})
//                      .SetShapeFn(MatMulShape));
//
// An argument's type is a type attr ("T") or a fixed dtype name ("int32"); a list argument
// names its length attr: .InputList("values", "T", "N").
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"
#include "placeflow/graph/attr.h"

namespace pf {

class ShapeContext;
class Scope;
class Node;
struct Output;
using ShapeFn = std::function<Status(ShapeContext&)>;
// Builds the gradients of a node's inputs from the gradients of its outputs. grad_outputs
// has one entry per output (zeros were filled in where nothing flowed back); grad_inputs gets
// one entry per input, a null Output where no gradient flows. Nodes go under `scope`.
using GradFn = std::function<Status(const Scope& scope, const Node& node,
                                    const std::vector<Output>& grad_outputs,
                                    std::vector<Output>* grad_inputs)>;

// What a control-flow op is to the executor (TensorFlow's Switch, Merge, Enter, Exit,
// NextIteration, LoopCond; docs/control_flow.md). The executor routes their outputs between
// loop frames and iterations and propagates dead tensors (the untaken side of a Switch) through
// the graph: a node with a dead input does not run and its outputs are dead, except a Merge
// (it waits for one live input) and the transfer pair (kSend runs with a dead input, an
// uninitialized tensor, and sends it as dead; kRecv's output is dead when such a one arrives).
enum class ControlFlowKind : uint8_t {
  kNone,
  kSwitch,         // output `pred` is live, the other dead
  kMerge,          // forwards its first live input (a loop's Merge: one per iteration)
  kEnter,          // into a loop frame (attrs frame_name, is_constant, parallel_iterations)
  kExit,           // out of a loop frame, once per frame
  kNextIteration,  // into the next iteration of its frame
  kLoopCond,       // the loop's predicate
  kSend,
  kRecv,
};

struct ArgDef {
  std::string name;
  std::string type;         // a type attr name ("T") or a fixed dtype ("int32")
  std::string number_attr;  // non-empty for a list argument of that many tensors
  bool is_ref = false;      // the input is a variable reference (colocated, not read)
};

class OpDef {
 public:
  explicit OpDef(std::string name) : name_(std::move(name)) {}

  OpDef& Input(std::string name, std::string type);
  OpDef& RefInput(std::string name, std::string type);
  OpDef& InputList(std::string name, std::string type, std::string number_attr);
  OpDef& Output(std::string name, std::string type);
  OpDef& OutputList(std::string name, std::string type, std::string number_attr);
  OpDef& Attr(std::string name, AttrValue default_value);
  OpDef& RequiredAttr(std::string name);
  // A dtype attr with its allowed values (empty: any computable dtype).
  OpDef& TypeAttr(std::string name, std::vector<DType> allowed,
                  std::optional<DType> default_value = {});
  OpDef& SetStateful() {
    stateful_ = true;
    return *this;
  }
  OpDef& SetShapeFn(ShapeFn fn) {
    shape_fn_ = std::move(fn);
    return *this;
  }
  // No gradient flows through this op (checked by the registry test; gradients come later).
  OpDef& SetNotDifferentiable() {
    differentiable_ = false;
    return *this;
  }
  // Has no gradient function on purpose (backward ops: second-order gradients are not
  // supported): Gradients through it fail with "No gradient defined for op", as for any op
  // without one, but the registry test knows it was not forgotten (design rule 1,
  // docs/design_rules.md).
  OpDef& SetNoGradient() {
    no_gradient_ = true;
    return *this;
  }
  OpDef& SetGradient(GradFn fn) {
    grad_fn_ = std::move(fn);
    return *this;
  }
  // Op facts the runtime acts on (TensorFlow derives them from op names; here each op says so).
  // A variable: output 0 is the variable's storage, the source of every reference input, and
  // running an op on it before the first Assign is "uninitialized value".
  OpDef& SetIsVariable() {
    is_variable_ = true;
    return *this;
  }
  // A constant: output 0 is the `value` attr, so shape functions see it at graph-build time.
  OpDef& SetIsConstant() {
    is_constant_ = true;
    return *this;
  }
  // Reads only the shape of input 0 (as Shape does): the placer keeps it where that input
  // is, so the tensor is not copied just to be measured.
  OpDef& SetIsMetadata() {
    is_metadata_ = true;
    return *this;
  }
  // Output 0 may be input 0's buffer (a view, not a copy): Identity, Reshape, Cast to the same
  // dtype. A fetch that may view a variable through such ops is copied (executor/session.cc).
  OpDef& SetForwardsInput() {
    forwards_input_ = true;
    return *this;
  }

  OpDef& SetControlFlow(ControlFlowKind kind) {
    control_flow_ = kind;
    return *this;
  }

  // Input `index` is read for its shape only (a gradient's "like" operand): a rewrite may hand
  // it any tensor of that shape (the remapper hands it a fused node's output).
  OpDef& SetShapeOnlyInput(int index) {
    shape_only_inputs_ |= uint64_t{1} << index;
    return *this;
  }

  const std::string& name() const { return name_; }
  const std::vector<ArgDef>& inputs() const { return inputs_; }
  const std::vector<ArgDef>& outputs() const { return outputs_; }
  const std::map<std::string, std::optional<AttrValue>, std::less<>>& attrs() const {
    return attrs_;
  }
  const std::map<std::string, std::vector<DType>, std::less<>>& type_attrs() const {
    return type_attrs_;
  }
  bool stateful() const { return stateful_; }
  bool differentiable() const { return differentiable_; }
  bool no_gradient() const { return no_gradient_; }
  bool is_variable() const { return is_variable_; }
  bool is_constant() const { return is_constant_; }
  bool is_metadata() const { return is_metadata_; }
  bool forwards_input() const { return forwards_input_; }
  ControlFlowKind control_flow() const { return control_flow_; }
  bool shape_only_input(int index) const {
    return index >= 0 && index < 64 && (shape_only_inputs_ >> index & 1);
  }
  const ShapeFn& shape_fn() const { return shape_fn_; }
  const GradFn& grad_fn() const { return grad_fn_; }

 private:
  std::string name_;
  std::vector<ArgDef> inputs_;
  std::vector<ArgDef> outputs_;
  std::map<std::string, std::optional<AttrValue>, std::less<>> attrs_;
  std::map<std::string, std::vector<DType>, std::less<>> type_attrs_;
  bool stateful_ = false;
  bool differentiable_ = true;
  bool no_gradient_ = false;
  bool is_variable_ = false;
  bool is_constant_ = false;
  bool is_metadata_ = false;
  bool forwards_input_ = false;
  ControlFlowKind control_flow_ = ControlFlowKind::kNone;
  uint64_t shape_only_inputs_ = 0;  // bit i: SetShapeOnlyInput(i)
  ShapeFn shape_fn_;
  GradFn grad_fn_;
};

class OpRegistry {
 public:
  static OpRegistry* Global();
  void Register(OpDef def);
  // nullptr when unknown.
  const OpDef* Find(std::string_view name) const;
  std::vector<std::string> ListOps() const;

 private:
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
};

// What a shape function sees: input shapes, input dtypes, input values where known (constant
// inputs at graph-build time; every input at run time) and the node's attrs.
class ShapeContext {
 public:
  ShapeContext(const OpDef& op, const AttrMap& attrs, std::vector<Shape> input_shapes,
               std::vector<DType> input_dtypes, std::vector<const Tensor*> input_tensors,
               int num_outputs);

  int num_inputs() const { return static_cast<int>(input_shapes_.size()); }
  const Shape& input(int i) const { return input_shapes_[i]; }
  DType input_dtype(int i) const { return input_dtypes_[i]; }
  // nullptr when the value is not known.
  const Tensor* input_tensor(int i) const { return input_tensors_[i]; }
  const AttrMap& attrs() const { return attrs_; }
  template <typename T>
  const T& attr(std::string_view name) const {
    return std::get<T>(attrs_.find(name)->second);
  }

  int num_outputs() const { return static_cast<int>(output_shapes_.size()); }
  void set_output(int i, Shape s) { output_shapes_[i] = std::move(s); }
  const Shape& output(int i) const { return output_shapes_[i]; }
  std::vector<Shape>& output_shapes() { return output_shapes_; }

  // Helpers shape functions share.
  Status WithRank(int i, int rank) const;  // input i has `rank` (or unknown rank)
  Status WithRankAtLeast(int i, int rank) const;
  // A shape from a 1-D int tensor input (unknown dims where the value is not known).
  StatusOr<Shape> ShapeFromInputTensor(int i, int rank_if_unknown = -1) const;
  // Normalises a possibly negative axis into [0, rank).
  StatusOr<int> CanonicalAxis(int64_t axis, int rank) const;

 private:
  const OpDef& op_;
  const AttrMap& attrs_;
  std::vector<Shape> input_shapes_;
  std::vector<DType> input_dtypes_;
  std::vector<const Tensor*> input_tensors_;
  std::vector<Shape> output_shapes_;
};

// Common shape functions.
Status UnchangedShape(ShapeContext& c);           // output 0 = input 0
Status ShapeOfInput(ShapeContext& c, int input);  // output 0 = that input's shape
Status NoOutputsShape(ShapeContext& c);
Status ScalarShape(ShapeContext& c);
// NumPy broadcasting of input 0 and 1 into output 0.
Status BroadcastBinaryShape(ShapeContext& c);
StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

struct OpRegistrar {
  explicit OpRegistrar(OpDef def) { OpRegistry::Global()->Register(std::move(def)); }
};

}  // namespace pf

#define PF_REGISTER_OP(def) static ::pf::OpRegistrar PF_CONCAT(pf_op_registrar_, __COUNTER__)(def)
