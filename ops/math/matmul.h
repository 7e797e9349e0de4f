// The check of MatMul (matmul.cc), shared by its shape function and its CPU and GPU kernels
// (matmul_gpu.cc). Unknown ranks and dims (shape functions at build time) pass.
#pragma once

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// op(a) op(b): two matrices whose inner dimensions agree.
Status ValidateMatMul(const Shape& a, const Shape& b, bool transpose_a, bool transpose_b);

}  // namespace pf
