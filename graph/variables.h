// Named variables (tf.get_variable): named by variable scopes, shared through reuse, put in
// the global and trainable collections, initialised by GlobalVariablesInitializer.
//
//   pf::Scope vs = root.WithVariableScope("affine0");
//   pf::Variable w = pf::GetVariable(vs, "w", {600, 512}, pf::init::GlorotUniform(/*seed=*/1));
//   w.name() == "affine0/w";
//   pf::Output h = pf::ops::MatMul(root, x, w.value());
//   pf::Variable same = pf::GetVariable(root.WithVariableScope("affine0", pf::Reuse::kReuse), "w",
//   {600, 512}); sess.Run({}, {}, {pf::GlobalVariablesInitializer(root)});
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/scope.h"

namespace pf {

// Builds the initial value of a variable (under the variable's "Initializer" name scope).
using Initializer = std::function<Output(const Scope& scope, const Shape& shape, DType dtype)>;

namespace init {
Initializer Constant(double value);
Initializer Zeros();
Initializer Ones();
Initializer RandomUniform(double minval = 0.0, double maxval = 1.0, int64_t seed = 0);
Initializer RandomNormal(double mean = 0.0, double stddev = 1.0, int64_t seed = 0);
// Normal values beyond two standard deviations are redrawn, as tf.truncated_normal.
Initializer TruncatedNormal(double mean = 0.0, double stddev = 1.0, int64_t seed = 0);
// Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)) (TensorFlow's default).
Initializer GlorotUniform(int64_t seed = 0);
}  // namespace init

// Standard collection keys (TensorFlow's names).
inline constexpr char kGlobalVariables[] = "variables";
inline constexpr char kTrainableVariables[] = "trainable_variables";
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

// Creates or reuses "<variable scope>/<name>" according to the scope's Reuse mode. The new
// variable takes the scope's device and colocation (name scopes and control deps do not apply).
// Throws pf::Error with TensorFlow's messages for an existing name without reuse, a missing name
// with reuse, or a shape or dtype that differs from the existing variable. The default
// initializer is GlorotUniform for floats and zeros otherwise.
Variable GetVariable(const Scope& scope, const std::string& name, const Shape& shape,
                     Initializer initializer = nullptr, DType dtype = DT_FLOAT,
                     bool trainable = true);

// The variables of a graph in creation order.
std::vector<Variable> GlobalVariables(Graph* graph);
std::vector<Variable> TrainableVariables(Graph* graph);
// nullptr-like invalid Variable when absent.
Variable FindVariable(Graph* graph, const std::string& name);

// A NoOp "init" that runs every global variable's initializer.
Operation GlobalVariablesInitializer(const Scope& scope);
Operation VariablesInitializer(const Scope& scope, const std::vector<Variable>& vars,
                               const std::string& name = "init");

}  // namespace pf
