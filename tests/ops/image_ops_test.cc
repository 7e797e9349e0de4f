// Image ops (issue 36): JPEG and PNG decoding against what TensorFlow decodes from the same
// files, resizing and its gradients against TensorFlow's values, and bad files. The fixtures
// were made by TensorFlow 2.21 (tests/data/image_fixtures/make_fixtures.py, its README).
#include "placeflow/ops/image_ops.h"

#include <fstream>
#include <random>
#include <sstream>
#include <tuple>

#include "placeflow/io/image_codec.h"
#include "placeflow/io/png_zlib.h"
#include "placeflow/ops/image/resize.h"
#include "placeflow/ops/simd/cpu_isa.h"
#include "tests/testing/test_util.h"

namespace pf::image_ops_test {
namespace {

using Catch::Matchers::Contains;

std::string FixturePath(const std::string& name) {
  return std::string(PF_SOURCE_DIR) + "/tests/data/image_fixtures/" + name;
}

std::string ReadBytes(const std::string& name) {
  std::ifstream f(FixturePath(name), std::ios::binary);
  REQUIRE(f.good());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A fixture array: dtype line, shape line, values line (make_fixtures.py's format).
Tensor ReadArray(const std::string& name) {
  std::ifstream f(FixturePath(name));
  INFO(name);
  REQUIRE(f.good());
  std::string dtype, shape_line, values;
  std::getline(f, dtype);
  std::getline(f, shape_line);
  std::getline(f, values);
  std::vector<int64_t> dims;
  std::istringstream sd(shape_line);
  for (int64_t d; sd >> d;) dims.push_back(d);
  const Shape shape = Shape::FromDims(dims).ValueOrThrow();
  std::istringstream sv(values);
  if (dtype == "uint8") {
    Tensor t(DT_UINT8, shape);
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      int v = 0;
      sv >> v;
      t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    }
    return t;
  }
  REQUIRE(dtype == "float32");
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) sv >> t.data<float>()[i];
  return t;
}

// Exact equality of uint8 images (shape and every byte).
void CheckSameImage(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  int64_t diffs = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i)
    diffs += got.data<uint8_t>()[i] != want.data<uint8_t>()[i];
  CHECK(diffs == 0);
}

#define SKIP_WITHOUT_CODECS()                                          \
  if (!image::Available()) {                                           \
    WARN("SKIPPED: this build has no image codecs (libjpeg, libpng)"); \
    return;                                                            \
  }

TEST_CASE("DecodeJpeg gives TensorFlow's pixels for every channels, ratio and DCT method",
          "[image]") {
  SKIP_WITHOUT_CODECS();
  for (const char* file : {"rgb_13x9.jpg", "gray_10x7.jpg", "rgb_64x48.jpg"}) {
    const std::string bytes = ReadBytes(file);
    const bool big = std::string(file) == "rgb_64x48.jpg";
    for (int channels : {0, 1, 3}) {
      for (int ratio : {1, 2, 4, 8}) {
        if (ratio > 2 && !big) continue;
        for (const char* dct : {"", "INTEGER_ACCURATE"}) {
          const std::string variant =
              fmt::format("c{}_r{}_{}", channels, ratio, *dct ? "accurate" : "default");
          CAPTURE(file, variant);
          image::JpegOptions o;
          o.channels = channels;
          o.ratio = ratio;
          o.dct_method = dct;
          StatusOr<Tensor> got = image::DecodeJpeg(bytes, o);
          REQUIRE(got.ok());
          // The big image's channels=0 fixtures were left out: TF's equal its channels=3 ones.
          const std::string want =
              fmt::format("{}.c{}_r{}_{}.txt", file, big && channels == 0 ? 3 : channels, ratio,
                          *dct ? "accurate" : "default");
          CheckSameImage(*got, ReadArray(want));
        }
      }
    }
  }
}

TEST_CASE("DecodePng gives TensorFlow's pixels for every channels count", "[image]") {
  SKIP_WITHOUT_CODECS();
  for (const char* file : {"rgb_13x9.png", "rgba_5x6.png", "gray_6x4.png", "gray16_7x5.png"}) {
    const std::string bytes = ReadBytes(file);
    for (int channels : {0, 1, 3, 4}) {
      CAPTURE(file, channels);
      StatusOr<Tensor> got = image::DecodePng(bytes, channels);
      REQUIRE(got.ok());
      CheckSameImage(*got, ReadArray(fmt::format("{}.c{}_uint8.txt", file, channels)));
    }
  }
  // uint16 needs a dtype placeflow does not have yet: a clear error, not wrong pixels.
  StatusOr<Tensor> wide = image::DecodePng(ReadBytes("gray16_7x5.png"), 0, DT_INT16);
  CHECK(wide.status().code() == Code::kUnimplemented);
}

TEST_CASE("Images encoded as PNG come back exactly, as JPEG closely", "[image]") {
  SKIP_WITHOUT_CODECS();
  for (int64_t c : {1, 2, 3, 4}) {
    Tensor img(DT_UINT8, {9, 13, c});
    for (int64_t i = 0; i < img.num_elements(); ++i)
      img.data<uint8_t>()[i] = static_cast<uint8_t>((i * 37 + i / 7) % 256);
    StatusOr<std::string> png = image::EncodePng(img, 6);
    REQUIRE(png.ok());
    CHECK(image::SniffFormat(*png) == image::Format::kPng);
    StatusOr<Tensor> back = image::DecodePng(*png);
    REQUIRE(back.ok());
    CheckSameImage(*back, img);
    if (c == 2 || c == 4) continue;
    // A smooth image at quality 100: JPEG's error stays within a few levels.
    Tensor smooth(DT_UINT8, {16, 24, c});
    for (int64_t y = 0; y < 16; ++y)
      for (int64_t x = 0; x < 24; ++x)
        for (int64_t k = 0; k < c; ++k)
          smooth.data<uint8_t>()[(y * 24 + x) * c + k] =
              static_cast<uint8_t>(40 + 5 * x + 3 * y + 20 * k);
    StatusOr<std::string> jpeg = image::EncodeJpeg(smooth, 100);
    REQUIRE(jpeg.ok());
    image::JpegOptions o;
    o.dct_method = "INTEGER_ACCURATE";
    StatusOr<Tensor> decoded = image::DecodeJpeg(*jpeg, o);
    REQUIRE(decoded.ok());
    REQUIRE(decoded->shape() == smooth.shape());
    int worst = 0;
    for (int64_t i = 0; i < smooth.num_elements(); ++i)
      worst = std::max(worst, std::abs(decoded->data<uint8_t>()[i] - smooth.data<uint8_t>()[i]));
    CHECK(worst <= 3);
  }
}

TEST_CASE("A CMYK JPEG (Adobe's inverted values) decodes to TensorFlow's RGB", "[image]") {
  SKIP_WITHOUT_CODECS();
  const std::string bytes = ReadBytes("cmyk_8x6.jpg");  // make_cmyk_fixture.py, Pillow's
  for (int channels : {0, 3}) {
    image::JpegOptions o;
    o.channels = channels;
    StatusOr<Tensor> got = image::DecodeJpeg(bytes, o);
    REQUIRE(got.ok());
    const Tensor want = ReadArray(fmt::format("cmyk_8x6.jpg.c{}.txt", channels));
    REQUIRE(got->shape() == want.shape());
    int worst = 0;
    for (int64_t i = 0; i < want.num_elements(); ++i)
      worst = std::max(worst, std::abs(got->data<uint8_t>()[i] - want.data<uint8_t>()[i]));
    CHECK(worst == 0);
  }
  image::JpegOptions gray;
  gray.channels = 1;
  StatusOr<Tensor> g = image::DecodeJpeg(bytes, gray);
  REQUIRE(g.ok());
  CHECK(g->shape() == Shape({6, 8, 1}));
}

TEST_CASE("A truncated JPEG: an error, or what TensorFlow recovers from it", "[image]") {
  SKIP_WITHOUT_CODECS();
  const std::string truncated = ReadBytes("truncated.jpg");  // 60% of rgb_64x48.jpg
  StatusOr<Tensor> full = image::DecodeJpeg(ReadBytes("rgb_64x48.jpg"));
  REQUIRE(full.ok());
  const int64_t row = 64 * 3;
  auto same_rows = [&](const Tensor& a, const Tensor& b, int64_t rows) {
    return std::equal(a.data<uint8_t>(), a.data<uint8_t>() + rows * row, b.data<uint8_t>());
  };
  // try_recover_truncated: every line, the first 15 as in the full file, the rest libjpeg's
  // (the same libjpeg-turbo as TensorFlow's: all of them equal).
  image::JpegOptions recover;
  recover.try_recover_truncated = true;
  recover.acceptable_fraction = 0.5f;
  StatusOr<Tensor> r = image::DecodeJpeg(truncated, recover);
  REQUIRE(r.ok());
  const Tensor tf = ReadArray("truncated.jpg.recovered.txt");
  REQUIRE(r->shape() == tf.shape());
  CHECK(same_rows(*r, *full, 15));
  CHECK(same_rows(*r, tf, 15));
  // Without it: the lines read (14 of 48), zeros after, when acceptable_fraction allows.
  image::JpegOptions quarter;
  quarter.acceptable_fraction = 0.25f;
  StatusOr<Tensor> q = image::DecodeJpeg(truncated, quarter);
  REQUIRE(q.ok());
  CHECK(same_rows(*q, *full, 14));
  CHECK(std::all_of(q->data<uint8_t>() + 14 * row, q->data<uint8_t>() + 48 * row,
                    [](uint8_t v) { return v == 0; }));
  quarter.acceptable_fraction = 0.3f;
  CHECK(image::DecodeJpeg(truncated, quarter).status().code() == Code::kInvalidArgument);
}

TEST_CASE("Bad image files are InvalidArgument with the decoder's reason; nothing crashes",
          "[image][errors]") {
  SKIP_WITHOUT_CODECS();
  const std::string truncated = ReadBytes("truncated.jpg");
  StatusOr<Tensor> t = image::DecodeJpeg(truncated);
  CHECK(t.status().code() == Code::kInvalidArgument);
  CHECK_THAT(t.status().message(), Contains("Invalid JPEG data") && Contains("truncated"));
  StatusOr<Tensor> c = image::DecodePng(ReadBytes("corrupt.png"));
  CHECK(c.status().code() == Code::kInvalidArgument);
  CHECK_THAT(c.status().message(), Contains("Invalid PNG data"));
  StatusOr<Tensor> n = image::DecodeImage(ReadBytes("not_an_image.bin"));
  CHECK(n.status().code() == Code::kInvalidArgument);
  CHECK_THAT(n.status().message(), Contains("Unknown image file format"));
  CHECK(image::DecodeImage("GIF89a....").status().code() == Code::kUnimplemented);
  CHECK(image::DecodeJpeg("").status().code() == Code::kInvalidArgument);
  CHECK(image::DecodePng(ReadBytes("rgb_13x9.jpg")).status().code() == Code::kInvalidArgument);
  // Every prefix of a real file is an error or an image, never a crash.
  const std::string good = ReadBytes("rgb_13x9.png"), jpg = ReadBytes("rgb_13x9.jpg");
  for (size_t n = 0; n < good.size(); n += 7) (void)image::DecodePng(good.substr(0, n));
  for (size_t n = 0; n < jpg.size(); n += 11) (void)image::DecodeJpeg(jpg.substr(0, n));
  CHECK(image::EncodePng(Tensor(DT_FLOAT, {2, 2, 3})).status().code() == Code::kInvalidArgument);
  CHECK(image::EncodePng(Tensor(DT_UINT8, {0, 5, 3})).status().code() == Code::kInvalidArgument);
  CHECK(image::EncodeJpeg(Tensor(DT_UINT8, {4, 0, 3})).status().code() == Code::kInvalidArgument);
  // Cut inside the header: the reason says so.
  CHECK_THAT(image::DecodeJpeg(jpg.substr(0, 40)).status().message(), Contains("header"));
}

TEST_CASE("The zlib-only PNG writer (builds without libpng) decodes to its pixels", "[image]") {
  SKIP_WITHOUT_CODECS();
  for (int64_t c : {1, 2, 3, 4}) {
    Tensor img(DT_UINT8, {5, 7, c});
    for (int64_t i = 0; i < img.num_elements(); ++i)
      img.data<uint8_t>()[i] = static_cast<uint8_t>(i * 37);
    StatusOr<std::string> png =
        image::EncodePngUnfiltered(img.data<uint8_t>(), 5, 7, c, /*compression=*/-1);
    REQUIRE(png.ok());
    CheckSameImage(image::DecodePng(*png, 0).ValueOrThrow(), img);
  }
}

TEST_CASE("The decode ops in a graph: ReadFile, DecodeImage, EncodePng", "[image]") {
  SKIP_WITHOUT_CODECS();
  Graph g;
  Scope root = Scope::Root(&g);
  Output path = ops::Placeholder(root.WithOpName("path"), DT_STRING, {});
  Output bytes = ops::ReadFile(root, path);
  Output rgb = ops::DecodeImage(root.WithOpName("decode"), bytes, {.channels = 3});
  Output f = ops::DecodeImage(root, bytes, {.channels = 3, .dtype = DT_FLOAT});
  Output again = ops::DecodePng(root, ops::EncodePng(root, rgb), 3);
  CHECK(rgb.shape().ToString() == Shape({-1, -1, 3}).ToString());
  Session sess(g);
  auto r =
      sess.Run({{path, Tensor::Scalar<std::string>(FixturePath("rgb_13x9.png"))}}, {rgb, f, again});
  CheckSameImage(r[0], ReadArray("rgb_13x9.png.c3_uint8.txt"));
  CheckSameImage(r[2], r[0]);
  CHECK(r[1].data<float>()[5] == Approx(r[0].data<uint8_t>()[5] / 255.0));
  // A file that is not an image fails the step, naming the node.
  std::vector<Tensor> out;
  Status s = sess.TryRun({{path, Tensor::Scalar<std::string>(FixturePath("not_an_image.bin"))}},
                         {rgb}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("decode") && Contains("Unknown image file format"));
}

TEST_CASE("ResizeBilinear and ResizeNearestNeighbor give TensorFlow's values in every mode",
          "[image][resize]") {
  const Tensor input = ReadArray("resize_input.txt");  // [2, 5, 7, 3]
  const char* modes[] = {"legacy", "align_corners", "half_pixel"};
  for (auto [h, w] : {std::pair{3, 4}, {9, 11}, {5, 7}, {10, 3}}) {
    for (int m = 0; m < 3; ++m) {
      CAPTURE(h, w, modes[m]);
      Graph g;
      Scope root = Scope::Root(&g);
      Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2, 5, 7, 3});
      const ops::ResizeAttrs a{.align_corners = m == 1, .half_pixel_centers = m == 2};
      Output size = ops::ConstInt(root, {h, w});
      Output bl = ops::ResizeBilinear(root, x, size, a);
      Output nn = ops::ResizeNearestNeighbor(root, x, size, a);
      const std::string tail = fmt::format("{}x{}_{}.txt", h, w, modes[m]);
      const Tensor grad = ReadArray(fmt::format("grad_{}x{}.txt", h, w));
      auto dbl = Gradients(root, {bl}, {x}, {ops::Const(root, grad)});
      auto dnn = Gradients(root, {nn}, {x}, {ops::Const(root, grad)});
      Session sess(g);
      auto r = sess.Run({{x, input}}, {bl, nn, dbl[0], dnn[0]});
      CHECK(testing::MaxAbsDiff(r[0], ReadArray("resize_bilinear_" + tail)) < 1e-5);
      CHECK(testing::MaxAbsDiff(r[1], ReadArray("resize_nearest_" + tail)) == 0);
      CHECK(testing::MaxAbsDiff(r[2], ReadArray("resize_bilinear_grad_" + tail)) < 1e-5);
      CHECK(testing::MaxAbsDiff(r[3], ReadArray("resize_nearest_grad_" + tail)) < 1e-5);
    }
  }
}

