// pf-train on a folder of photos (issue 36): a folder of two classes of JPEG and PNG files
// generated here (bright and dark noise, told apart by any CNN), trained from the command line.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "placeflow/io/image_codec.h"
#include "tests/testing/test_util.h"
#include "tools/tfrecord_input.h"
#if defined(PF_WITH_PROTOBUF)
#include "placeflow/io/example.h"
#include "placeflow/io/record_io.h"
#endif

namespace pf::image_training_test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

// `n` images of 20x20 per class: "bright" around 170, "dark" around 80, with noise.
void MakePhotos(const fs::path& root, int n, unsigned seed = 3) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.f, 40.f);
  for (auto [name, level] : {std::pair{"bright", 170.f}, {"dark", 80.f}}) {
    fs::create_directories(root / name);
    for (int i = 0; i < n; ++i) {
      Tensor img(DT_UINT8, {20, 20, 3});
      for (int64_t k = 0; k < img.num_elements(); ++k)
        img.data<uint8_t>()[k] = static_cast<uint8_t>(std::clamp(level + noise(rng), 0.f, 255.f));
      const bool png = i % 2 == 1;
      std::ofstream(root / name / fmt::format("{}.{}", i, png ? "png" : "jpg"), std::ios::binary)
          << (png ? image::EncodePng(img) : image::EncodeJpeg(img, 90)).ValueOrThrow();
    }
  }
}

// A tool's exit status and output (pf-train's unless `binary` says otherwise).
std::pair<int, std::string> Train(const std::string& args,
                                  const std::string& binary = PF_TRAIN_BINARY) {
  const fs::path out = fs::temp_directory_path() / fmt::format("pf_image_train_{}.out", getpid());
  const int rc = std::system(
      fmt::format("CUDA_VISIBLE_DEVICES= {} {} >{} 2>&1", binary, args, out.string()).c_str());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  fs::remove(out);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc), ss.str()};
}

double LastAccuracy(const std::string& out) {
  const size_t at = out.rfind("test_accuracy=");
  return at == std::string::npos ? -1 : std::stod(out.substr(at + 14));
}

TEST_CASE("pf-train learns a folder of photos; mobilenet_v2 builds at any width and size",
          "[cli][image]") {
  if (!image::Available()) {
    WARN("SKIPPED: this build has no image codecs");
    return;
  }
  testing::TempDir dir("photos");
  MakePhotos(dir.path, 40);
  const std::string data = "--data " + dir.path.string() + " --data-format images --towers 1";
  auto [rc, out] = Train("--model lenet --image-size 16 --epochs 6 --batch 16 " + data);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Contains("classes: 2 (bright, dark), images resized to 16x16"));
  CHECK_THAT(out, Contains("(64 train, 16 test examples)"));
  CHECK(LastAccuracy(out) >= 0.9);
  // Keras's MobileNetV2 at width 0.35 on 32x32: two steps run (it needs more data to learn).
  auto [rc2, out2] = Train("--model mobilenet_v2 --width 0.35 --image-size 32 --steps 2 " + data);
  INFO(out2);
  CHECK(rc2 == 0);
  CHECK_THAT(out2, Contains("model mobilenet_v2"));
  // A folder that is not one is a usage error naming it.
  auto [rc3, out3] =
      Train("--model lenet --data-format images --data " + (dir.path / "missing").string());
  CHECK(rc3 != 0);
  CHECK_THAT(out3, Contains("not found"));
  // Too few images to keep some for evaluation: a usage error saying so.
  testing::TempDir tiny("photos_tiny");
  MakePhotos(tiny.path, 1);
  auto [rc4, out4] =
      Train("--model lenet --data-format images --image-size 8 --data " + tiny.path.string());
  CHECK(rc4 == 2);
  CHECK_THAT(out4, Contains("leaves 2 to train on and 0 to evaluate on"));
}

TEST_CASE("pf-train learns TFRecord files of encoded photos (pf-data convert --images)",
          "[cli][image]") {
  if (!image::Available() || !tfrecord_input::Available()) {
    WARN("SKIPPED: this build has no image codecs or no protobuf");
    return;
  }
  testing::TempDir dir("photo_records");
  MakePhotos(dir.path / "train_photos", 40);
  MakePhotos(dir.path / "test_photos", 8, /*seed=*/11);
  fs::create_directories(dir.path / "records");
  for (const char* split : {"train", "test"}) {
    auto [rc, out] =
        Train(fmt::format("convert --images {} --out {}",
                          (dir.path / fmt::format("{}_photos", split)).string(),
                          (dir.path / "records" / fmt::format("{}.tfrecord", split)).string()),
              PF_DATA_BINARY);
    INFO(out);
    REQUIRE(rc == 0);
  }
  const std::string data = "--data " + (dir.path / "records").string() +
                           " --data-format tfrecord --towers 1 --image-size 16";
  auto [rc, out] = Train("--model lenet --epochs 6 --batch 16 " + data);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Contains("classes: 2 (bright, dark), images resized to 16x16"));
  CHECK_THAT(out, Contains("(80 train, 16 test examples)"));
  CHECK(LastAccuracy(out) >= 0.9);
  // A record whose image does not decode fails the run with the decoder's reason (pf-data
  // refuses such files, so the records are written here).
#if defined(PF_WITH_PROTOBUF)
  testing::TempDir bad("photo_records_bad");
  fs::copy(dir.path / "records" / "test.tfrecord", bad.path / "test.tfrecord");
  auto writer = io::RecordWriter::Open((bad.path / "train.tfrecord").string()).ValueOrThrow();
  for (int i = 0; i < 4; ++i) {
    Tensor img(DT_UINT8, {8, 8, 3});
    io::ExampleBuilder b;
    b.AddBytes("image/encoded", {i == 2 ? std::string("\xff\xd8\xff\xe0garbage", 11)
                                        : image::EncodePng(img).ValueOrThrow()})
        .AddInt64("image/class/label", {i % 2});
    REQUIRE(writer->Write(b.Serialize()).ok());
  }
  REQUIRE(writer->Close().ok());
  auto [rc_bad, out_bad] = Train(
      "--model lenet --steps 4 --batch 2 --towers 1 --image-size 8 "
      "--data-format tfrecord --data " +
      bad.path.string());
  INFO(out_bad);
  CHECK(rc_bad != 0);
  CHECK_THAT(out_bad, Contains("Invalid JPEG data"));
  CHECK_THAT(out_bad, Contains("class_0, class_1"));  // no image/class/text: names from labels
#endif
}

}  // namespace
}  // namespace pf::image_training_test
