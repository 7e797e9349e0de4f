// Helpers of the debugging ops (ops/debug/debug_ops.cc), shared with the Saver's restore check.
//
//   pf::NonFiniteKind(t) == "NaN";   // "", "NaN", "Inf" or "Inf and NaN"
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "placeflow/core/tensor.h"

namespace pf {

// Which non-finite values a host tensor holds: "" (none, or not a floating-point dtype), "NaN",
// "Inf" or "Inf and NaN" (TensorFlow's CheckNumerics words).
std::string_view NonFiniteKind(const Tensor& t);

// The line Print logs: `message`, then per data tensor its name (when given), dtype, shape and
// first `summarize` values (all of them when negative), separated by "; ".
std::string PrintLine(const std::string& message, const std::vector<std::string>& names,
                      const std::vector<Tensor>& data, int64_t summarize);

}  // namespace pf
