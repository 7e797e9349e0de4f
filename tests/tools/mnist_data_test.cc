// The IDX reader: real files, and the errors for bad ones.
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "placeflow/data/idx.h"
#include "tests/testing/test_util.h"

namespace pf::mnist_data_test {
namespace {

using Catch::Matchers::Contains;

std::string WriteGz(const std::string& name, const std::string& bytes) {
  std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("pf_idx_{}_{}", getpid(), name))
          .string();
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  return path;
}

std::string Header(uint32_t magic, std::vector<uint32_t> dims) {
  std::string s;
  auto be = [&](uint32_t v) {
    for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  be(magic);
  for (uint32_t d : dims) be(d);
  return s;
}

TEST_CASE("IDX files: good data loads, bad magic and truncation are named", "[data]") {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
  std::string good = WriteGz("good.gz", Header(0x803, {2, 2, 3}) + std::string(12, '\x7f'));
  REQUIRE(data::ReadIdx(good, &dims, &data).ok());
  CHECK(dims == std::vector<int64_t>{2, 2, 3});
  CHECK(data.size() == 12);
  Status magic = data::ReadIdx(WriteGz("magic.gz", Header(0x1234, {2}) + "ab"), &dims, &data);
  CHECK(magic.code() == Code::kInvalidArgument);
  CHECK_THAT(magic.message(), Contains("has a wrong magic number 0x00001234"));
  Status truncated = data::ReadIdx(WriteGz("short.gz", Header(0x801, {10}) + "abc"), &dims, &data);
  CHECK_THAT(truncated.message(),
             Contains("is truncated: header promises 10 bytes of data, found 3"));
  // A gzip stream cut in the middle.
  std::string cut =
      (std::filesystem::temp_directory_path() / fmt::format("pf_idx_{}_cut.gz", getpid())).string();
  {
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  CHECK_FALSE(data::ReadIdx(cut, &dims, &data).ok());
  // Dims whose product overflows 64 bits are an error, not a wrapped size.
  Status overflow = data::ReadIdx(
      WriteGz("overflow.gz", Header(0x804, {0xffffffff, 0xffffffff, 0xffffffff, 2})), &dims, &data);
  CHECK(overflow.code() == Code::kInvalidArgument);
  CHECK_THAT(overflow.message(), Contains("has dims whose product overflows"));
  CHECK_THAT(data::ReadIdx("/nonexistent/x.gz", &dims, &data).message(),
             Contains("Cannot open IDX file"));
  for (auto* p : {&good, &cut}) std::filesystem::remove(*p);
}

TEST_CASE("IDX: zero images of more than 2^63 pixels each are an error (fuzz reproducer)",
          "[data]") {
  // Found by the idx fuzz target: with 0 images the data check passes, and rows*cols wrapped.
  const std::string images = WriteGz("huge-images.gz", Header(0x803, {0, 0xc8705142, 0xb19fd56c}));
  const std::string labels = WriteGz("huge-labels.gz", Header(0x801, {0}));
  auto loaded = data::LoadIdxPair(images, labels);
  CHECK(loaded.status().code() == Code::kInvalidArgument);
  CHECK_THAT(loaded.status().message(), Contains("pixels: more than 2^63"));
  std::filesystem::remove(images);
  std::filesystem::remove(labels);
}

TEST_CASE("MNIST loads with the right shapes and value range", "[data]") {
  const std::string dir = PF_SOURCE_DIR "/../shared/data/mnist";
  if (!std::filesystem::exists(dir)) {
    WARN("skipped: " << dir << " not present");
    return;
  }
  auto test = data::LoadMnist(dir, data::Split::kTest).ValueOrThrow();
  CHECK(test.images.shape() == Shape{10000, 784});
  CHECK(test.labels.shape() == Shape{10000});
  float lo = 1, hi = 0;
  for (float v : test.images.flat<float>()) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(lo == 0.f);
  CHECK(hi == 1.f);
  CHECK(test.labels.flat<int32_t>()[0] == 7);  // the first MNIST test digit is a 7
  CHECK(data::Take(test, 5).size() == 5);
}

}  // namespace
}  // namespace pf::mnist_data_test
