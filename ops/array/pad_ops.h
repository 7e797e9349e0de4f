// Checks and arithmetic of Pad and PadGrad (pad_ops.cc), shared by their shape functions and
// their CPU and GPU kernels (pad_ops_gpu.cc). Unknown ranks and dims (shape functions at build
// time) pass.
#pragma once

#include <cstdint>
#include <vector>

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"

namespace pf {

// The (before, after) amounts of each dimension, read from a paddings tensor.
struct PadAmounts {
  std::vector<int64_t> before, after;

  int rank() const { return static_cast<int>(before.size()); }
  // Pad's output shape: each dim grown by before + after (unknown dims stay unknown).
  Shape Padded(const Shape& input) const;
  // PadGrad's output shape: each dim of the padded gradient shrunk by before + after.
  Shape Cropped(const Shape& padded) const;
};

// Pad(input, paddings) and PadGrad(grad, paddings): paddings an int [rank, 2] matrix whose
// rank is the input's (at most Shape::kMaxRank, the GPU kernel's limit too).
Status ValidatePad(const Shape& input, const Shape& paddings);
// The amounts of a paddings tensor of a validated shape; negative ones are an error.
StatusOr<PadAmounts> ReadPaddings(const Tensor& paddings);
// PadGrad: every dim of grad at least before + after.
Status ValidatePadGrad(const Shape& grad, const PadAmounts& p);

}  // namespace pf
