// Checks of the nn ops (nn_ops.cc), shared by their shape functions and their CPU and GPU
// kernels (nn_ops_gpu.cc), so both devices reject the same inputs with the same message.
// Unknown ranks and dims (shape functions at build time) pass.
#pragma once

#include <string_view>

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// BiasAdd(value, bias): value at least 2-D, bias 1-D with as many entries as value's last dim.
Status ValidateBiasAdd(const Shape& value, const Shape& bias);
// ReluGrad(gradients, outputs), SigmoidGrad and TanhGrad(y, dy) (TensorFlow's orders): one shape.
Status ValidateActivationGrad(std::string_view op, const Shape& in0, const Shape& in1);

}  // namespace pf
