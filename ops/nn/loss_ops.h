// Checks of the losses (loss_ops.cc), shared by their shape functions and their CPU and GPU
// kernels (loss_ops_gpu.cc). Unknown ranks and dims (shape functions at build time) pass.
#pragma once

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// SoftmaxCrossEntropyWithLogits: 2-D logits, labels of the same shape.
Status ValidateSoftmaxXent(const Shape& logits, const Shape& labels);
// SparseSoftmaxCrossEntropyWithLogits: 2-D logits, 1-D labels, one label per row.
Status ValidateSparseSoftmaxXent(const Shape& logits, const Shape& labels);
// SigmoidCrossEntropyWithLogits: logits and labels of one shape.
Status ValidateSigmoidXent(const Shape& logits, const Shape& labels);

}  // namespace pf
