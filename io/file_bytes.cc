#include "placeflow/io/file_bytes.h"

#include <fstream>
#include <sstream>

namespace pf::io {

StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return errors::NotFound("Cannot open file '", path, "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return errors::DataLoss("Error reading file '", path, "'");
  return std::move(ss).str();
}

}  // namespace pf::io
