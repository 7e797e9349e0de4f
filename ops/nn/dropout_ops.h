// Checks of Dropout (dropout_ops.cc), shared by its shape function and its CPU and GPU kernels.
#pragma once

#include "placeflow/core/status.h"

namespace pf {

// rate in [0, 1): rate 1 would keep nothing and scale by infinity.
Status ValidateDropoutRate(float rate);

}  // namespace pf
