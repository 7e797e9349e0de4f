// The model builders moved into the library: placeflow/models/models.h (namespace pf::models).
// This header stays for code that still names the old path.
#pragma once

#include "placeflow/models/models.h"
