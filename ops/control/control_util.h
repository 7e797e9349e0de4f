// What the control-flow ops' files share (ops/control/).
#pragma once

#include <vector>

#include "placeflow/core/dtype.h"
#include "placeflow/core/shape.h"

namespace pf::control {

// Every dtype a tensor can have on a GPU (strings stay on the host, as for Identity): the GPU
// kernels of ops that only move tensors take them all.
inline const std::vector<DType> kGpuTypes = {DT_FLOAT, DT_DOUBLE,   DT_INT32, DT_INT64, DT_BOOL,
                                             DT_HALF,  DT_BFLOAT16, DT_UINT8, DT_INT8,  DT_INT16};

// Whether a value of shape `s` may take the place of one of shape `invariant` (WhileLoop's rule
// for loop variables: the invariant's known dims must match, its rank too unless unknown).
inline bool FitsInvariant(const Shape& s, const Shape& invariant) {
  if (invariant.unknown_rank()) return true;
  if (s.unknown_rank() || s.rank() != invariant.rank()) return false;
  for (int d = 0; d < s.rank(); ++d) {
    if (invariant.dim(d) >= 0 && s.dim(d) != invariant.dim(d)) return false;
  }
  return true;
}

}  // namespace pf::control