// TensorFlow's bilinear resize per output value, written out: the input coordinate, its two
// neighbours, across each row and then between the rows.
template <typename T>
std::vector<float> NaiveBilinear(const std::vector<T>& in, int64_t b, int64_t h, int64_t w,
                                 int64_t c, int64_t oh, int64_t ow, bool align, bool half) {
  auto coord = [&](int64_t i, int64_t n, int64_t on, int64_t* lo, int64_t* hi) {
    const float scale = align && on > 1 ? static_cast<float>(n - 1) / static_cast<float>(on - 1)
                                        : static_cast<float>(n) / static_cast<float>(on);
    const float src =
        half ? (static_cast<float>(i) + 0.5f) * scale - 0.5f : static_cast<float>(i) * scale;
    *lo = std::clamp<int64_t>(static_cast<int64_t>(std::floor(src)), 0, n - 1);
    *hi = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(src)), 0, n - 1);
    return src - std::floor(src);
  };
  std::vector<float> out(static_cast<size_t>(b * oh * ow * c));
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t y = 0; y < oh; ++y) {
      int64_t y0, y1, x0, x1;
      const float fy = coord(y, h, oh, &y0, &y1);
      for (int64_t x = 0; x < ow; ++x) {
        const float fx = coord(x, w, ow, &x0, &x1);
        for (int64_t k = 0; k < c; ++k) {
          auto at = [&](int64_t yy, int64_t xx) {
            return static_cast<float>(in[static_cast<size_t>(((n * h + yy) * w + xx) * c + k)]);
          };
          const float top = at(y0, x0) + (at(y0, x1) - at(y0, x0)) * fx;
          const float bottom = at(y1, x0) + (at(y1, x1) - at(y1, x0)) * fx;
          out[static_cast<size_t>(((n * oh + y) * ow + x) * c + k)] = top + (bottom - top) * fy;
        }
      }
    }
  }
  return out;
}

