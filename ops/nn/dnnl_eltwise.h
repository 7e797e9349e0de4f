// Vectorised float32 activations on oneDNN's eltwise primitives (JIT code for the CPU's widest
// vector unit): glibc's scalar tanhf/expf cost ~12 ns an element, the primitives ~0.7 ns.
// Only the functions whose oneDNN results match the scalar ones (2-4 ulp, NaN and infinities
// preserved, measured in docs/benchmarks.md) run here: exp and log stay scalar, since oneDNN's
// exp turns NaN into inf and its log loses accuracy on subnormal inputs.
#pragma once

#include <cstdint>

#include "placeflow/graph/kernel.h"

namespace pf {

enum class DnnlEltwiseAlg { kTanh, kLogistic };

// y[i] = alg(x[i]) for i in [0, n), split over the kernel's intra-op pool.
void DnnlEltwise(OpKernelContext* ctx, DnnlEltwiseAlg alg, const float* x, float* y, int64_t n);

}  // namespace pf
