// Checks of the activations of activation_ops.cc (Relu6, LeakyRelu, Softplus) and their gradient
// ops, shared by the shape functions and the CPU and GPU kernels (activation_ops_gpu.cc).
#pragma once

#include <string_view>

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// Relu6Grad, LeakyReluGrad, SoftplusGrad(gradients, features): one shape.
Status ValidateFeaturesGrad(std::string_view op, const Shape& gradients, const Shape& features);

}  // namespace pf
