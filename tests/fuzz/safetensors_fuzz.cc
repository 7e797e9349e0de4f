// The checkpoint reader (train/saver.cc's ReadSafetensors) on arbitrary bytes: an error Status
// is fine. A file it accepts must describe tensors whose shapes and byte sizes agree, and must
// survive a write and a second read unchanged.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "placeflow/train/saver.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_file.h"

namespace {

bool SameTensor(const pf::Tensor& a, const pf::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.TotalBytes() == b.TotalBytes() &&
         (a.TotalBytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static pf::fuzz::MemFile file("safetensors");
  auto read = pf::ReadSafetensors(file.Write(data, size));
  if (!read.ok()) return 0;
  for (const auto& [name, t] : *read) {
    CHECK(t.shape().IsFullyDefined());
    CHECK(t.shape().num_elements() >= 0);
    CHECK(t.TotalBytes() ==
          static_cast<size_t>(t.shape().num_elements()) * pf::DTypeSize(t.dtype()));
  }
  const std::string path = pf::fuzz::ScratchDir("safetensors") + "/round_trip.safetensors";
  if (!pf::WriteSafetensors(path, *read).ok()) return 0;  // e.g. a name the writer refuses
  auto again = pf::ReadSafetensors(path);
  CHECK(again.ok());
  CHECK(again->size() == read->size());
  for (const auto& [name, t] : *read) {
    auto it = again->find(name);
    CHECK(it != again->end() && SameTensor(t, it->second));
  }
  return 0;
}
