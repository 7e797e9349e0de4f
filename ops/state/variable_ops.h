// Checks of the variable update ops (variable_ops.cc) shared by their CPU and GPU kernels
// (variable_ops_gpu.cc).
#pragma once

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// AssignAdd, AssignSub(ref, value): the update has the variable's shape.
inline Status ValidateAssignUpdate(const Shape& ref, const Shape& value) {
  if (ref != value) {
    return errors::InvalidArgument("Must have updates.shape = ref.shape: ", value.ToString(),
                                   " vs. ", ref.ToString());
  }
  return Status::OK();
}

}  // namespace pf
