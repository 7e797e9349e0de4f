// A whole file's bytes, for readers of small files (an image, a GraphDef).
//
//   pf::StatusOr<std::string> bytes = pf::io::ReadFileBytes("photos/cat/1.jpg");
#pragma once

#include <string>

#include "placeflow/core/status.h"

namespace pf::io {

// NotFound naming the file when it cannot be opened, DataLoss when reading it fails.
StatusOr<std::string> ReadFileBytes(const std::string& path);

}  // namespace pf::io
