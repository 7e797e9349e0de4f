// What the copy ops' CPU kernels (copy_ops.cc, copy_grad_ops.cc) share: the [outer, inner]
// view of a tensor around an axis, in which Concat, Split and ConcatGrad copy boxes.
#pragma once

#include <cstdint>

#include "placeflow/core/shape.h"

namespace pf {

// Bytes per outer block of `s` from `axis` on, and the number of outer blocks.
inline void OuterInner(const Shape& s, int axis, size_t es, int64_t* outer, int64_t* inner_bytes) {
  *outer = 1;
  for (int d = 0; d < axis; ++d) *outer *= s.dim(d);
  int64_t inner = 1;
  for (int d = axis; d < s.rank(); ++d) inner *= s.dim(d);
  *inner_bytes = inner * static_cast<int64_t>(es);
}

}  // namespace pf