TEST_CASE("The bilinear resize gives the naive loop's bits under every ISA cap",
          "[image][resize][simd]") {
  const simd::CpuIsa saved = simd::MaxCpuIsa();
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  for (simd::CpuIsa cap : {simd::CpuIsa::kSse4, simd::CpuIsa::kAvx2, simd::CpuIsa::kAvx512}) {
    if (cap > simd::HostCpuIsa()) continue;
    simd::SetMaxCpuIsa(cap);
    for (auto [h, w, oh, ow] : {std::tuple{256, 256, 224, 224},
                                {5, 7, 9, 11},
                                {9, 13, 5, 6},
                                {1, 1, 3, 17},
                                {4, 30, 2, 1}}) {
      for (int64_t c : {1, 2, 3, 4, 5}) {
        for (int mode = 0; mode < 3; ++mode) {
          CAPTURE(simd::CpuIsaName(cap), h, w, oh, ow, c, mode);
          const int64_t n = 2 * h * w * c;
          std::vector<uint8_t> bytes(static_cast<size_t>(n));
          std::vector<float> floats(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) {
            bytes[i] = static_cast<uint8_t>(byte(rng));
            floats[i] = static_cast<float>(byte(rng)) / 7.f - 11.f;
          }
          const image::ResizeMode m{.align_corners = mode == 1, .half_pixel_centers = mode == 2};
          std::vector<float> got(static_cast<size_t>(2 * oh * ow * c));
          image::ResizeBilinearImpl(bytes.data(), 2, h, w, c, got.data(), oh, ow, m);
          CHECK(got == NaiveBilinear(bytes, 2, h, w, c, oh, ow, mode == 1, mode == 2));
          image::ResizeBilinearImpl(floats.data(), 2, h, w, c, got.data(), oh, ow, m);
          CHECK(got == NaiveBilinear(floats, 2, h, w, c, oh, ow, mode == 1, mode == 2));
        }
      }
    }
  }
  simd::SetMaxCpuIsa(saved);
}

