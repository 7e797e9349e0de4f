// pf-data as a user runs it: IDX files (written here, with known pixels) -> TFRecord of
// tf.Example, read back through the library; inspect; errors.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "placeflow/io/image_codec.h"
#include "tests/testing/test_util.h"

namespace pf::pf_data_test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

struct Run {
  int status = -1;
  std::string out, err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Run PfData(const std::string& args) {
  static int calls = 0;
  const fs::path base =
      fs::temp_directory_path() / fmt::format("pf_data_cli_{}_{}", getpid(), calls++);
  const std::string cmd =
      fmt::format("{} {} >{}.out 2>{}.err", PF_DATA_BINARY, args, base.string(), base.string());
  const int rc = std::system(cmd.c_str());
  Run r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = Slurp(base.string() + ".out");
  r.err = Slurp(base.string() + ".err");
  fs::remove(base.string() + ".out");
  fs::remove(base.string() + ".err");
  return r;
}

struct Dir {
  fs::path path;
  explicit Dir(const std::string& name)
      : path(fs::temp_directory_path() / fmt::format("pf_data_{}_{}", getpid(), name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

// An IDX file: big-endian magic and dims, then the bytes.
void WriteIdx(const fs::path& path, uint32_t magic, const std::vector<uint32_t>& dims,
              const std::string& bytes) {
  std::string s;
  auto be = [&](uint32_t v) {
    for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  be(magic);
  for (uint32_t d : dims) be(d);
  s += bytes;
  std::ofstream(path, std::ios::binary) << s;
}

// Three 4x5 images: pixel k of image i is 10 * i + k; labels 3, 1, 4.
std::string Pixels(int i) {
  std::string p(20, '\0');
  for (int k = 0; k < 20; ++k) p[k] = static_cast<char>(10 * i + k);
  return p;
}

void WriteMnist(const fs::path& dir, const std::string& prefix) {
  WriteIdx(dir / (prefix + "-images-idx3-ubyte"), 0x803, {3, 4, 5},
           Pixels(0) + Pixels(1) + Pixels(2));
  WriteIdx(dir / (prefix + "-labels-idx1-ubyte"), 0x801, {3}, std::string("\x03\x01\x04", 3));
}

TEST_CASE("pf-data convert writes IDX files as TFRecord of tf.Example", "[tools][pf_data]") {
  Dir dir("convert");
  WriteMnist(dir.path, "t10k");
  const std::string out = (dir.path / "test.tfrecord.gz").string();
  Run r = PfData(fmt::format("convert --idx {} --out {} --split test --compression GZIP",
                             dir.path.string(), out));
#if defined(PF_WITH_PROTOBUF)
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("wrote 3 examples (4x5)"));
  auto reader = io::RecordReader::Open(out, {.compression = io::Compression::kGzip}).value();
  std::vector<std::string> records;
  std::string rec;
  while (reader->Next(&rec).value()) records.push_back(rec);
  REQUIRE(records.size() == 3);
  io::ExampleSpec spec;
  for (const char* key : {"label", "height", "width", "depth", "pixels"})
    spec.fixed.push_back({key, DT_INT64, {}, Tensor()});
  spec.fixed.push_back({"image_raw", DT_STRING, {}, Tensor()});
  io::ParsedExamples p = io::ParseExamples(records, spec).value();
  CHECK(p.dense[0].ToVector<int64_t>() == std::vector<int64_t>{3, 1, 4});
  CHECK(p.dense[1].ToVector<int64_t>() == std::vector<int64_t>{4, 4, 4});
  CHECK(p.dense[2].ToVector<int64_t>() == std::vector<int64_t>{5, 5, 5});
  CHECK(p.dense[3].ToVector<int64_t>() == std::vector<int64_t>{1, 1, 1});
  CHECK(p.dense[4].ToVector<int64_t>() == std::vector<int64_t>{20, 20, 20});
  CHECK(p.dense[5].ToVector<std::string>() ==
        std::vector<std::string>{Pixels(0), Pixels(1), Pixels(2)});

  Run inspect = PfData(fmt::format("inspect {} --compression GZIP", out));
  REQUIRE(inspect.status == 0);
  CHECK_THAT(inspect.out, Contains(": 3 records") && Contains("label: int64 [1] 3") &&
                              Contains("image_raw: bytes [1] '\\x00\\x01"));
  // --limit, and the same file uncompressed.
  const std::string two = (dir.path / "two.tfrecord").string();
  REQUIRE(PfData(fmt::format("convert --idx {} --out {} --split test --limit 2", dir.path.string(),
                             two))
              .status == 0);
  CHECK_THAT(PfData("inspect " + two).out, Contains(": 2 records"));
#else
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("needs a build with protobuf"));
#endif
}

TEST_CASE("pf-data convert --images writes each file's bytes with its class", "[tools][pf_data]") {
  if (!image::Available()) {
    WARN("SKIPPED: this build has no image codecs");
    return;
  }
  Dir dir("images");
  for (const char* cls : {"b_cls", "a_cls"}) {
    fs::create_directories(dir.path / "photos" / cls);
    Tensor img(DT_UINT8, {4, 6, 3});
    for (int64_t i = 0; i < img.num_elements(); ++i)
      img.data<uint8_t>()[i] = static_cast<uint8_t>(i * (cls[0] == 'a' ? 3 : 5));
    std::ofstream(dir.path / "photos" / cls / "x.png", std::ios::binary)
        << image::EncodePng(img).ValueOrThrow();
  }
  std::ofstream(dir.path / "photos" / "a_cls" / "notes.txt") << "not an image";
  const std::string out = (dir.path / "photos.tfrecord").string();
  Run r = PfData(fmt::format("convert --images {} --out {}", (dir.path / "photos").string(), out));
#if defined(PF_WITH_PROTOBUF)
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("wrote 2 images of 2 classes") && Contains("1 files that are not"));
  Run shown = PfData("inspect " + out);
  CHECK_THAT(shown.out, Contains("2 records"));
  CHECK_THAT(shown.out, Contains("image/class/text: bytes [1] 'a_cls'") &&
                            Contains("image/class/label: int64 [1] 0") &&
                            Contains("image/format: bytes [1] 'png'") &&
                            Contains("image/height: int64 [1] 4") &&
                            Contains("image/width: int64 [1] 6"));
  // A file that does not decode is an error naming it.
  std::ofstream(dir.path / "photos" / "b_cls" / "broken.jpg") << "nope";
  Run bad =
      PfData(fmt::format("convert --images {} --out {}", (dir.path / "photos").string(), out));
  CHECK(bad.status == 1);
  CHECK_THAT(bad.err, Contains("broken.jpg"));
#else
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("needs a build with protobuf"));
#endif
}

TEST_CASE("pf-data reports bad input and usage", "[tools][pf_data]") {
  Dir dir("errors");
  Run missing = PfData(
      fmt::format("convert --idx {} --out {}/x.tfrecord", dir.path.string(), dir.path.string()));
  CHECK(missing.status == 1);
#if defined(PF_WITH_PROTOBUF)
  CHECK_THAT(missing.err, Contains("train-images-idx3-ubyte"));
#endif
  CHECK_THAT(PfData("convert --idx a").err,
             Contains("needs --idx DIR or --images DIR, and --out FILE"));
  CHECK_THAT(PfData("convert --idx a --images b --out c").err, Contains("needs --idx DIR or"));
  CHECK_THAT(PfData("convert --compression LZ4 --idx a --out b").err, Contains("--compression"));
  Run none = PfData("inspect " + (dir.path / "nope.tfrecord").string());
  CHECK(none.status == 1);
  CHECK_THAT(none.err, Contains("NotFound") && Contains("nope.tfrecord"));
  // A damaged file: DataLoss naming the offset.
  const std::string bad = (dir.path / "bad.tfrecord").string();
  std::ofstream(bad, std::ios::binary) << std::string("\x05\0\0\0\0\0\0\0garbage!", 16);
  CHECK_THAT(PfData("inspect " + bad).err,
             Contains("DataLoss") && Contains("offset 0") && Contains("length crc mismatch"));
  Run usage = PfData("frobnicate");
  CHECK(usage.status == 2);
  CHECK_THAT(usage.err, Contains("usage: pf-data convert"));
  CHECK(PfData("--help").status == 0);
  CHECK_THAT(PfData("convert --help").out, Contains("--idx"));
}

}  // namespace
}  // namespace pf::pf_data_test
