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

// Whether oneDNN runs bfloat16 matmuls and convolutions natively on this CPU (AVX512-BF16 or
// AMX, under ONEDNN_MAX_CPU_ISA), and PF_ONEDNN_BF16 is not "0"; defined with the other oneDNN
// helpers (ops/nn/dnnl_util.cc). Read on every call (kernels ask once, when they are made), so a
// test can compare both paths.
bool DnnlNativeBf16();

}  // namespace pf