TEST_CASE("tf.image.resize (TF 2) in bilinear and nearest, and uint8 input", "[image][resize]") {
  const Tensor input = ReadArray("resize_input.txt");
  for (auto [h, w] : {std::pair{3, 4}, {9, 11}}) {
    for (const char* method : {"bilinear", "nearest"}) {
      CAPTURE(h, w, method);
      Graph g;
      Scope root = Scope::Root(&g);
      Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2, 5, 7, 3});
      Output y = ops::Resize(root, x, {h, w}, method);
      Session sess(g);
      CHECK(testing::MaxAbsDiff(sess.Run({{x, input}}, {y})[0],
                                ReadArray(fmt::format("image_resize_{}_{}x{}.txt", method, h, w))) <
            1e-5);
    }
  }
  // A 3-D uint8 image (decoded from the PNG by TensorFlow) resized to float.
  Graph g;
  Scope root = Scope::Root(&g);
  const Tensor rgb = ReadArray("rgb_13x9.png.c3_uint8.txt");  // [9, 13, 3]
  Output y = ops::ResizeBilinear(root, ops::ExpandDims(root, ops::Const(root, rgb), 0),
                                 ops::ConstInt(root, {5, 6}), {.half_pixel_centers = true});
  Session sess(g);
  CHECK(testing::MaxAbsDiff(sess.Run({y})[0],
                            ReadArray("resize_bilinear_uint8_5x6_half_pixel.txt")) < 1e-4);
  CHECK_THROWS_WITH(ops::Resize(root, ops::Const(root, rgb), {0, 3}), Contains("positive"));
}

