// The IDX/MNIST reader (data/idx.h) on arbitrary bytes, plain or gzip. The first byte
// picks the mode: one IDX file through ReadIdx, or an images/labels pair (the rest split at a
// position read from the input) through LoadMnist, Take and Gather.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "placeflow/data/idx.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_file.h"

namespace {

void WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ++data, --size;
  if ((mode & 1) == 0) {
    static pf::fuzz::MemFile file("idx");
    std::vector<int64_t> dims;
    std::vector<uint8_t> bytes;
    if (!pf::data::ReadIdx(file.Write(data, size), &dims, &bytes).ok()) return 0;
    size_t product = 1;
    for (int64_t d : dims) product *= static_cast<size_t>(d);
    CHECK(product == bytes.size());
    return 0;
  }
  if (size < 2) return 0;
  const size_t split = std::min<size_t>((size_t{data[0]} << 8 | data[1]), size - 2);
  data += 2, size -= 2;
  // LoadMnist looks for plain files when no .gz exists; the names stay the same every time.
  WriteFile(pf::fuzz::ScratchDir("idx") + "/train-images-idx3-ubyte", data, split);
  WriteFile(pf::fuzz::ScratchDir("idx") + "/train-labels-idx1-ubyte", data + split, size - split);
  auto loaded = pf::data::LoadMnist(pf::fuzz::ScratchDir("idx"), pf::data::Split::kTrain);
  if (!loaded.ok()) return 0;
  const pf::data::MnistArrays& d = *loaded;
  CHECK(d.images.dim(0) == d.size());
  pf::data::MnistArrays head = pf::data::Take(d, 1 + (mode >> 1) % 4);
  CHECK(head.size() <= d.size());
  if (d.size() == 0) return 0;
  std::vector<int64_t> order;
  for (int64_t i = d.size() - 1; i >= 0 && order.size() < 8; --i) order.push_back(i);
  pf::Tensor images, labels;
  pf::data::Gather(d, order, 0, static_cast<int64_t>(order.size()), &images, &labels);
  CHECK(labels.num_elements() == static_cast<int64_t>(order.size()));
  return 0;
}
