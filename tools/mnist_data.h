// The MNIST loader moved to the library: placeflow/data/idx.h (pf::data::MnistArrays).
#pragma once

#include "placeflow/data/idx.h"
