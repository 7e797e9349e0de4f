// Half and bfloat16 CPU kernels that compute in float32 (ops/half_via_float.cc): each call
// converts the 16-bit inputs to float, runs the op's float32 kernel and rounds the outputs back.
// Registered for the mixed-precision ops; a kernel with a native 16-bit path falls back to it
// where the CPU has none:
//
//   if (!DnnlNativeBf16()) return pf::NewHalfViaFloatKernel(node);
#pragma once

#include <memory>

#include "placeflow/graph/kernel.h"

namespace pf {

std::unique_ptr<OpKernel> NewHalfViaFloatKernel(const Node& node);

}  // namespace pf
