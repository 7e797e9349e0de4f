// The handle types of named variables: what GetVariable (train/variables.h) returns and what
// a custom getter (Scope::WithCustomGetter) receives. They live with the graph because scopes
// carry getters; building variables is the training library's job.
//
//   pf::Variable w = pf::GetVariable(vs, "w", {600, 512});
//   pf::Output h = pf::ops::MatMul(root, x, w.value());   // w.ref() goes to Assign/optimizers
#pragma once

#include <functional>
#include <string>

#include "placeflow/graph/scope.h"

namespace pf {

// Builds the initial value of a variable (under the variable's "Initializer" name scope).
using Initializer = std::function<Output(const Scope& scope, const Shape& shape, DType dtype)>;

// Standard collection keys (TensorFlow's names).
inline constexpr char kGlobalVariables[] = "variables";
inline constexpr char kTrainableVariables[] = "trainable_variables";
inline constexpr char kLocalVariables[] = "local_variables";
inline constexpr char kLosses[] = "losses";
inline constexpr char kUpdateOps[] = "update_ops";

class Variable {
 public:
  Variable() = default;
  const std::string& name() const { return name_; }
  Output ref() const { return ref_; }     // the Variable node: pass to Assign and optimizers
  Output value() const { return read_; }  // "<name>/read": use in computations
  Operation initializer() const { return initializer_; }
  const Shape& shape() const { return ref_.shape(); }
  DType dtype() const { return ref_.dtype(); }
  bool trainable() const { return trainable_; }
  bool valid() const { return ref_.node != nullptr; }

 private:
  friend Variable GetVariable(const Scope&, const std::string&, const Shape&, Initializer, DType,
                              bool);
  // A variable that already is in the graph (imported from a GraphDef or MetaGraph).
  friend Variable AdoptVariable(Node* ref, Output read, Operation initializer, bool trainable);
  std::string name_;
  Output ref_;
  Output read_;
  Operation initializer_;
  bool trainable_ = true;
};

// What a custom getter (Scope::WithCustomGetter) receives: GetVariable's arguments, with the
// scope minus the getter itself.
struct VariableRequest {
  Scope scope;
  std::string name;
  Shape shape;
  Initializer initializer;
  DType dtype = DT_FLOAT;
  bool trainable = true;
};

}  // namespace pf
