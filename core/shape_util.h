// Shape arithmetic beyond Shape's own members, kept out of core/shape.h (which nearly every
// file includes).
#pragma once

#include "placeflow/core/shape.h"

namespace pf {

// The most specific shape both `a` and `b` have: their common dims, unknown where they differ
// (unknown rank when the ranks differ). A Merge's output, and a loop variable's shape across
// iterations.
inline Shape MostSpecificCommonShape(const Shape& a, const Shape& b) {
  if (a.unknown_rank() || b.unknown_rank() || a.rank() != b.rank()) return Shape::Unknown();
  Shape s = a;
  for (int d = 0; d < a.rank(); ++d) {
    if (a.dim(d) != b.dim(d)) s.set_dim(d, -1);
  }
  return s;
}

}  // namespace pf
