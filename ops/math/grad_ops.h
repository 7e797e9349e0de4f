// Checks of the gradient helper ops (grad_ops.cc) shared by their CPU and GPU kernels
// (grad_ops_gpu.cc) and by the losses whose gradients undo a broadcast (loss_ops.cc). Shapes
// are fully defined.
#pragma once

#include <vector>

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// SumToShape(g, like): the dims of `from` (g's shape) that sum away to give `to` (like's shape),
// i.e. the inverse of broadcasting `to` to `from`.
StatusOr<std::vector<bool>> SumToShapeDims(const Shape& from, const Shape& to);
// ReduceGrad(g, like): the gradient of reducing an input shaped `x` over `axes` (g holding one
// element per kept position); returns x with the reduced dims set to 1.
StatusOr<Shape> ReduceGradShape(const Shape& g, const Shape& x, const std::vector<int64_t>& axes);

}  // namespace pf
