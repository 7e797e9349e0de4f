// Checks of the fill ops (fill_ops.cc) shared by their CPU and GPU kernels (fill_ops_gpu.cc).
#pragma once

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// Fill(dims, value): one value.
inline Status ValidateFillValue(const Shape& value) {
  if (value.num_elements() != 1) {
    return errors::InvalidArgument("value must be a scalar, got shape ", value.ToString());
  }
  return Status::OK();
}

}  // namespace pf
