// FromImageFolder (issue 36): a folder of class subfolders generated here (bright "cats" and dark
// "dogs", JPEG and PNG, a file that is not an image, an empty class), against Keras's rules.
#include "placeflow/data/image_folder.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "placeflow/io/image_codec.h"
#include "tests/testing/test_util.h"

namespace pf::image_folder_test {
namespace {

using Catch::Matchers::Contains;

// A [h, w, 3] image of level `base` with a little texture.
Tensor Picture(int64_t h, int64_t w, int base) {
  Tensor t(DT_UINT8, {h, w, 3});
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.data<uint8_t>()[i] = static_cast<uint8_t>(base + (i * 7) % 20);
  return t;
}

void Write(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// cats: 5 bright images, dogs: 3 dark ones (sizes vary), notes.txt, zebra: empty.
void MakeFolder(const std::filesystem::path& root) {
  std::filesystem::create_directories(root / "cats");
  std::filesystem::create_directories(root / "dogs" / "puppies");
  std::filesystem::create_directories(root / "zebra");
  for (int i = 0; i < 5; ++i) {
    const Tensor img = Picture(20 + i, 30 - i, 200);
    Write(root / "cats" / fmt::format("cat{}.{}", i, i % 2 ? "png" : "JPG"),
          i % 2 ? image::EncodePng(img).ValueOrThrow() : image::EncodeJpeg(img, 90).ValueOrThrow());
  }
  for (int i = 0; i < 3; ++i) {
    const Tensor img = Picture(16, 16 + 3 * i, 20);
    Write(root / "dogs" / (i == 2 ? "puppies" : "") / fmt::format("dog{}.png", i),
          image::EncodePng(img).ValueOrThrow());
  }
  Write(root / "dogs" / "notes.txt", "not an image");
}

TEST_CASE("FromImageFolder: classes, labels, sizes, skipped files", "[image][data]") {
  if (!image::Available()) {
    WARN("SKIPPED: this build has no image codecs");
    return;
  }
  testing::TempDir dir("image_folder");
  MakeFolder(dir.path);
  data::ImageFolderOptions o;
  o.image_size = {12, 10};
  auto folder = data::FromImageFolder(dir.path.string(), o).ValueOrThrow();
  CHECK(folder.class_names == std::vector<std::string>{"cats", "dogs", "zebra"});
  CHECK(folder.num_files == 8);
  CHECK(folder.num_skipped == 1);
  CHECK(folder.per_class == std::vector<int64_t>{5, 3, 0});
  auto it = folder.dataset.MakeIterator();
  std::vector<Tensor> e;
  int count[2] = {0, 0};
  while (it->GetNext(&e).ValueOrThrow()) {
    REQUIRE(e[0].shape() == Shape({12, 10, 3}));
    const int32_t label = e[1].scalar<int32_t>();
    REQUIRE((label == 0 || label == 1));
    ++count[label];
    double mean = 0;
    for (int64_t i = 0; i < e[0].num_elements(); ++i) mean += e[0].data<float>()[i];
    mean /= static_cast<double>(e[0].num_elements());
    // Bright cats (about 210), dark dogs (about 30), in Keras's 0..255 floats.
    CHECK(std::abs(mean - (label == 0 ? 209.5 : 29.5)) < 4);
  }
  CHECK(count[0] == 5);
  CHECK(count[1] == 3);
}

TEST_CASE("FromImageFolder: a seeded split, training and validation sharing out the files",
          "[image][data]") {
  if (!image::Available()) {
    WARN("SKIPPED: this build has no image codecs");
    return;
  }
  testing::TempDir dir("image_folder_split");
  MakeFolder(dir.path);
  data::ImageFolderOptions o;
  o.image_size = {8, 8};
  o.validation_split = 0.25;
  o.seed = 7;
  o.subset = "training";
  auto train = data::FromImageFolder(dir.path.string(), o).ValueOrThrow();
  o.subset = "validation";
  auto val = data::FromImageFolder(dir.path.string(), o).ValueOrThrow();
  CHECK(train.num_files == 6);
  CHECK(val.num_files == 2);
  CHECK(train.per_class[0] + val.per_class[0] == 5);
  CHECK(train.per_class[1] + val.per_class[1] == 3);
  // The same seed, the same split.
  auto again = data::FromImageFolder(dir.path.string(), o).ValueOrThrow();
  CHECK(again.per_class == val.per_class);
}

TEST_CASE("FromImageFolder: bad folders, options and files are clear errors", "[image][data]") {
  if (!image::Available()) {
    WARN("SKIPPED: this build has no image codecs");
    return;
  }
  testing::TempDir dir("image_folder_bad");
  CHECK(data::FromImageFolder((dir.path / "missing").string()).status().code() == Code::kNotFound);
  std::filesystem::create_directories(dir.path / "empty" / "a");
  auto none = data::FromImageFolder((dir.path / "empty").string());
  CHECK(none.status().code() == Code::kInvalidArgument);
  CHECK_THAT(none.status().message(), Contains("No images found"));
  data::ImageFolderOptions split_only;
  split_only.validation_split = 0.2;
  CHECK_THAT(data::FromImageFolder(dir.path.string(), split_only).status().message(),
             Contains("validation_split and subset go together"));
  // A file named like an image that is not one: GetNext fails, naming it.
  std::filesystem::create_directories(dir.path / "broken" / "x");
  Write(dir.path / "broken" / "x" / "fake.jpg", "definitely not a jpeg");
  auto broken = data::FromImageFolder((dir.path / "broken").string()).ValueOrThrow();
  std::vector<Tensor> e;
  StatusOr<bool> got = broken.dataset.MakeIterator()->GetNext(&e);
  CHECK(got.status().code() == Code::kInvalidArgument);
  CHECK_THAT(got.status().message(), Contains("fake.jpg") && Contains("Unknown image file format"));
}

}  // namespace
}  // namespace pf::image_folder_test
