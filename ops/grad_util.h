// Helpers gradient functions share.
#pragma once

#include <vector>

#include "placeflow/graph/scope.h"

namespace pf {

// g summed down to like's shape (undoes NumPy broadcasting); g itself when shapes match.
Output SumToShape(const Scope& s, Output g, Output like);
// A reduction's gradient g spread back over `axes` of like's shape (scaled by 1/count for Mean).
Output ReduceGrad(const Scope& s, Output g, Output like, const std::vector<int64_t>& axes,
                  bool mean);
// A node of the one-input op `op` on x (the builders of Neg, Exp, Relu, ...).
inline Output UnaryNode(const Scope& s, const char* op, Output x) {
  return NodeBuilder(s, op).Input(x).Finalize();
}
// A scalar constant of dtype t.
Output ScalarOf(const Scope& s, double v, DType t);
// Output i of node n (gradient functions read forward outputs).
inline Output Out(const Node& n, int i = 0) { return Output(const_cast<Node*>(&n), i); }
using Grads = std::vector<Output>;
// Declares a gradient function: scope s, forward node n, output gradients g, input gradients dx.
#define PF_GRAD(name) Status name(const Scope& s, const Node& n, const Grads& g, Grads* dx)

inline bool IsReal(DType t) { return t == DT_FLOAT || t == DT_DOUBLE; }

}  // namespace pf