TEST_CASE("ResizeBilinearGrad refuses an empty original image", "[image][resize][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output grads = ops::Const(root, Tensor(DT_FLOAT, {1, 2, 2, 1}));
  Output orig = ops::Const(root, Tensor(DT_FLOAT, {1, 0, 3, 1}));
  Output bad = NodeBuilder(root, "ResizeBilinearGrad").Input(grads).Input(orig).Finalize();
  Session sess(g);
  std::vector<Tensor> out;
  Status s = sess.TryRun({}, {bad}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("height > 0"));
}

TEST_CASE("Resize gradients match finite differences", "[image][resize][gradients]") {
  for (int m = 0; m < 3; ++m) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {1, 4, 5, 2});
    const ops::ResizeAttrs a{.align_corners = m == 1, .half_pixel_centers = m == 2};
    Output y = ops::ResizeBilinear(root, x, ops::ConstInt(root, {7, 3}), a);
    // ResizeBilinear computes in float and is linear in x: a large step (0.1) leaves only float
    // rounding in the finite differences.
    const double err = ComputeGradientError(root, x, {1, 4, 5, 2}, ops::Cast(root, y, DT_DOUBLE),
                                            {1, 7, 3, 2}, nullptr, 0.1);
    CHECK(err < 1e-4);
  }
}

}  // namespace
}  // namespace pf::image_ops_test

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef SKIP_WITHOUT_CODECS
