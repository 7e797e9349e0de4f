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

#include "placeflow/graph/scope.h"
#include "placeflow/graph/variable.h"

namespace pf {

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

// Creates or reuses "<variable scope>/<name>" according to the scope's Reuse mode. The new
// variable takes the scope's device and colocation (name scopes and control deps do not apply).
// Throws pf::Error with TensorFlow's messages for an existing name without reuse, a missing name
// with reuse, or a shape or dtype that differs from the existing variable. The default
// initializer is GlorotUniform for floats and zeros otherwise.
Variable GetVariable(const Scope& scope, const std::string& name, const Shape& shape,
                     Initializer initializer = nullptr, DType dtype = DT_FLOAT,
                     bool trainable = true);

// TensorFlow's local variables: per-process state (a worker's step counter) that lives on the
// scope's device whatever its custom getter says, is never saved, and is initialised by each
// process (LocalVariablesInitializer), not by the chief. Never trainable.
Variable LocalVariable(const Scope& scope, const std::string& name, const Shape& shape,
                       Initializer initializer = nullptr, DType dtype = DT_FLOAT);

// Registers a variable that is already in the graph (imported from a GraphDef or MetaGraph):
// `ref` its Variable node, `read` its value and `initializer` the op that initialises it (null:
// found by TensorFlow's names, "<name>/read" and "<name>/Assign"). GlobalVariables and the
// other lookups adopt the variables of an imported graph's collections this way by themselves;
// ImportMetaGraph calls it with the MetaGraph's VariableDefs. Throws pf::Error (InvalidArgument)
// when `ref` is not a variable node.
Variable RegisterImportedVariable(Graph* graph, Node* ref, Output read = {},
                                  Operation initializer = {}, bool trainable = true);

// The variables of a graph in creation order (imported ones included: see above).
std::vector<Variable> GlobalVariables(Graph* graph);
std::vector<Variable> LocalVariables(Graph* graph);
std::vector<Variable> TrainableVariables(Graph* graph);
// nullptr-like invalid Variable when absent.
Variable FindVariable(Graph* graph, const std::string& name);

// A NoOp "init" that runs every global variable's initializer.
Operation GlobalVariablesInitializer(const Scope& scope);
// A NoOp "init_local" that runs every local variable's initializer.
Operation LocalVariablesInitializer(const Scope& scope);
Operation VariablesInitializer(const Scope& scope, const std::vector<Variable>& vars,
                               const std::string& name = "init");

}  // namespace pf
