// Vectorised float32 sigmoid on oneDNN's logistic primitive (JIT code for the CPU's widest
// vector unit): glibc's scalar expf costs ~12 ns an element, the primitive ~0.7 ns. Its results
// match the scalar formula to 2-4 ulp with NaN and infinities preserved (docs/benchmarks.md).
// Exp and log stay scalar, since oneDNN's exp turns NaN into inf and its log loses accuracy on
// subnormal inputs; float Tanh runs a rational approximation instead (nn_ops.cc), 2x faster
// than oneDNN's tanh and with no per-call primitive overhead.
#pragma once

#include <cstdint>

#include "placeflow/graph/kernel.h"

namespace pf {

// y[i] = 1 / (1 + exp(-x[i])) for i in [0, n), split over the kernel's intra-op pool.
void DnnlLogistic(OpKernelContext* ctx, const float* x, float* y, int64_t n);

}  // namespace pf
