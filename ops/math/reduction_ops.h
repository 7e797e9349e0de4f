// Checks of the reductions (reduction_ops.cc), shared by their shape functions and their CPU and
// GPU kernels (reduction_ops_gpu.cc), and by the gradient kernels that undo a reduction
// (grad_ops.cc).
#pragma once

#include <vector>

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// Which dims of a rank-`rank` input a Sum/Mean/Max/Min with this "axes" attr reduces (empty:
// all); InvalidArgument for an axis out of range.
StatusOr<std::vector<bool>> ReducedDims(const std::vector<int64_t>& axes, int rank);
// ArgMax of `in` (known rank) over `axis`: the canonical axis, which must be in range and,
// where its size is known, not empty.
StatusOr<int> ArgMaxAxis(const Shape& in, int64_t axis);
// AddN: the inputs' one shape (unknown dims merge with known ones).
StatusOr<Shape> AddNShape(const std::vector<Shape>& inputs);

}  // namespace pf
