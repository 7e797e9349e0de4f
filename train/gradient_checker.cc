#include "placeflow/train/gradient_checker.h"

#include <cmath>
#include <random>

#include "placeflow/executor/session.h"
#include "placeflow/ops/ops.h"
#include "placeflow/train/gradients.h"

namespace pf {
namespace {

double Get(const Tensor& t, int64_t i) {
  return t.dtype() == DT_DOUBLE ? t.data<double>()[i] : t.data<float>()[i];
}
void Set(Tensor* t, int64_t i, double v) {
  if (t->dtype() == DT_DOUBLE)
    t->data<double>()[i] = v;
  else
    t->data<float>()[i] = static_cast<float>(v);
}

StatusOr<double> GradientError(const Scope& scope, Output x, const Shape& x_shape, Output y,
                               const Shape& y_shape, const Tensor* x_value, double delta,
                               const SessionOptions& options) {
  const DType t = x.dtype();
  if (t != DT_FLOAT && t != DT_DOUBLE)
    return errors::InvalidArgument("ComputeGradientError: x must be float or double");
  if (y.dtype() != t)
    return errors::InvalidArgument("ComputeGradientError: x and y must have the same dtype");
  if (!x_shape.IsFullyDefined() || !y_shape.IsFullyDefined())
    return errors::InvalidArgument("Shapes must be fully defined");
  if (delta == 0) delta = t == DT_DOUBLE ? 1e-6 : 1e-3;
  Output dy = ops::Placeholder(scope.WithOpName("gradient_checker/dy"), t, y_shape);
  PF_ASSIGN_OR_RETURN(std::vector<Output> dx, internal::TryGradients(scope, {y}, {x}, {dy}));
  Session sess(*scope.graph(), options);
  Tensor x0(t, x_shape);
  if (x_value != nullptr) {
    if (x_value->dtype() != t || x_value->shape() != x_shape)
      return errors::InvalidArgument("x_value does not match x");
    x0 = x_value->Clone();
  } else {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    for (int64_t i = 0; i < x0.num_elements(); ++i) Set(&x0, i, u(rng));
  }
  const int64_t nx = x_shape.num_elements(), ny = y_shape.num_elements();
  // Symbolic Jacobian, one y element at a time: column j is dx for dy = e_j.
  std::vector<double> theory(nx * ny), numeric(nx * ny);
  // A null gradient (every path stopped) is a zero Jacobian: the finite differences say
  // whether that is right.
  for (int64_t j = 0; j < ny && dx[0].node != nullptr; ++j) {
    Tensor e(t, y_shape);
    Set(&e, j, 1.0);
    std::vector<Tensor> out;
    PF_RETURN_IF_ERROR(sess.TryRun({{x, x0}, {dy, e}}, {dx[0]}, {}, &out));
    if (out[0].shape() != x_shape)
      return errors::Internal("gradient has shape ", out[0].shape().ToString());
    for (int64_t i = 0; i < nx; ++i) theory[i * ny + j] = Get(out[0], i);
  }
  // Central differences, one x element at a time.
  for (int64_t i = 0; i < nx; ++i) {
    Tensor plus = x0.Clone(), minus = x0.Clone();
    Set(&plus, i, Get(x0, i) + delta);
    Set(&minus, i, Get(x0, i) - delta);
    std::vector<Tensor> yp, ym;
    PF_RETURN_IF_ERROR(sess.TryRun({{x, plus}}, {y}, {}, &yp));
    PF_RETURN_IF_ERROR(sess.TryRun({{x, minus}}, {y}, {}, &ym));
    for (int64_t j = 0; j < ny; ++j)
      numeric[i * ny + j] = (Get(yp[0], j) - Get(ym[0], j)) / (2 * delta);
  }
  double err = 0;
  for (size_t k = 0; k < theory.size(); ++k) err = std::max(err, std::abs(theory[k] - numeric[k]));
  if (std::isnan(err)) return errors::Internal("gradient check produced NaN");
  for (size_t k = 0; k < theory.size(); ++k) {
    if (std::isnan(theory[k]) || std::isnan(numeric[k]))
      return std::numeric_limits<double>::infinity();
  }
  return err;
}

}  // namespace

double ComputeGradientError(const Scope& scope, Output x, const Shape& x_shape, Output y,
                            const Shape& y_shape, const Tensor* x_value, double delta,
                            const SessionOptions& options) {
  return GradientError(scope, x, x_shape, y, y_shape, x_value, delta, options).ValueOrThrow();
}

}  // namespace pf
