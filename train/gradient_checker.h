// Checks symbolic gradients against central finite differences (TensorFlow's
// gradient_checker): the largest absolute difference between the two Jacobians.
//
//   pf::Output x = pf::ops::Placeholder(root, pf::DT_DOUBLE, {3, 4});
//   pf::Output y = pf::ops::Tanh(root, x);
//   double err = pf::ComputeGradientError(root, x, {3, 4}, y, {3, 4});
//   // err < 1e-6 in float64
#pragma once

#include "placeflow/core/tensor.h"
#include "placeflow/executor/session.h"
#include "placeflow/graph/scope.h"

namespace pf {

// `x` must be a Placeholder of x_shape (float or double); y is evaluated with x fed.
// `x_value` (default: uniform in [-1, 1) from a fixed seed) is where the Jacobians are taken;
// `delta` (default: 1e-3 for float, 1e-6 for double) is the finite-difference step.
// `options` configure the session that evaluates both Jacobians (tests run the checker with
// and without graph rewrites). Throws pf::Error for a bad request (dtypes, shapes, x_value) or
// a failing run.
double ComputeGradientError(const Scope& scope, Output x, const Shape& x_shape, Output y,
                            const Shape& y_shape, const Tensor* x_value = nullptr, double delta = 0,
                            const SessionOptions& options = {});

}  // namespace pf
