// Launcher of the random ops' device code (random_ops.cu).
#pragma once

#include "placeflow/ops/gpu/launch.h"

namespace pf::gpu {

// Random numbers from Philox4x32-10, element i of call `call` drawing from counter (i, call,
// attempt) exactly as the CPU kernels do (random_ops.cc): 0 uniform [0, 1), 1 normal, 2
// normal truncated to two standard deviations.
template <typename T>
void RandomFill(int distribution, T* out, int64_t n, uint32_t key0, uint32_t key1, uint32_t call,
                Stream stream);

}  // namespace pf::gpu
