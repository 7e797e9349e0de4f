// Summary ops (ops/summary/summary.h) against independent references: scalar values and tags,
// histogram buckets counted by a linear scan over the limits, PNG bytes inflated back to the
// pixels, merging, TF's errors, and the collection (tower 0's only with towers).
#include "placeflow/ops/summary/summary.h"

#include <zlib.h>

#include <cfloat>
#include <cmath>

#include "placeflow/io/proto/summary.pb.h"
#include "placeflow/train/towers.h"
#include "tests/testing/test_util.h"

namespace pf::summary_test {
namespace {

using Catch::Matchers::Contains;

tensorflow::Summary Parse(const Tensor& t) {
  REQUIRE(t.dtype() == DT_STRING);
  REQUIRE(t.num_elements() == 1);
  tensorflow::Summary s;
  REQUIRE(s.ParseFromString(t.flat<std::string>()[0]));
  return s;
}

TEST_CASE("ScalarSummary: the value under its tag, from any real dtype", "[summary]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output f = summary::Scalar(root, "loss", ops::Const(root, 0.75f));
  Output i = summary::Scalar(root, "count", ops::ConstInt(root, 12));
  Output d = summary::Scalar(root, "rate", ops::Const(root, Tensor::Scalar<double>(1e-3)));
  CHECK(f.node->name() == "loss");
  CHECK(f.node->op() == "ScalarSummary");
  Session sess(g);
  auto out = sess.Run({f, i, d});
  tensorflow::Summary sf = Parse(out[0]), si = Parse(out[1]), sd = Parse(out[2]);
  REQUIRE(sf.value_size() == 1);
  CHECK(sf.value(0).tag() == "loss");
  CHECK(sf.value(0).simple_value() == 0.75f);
  CHECK(si.value(0).simple_value() == 12.f);
  CHECK(sd.value(0).simple_value() == 1e-3f);
  CHECK(g.GetCollection(summary::kSummaries).size() == 3);
}

TEST_CASE("Default histogram buckets are TensorFlow's", "[summary]") {
  const std::vector<double>& b = summary::DefaultBucketLimits();
  // 1e-12 * 1.1^k below 1e20: k = 0..773 (774 limits), DBL_MAX; mirrored; 0 between.
  REQUIRE(b.size() == 2 * 775 + 1);
  CHECK(b.front() == -DBL_MAX);
  CHECK(b.back() == DBL_MAX);
  CHECK(b[775] == 0.0);
  CHECK(b[776] == 1e-12);
  CHECK(b[774] == -1e-12);
  CHECK(b[777] == Approx(1.1e-12).epsilon(1e-12));
  CHECK(b[b.size() - 2] < 1e20);
  CHECK(b[b.size() - 2] * 1.1 >= 1e20);
  for (size_t k = 1; k < b.size(); ++k) CHECK(b[k - 1] < b[k]);
}

TEST_CASE("HistogramSummary counts every value in its bucket", "[summary]") {
  const std::vector<float> values = {-3.f, -3.f, -0.5f, 0.f, 0.f, 1e-13f, 0.25f, 0.26f, 7.f, 1e6f};
  Graph g;
  Scope root = Scope::Root(&g);
  Output h = summary::Histogram(root, "w", ops::Const(root, values, Shape{2, 5}));
  Session sess(g);
  tensorflow::Summary s = Parse(sess.Run({h})[0]);
  REQUIRE(s.value_size() == 1);
  CHECK(s.value(0).tag() == "w");
  const tensorflow::HistogramProto& p = s.value(0).histo();
  CHECK(p.num() == 10);
  CHECK(p.min() == -3);
  CHECK(p.max() == 1e6);
  double sum = 0, sq = 0;
  for (float v : values) {
    sum += v;
    sq += static_cast<double>(v) * v;
  }
  CHECK(p.sum() == Approx(sum).epsilon(1e-12));
  CHECK(p.sum_squares() == Approx(sq).epsilon(1e-12));
  // Reference: a linear scan for the first limit above each value; the proto keeps non-empty
  // buckets, each run of empty ones collapsed into its last limit.
  const std::vector<double>& limits = summary::DefaultBucketLimits();
  std::vector<double> counts(limits.size(), 0);
  for (float v : values) {
    size_t k = 0;
    while (k + 1 < limits.size() && !(static_cast<double>(v) < limits[k])) ++k;
    counts[k] += 1;
  }
  std::vector<double> want_limits, want_counts;
  for (size_t k = 0; k < limits.size(); ++k) {
    if (counts[k] > 0) {
      want_limits.push_back(limits[k]);
      want_counts.push_back(counts[k]);
    } else if (k + 1 == limits.size() || counts[k + 1] > 0) {
      want_limits.push_back(limits[k]);  // the end of a run of empty buckets
      want_counts.push_back(0);
    }
  }
  CHECK(std::vector<double>(p.bucket_limit().begin(), p.bucket_limit().end()) == want_limits);
  CHECK(std::vector<double>(p.bucket().begin(), p.bucket().end()) == want_counts);
  double total = 0;
  for (double c : p.bucket()) total += c;
  CHECK(total == 10);
}

TEST_CASE("HistogramSummary of NaN is TensorFlow's error", "[summary]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output h = summary::Histogram(root, "bad", ops::Const(root, {1.f, NAN}, Shape{2}));
  Session sess(g);
  std::vector<Tensor> out;
  Status s = sess.TryRun({}, {h}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("Nan in summary histogram for: bad"));
}

// A PNG's pixels, read independently of the encoder: the chunks walked (CRCs checked), the IDAT
// data inflated with zlib, and each row's filter (none, sub, up, average, Paeth: the PNG
// specification's section 9) undone.
std::string PngPixels(const std::string& png, int* w, int* h, int* colour_type) {
  REQUIRE(png.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](size_t at) {
    return (uint32_t{static_cast<uint8_t>(png[at])} << 24) |
           (uint32_t{static_cast<uint8_t>(png[at + 1])} << 16) |
           (uint32_t{static_cast<uint8_t>(png[at + 2])} << 8) | static_cast<uint8_t>(png[at + 3]);
  };
  std::string idat;
  for (size_t at = 8; at < png.size();) {
    const uint32_t len = be32(at);
    const std::string type = png.substr(at + 4, 4);
    const std::string body = png.substr(at + 4, 4 + len);
    CHECK(be32(at + 8 + len) ==
          crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
    if (type == "IHDR") {
      *w = static_cast<int>(be32(at + 8));
      *h = static_cast<int>(be32(at + 12));
      *colour_type = static_cast<uint8_t>(png[at + 17]);
    }
    if (type == "IDAT") idat += png.substr(at + 8, len);
    at += 12 + len;
  }
  std::string raw(1 << 16, '\0');
  uLongf n = raw.size();
  REQUIRE(uncompress(reinterpret_cast<Bytef*>(raw.data()), &n,
                     reinterpret_cast<const Bytef*>(idat.data()), idat.size()) == Z_OK);
  raw.resize(n);
  const int bpp = *colour_type == 0 ? 1 : *colour_type == 4 ? 2 : *colour_type == 2 ? 3 : 4;
  const size_t stride = static_cast<size_t>(*w) * bpp;
  REQUIRE(raw.size() == (stride + 1) * static_cast<size_t>(*h));
  std::string pixels(stride * static_cast<size_t>(*h), '\0');
  auto at = [&](size_t row, size_t i) -> int {  // a decoded byte; 0 outside the image
    return static_cast<uint8_t>(pixels[row * stride + i]);
  };
  for (size_t y = 0; y < static_cast<size_t>(*h); ++y) {
    const int filter = static_cast<uint8_t>(raw[y * (stride + 1)]);
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= static_cast<size_t>(bpp) ? at(y, i - bpp) : 0;
      const int b = y > 0 ? at(y - 1, i) : 0;
      const int c = y > 0 && i >= static_cast<size_t>(bpp) ? at(y - 1, i - bpp) : 0;
      const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
      const int predictor[] = {0, a, b, (a + b) / 2, pa <= pb && pa <= pc ? a : pb <= pc ? b : c};
      REQUIRE(filter <= 4);
      pixels[y * stride + i] = static_cast<char>(
          static_cast<uint8_t>(raw[y * (stride + 1) + 1 + i]) + predictor[filter]);
    }
  }
  return pixels;
}

TEST_CASE("ImageSummary encodes PNGs: uint8 as is, floats scaled as TensorFlow does", "[summary]") {
  Graph g;
  Scope root = Scope::Root(&g);
  // Two 2x3 grayscale uint8 images; max_images 1 keeps the first.
  std::vector<uint8_t> px = {0, 10, 20, 30, 40, 250, 1, 2, 3, 4, 5, 6};
  Tensor u8(DT_UINT8, {2, 2, 3, 1});
  std::copy(px.begin(), px.end(), u8.data<uint8_t>());
  Output a = summary::Image(root, "digits", ops::Const(root, u8), 1);
  // One 1x3 RGB float image, all non-negative: the largest becomes 255.
  Output b = summary::Image(root, "rgb", ops::Const(root, {0.f, 0.5f, 1.f}, Shape{1, 1, 1, 3}));
  // Negative values: 0 maps to 127, the larger magnitude to the range's end.
  Output c = summary::Image(root, "signed", ops::Const(root, {-1.f, 0.f, 0.5f}, Shape{1, 1, 3, 1}));
  Session sess(g);
  auto out = sess.Run({a, b, c});
  int w, h, ct;
  tensorflow::Summary sa = Parse(out[0]);
  REQUIRE(sa.value_size() == 1);
  CHECK(sa.value(0).tag() == "digits/image");
  CHECK(sa.value(0).image().width() == 3);
  CHECK(sa.value(0).image().height() == 2);
  CHECK(sa.value(0).image().colorspace() == 1);
  std::string raw = PngPixels(sa.value(0).image().encoded_image_string(), &w, &h, &ct);
  CHECK((w == 3 && h == 2 && ct == 0));
  CHECK(raw == std::string("\x00\x0a\x14\x1e\x28\xfa", 6));
  std::string rgb = PngPixels(Parse(out[1]).value(0).image().encoded_image_string(), &w, &h, &ct);
  CHECK(ct == 2);
  CHECK(rgb == std::string("\x00\x80\xff", 3));  // 0, 127.5 -> 128, 255
  std::string sg = PngPixels(Parse(out[2]).value(0).image().encoded_image_string(), &w, &h, &ct);
  // scale = min(127 / 1, 128 / 0.5) = 127: -1 -> 0, 0 -> 127, 0.5 -> 190.5 -> 191.
  CHECK(sg == std::string("\x00\x7f\xbf", 3));
  // A larger RGB image, where libpng filters rows: the pixels come back as they went in.
  Tensor big(DT_UINT8, {1, 16, 24, 3});
  for (int64_t i = 0; i < big.num_elements(); ++i)
    big.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7 + (i / 72) * (i % 5));
  Graph g2;
  Scope r2 = Scope::Root(&g2);
  Output d = summary::Image(r2, "big", ops::Const(r2, big));
  Session s2(g2);
  std::string decoded =
      PngPixels(Parse(s2.Run({d})[0]).value(0).image().encoded_image_string(), &w, &h, &ct);
  CHECK((w == 24 && h == 16 && ct == 2));
  CHECK(decoded == std::string(static_cast<const char*>(big.raw_data()), big.TotalBytes()));
}

TEST_CASE("MergeSummary joins values; a duplicate tag is an error", "[summary]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = summary::Scalar(root, "a", ops::Const(root, 1.f));
  Output b = summary::Histogram(root, "b", ops::Const(root, {1.f, 2.f}, Shape{2}));
  Output all = summary::MergeAll(root);
  Output dup = summary::Merge(root, {a, a});
  Session sess(g);
  tensorflow::Summary s = Parse(sess.Run({all})[0]);
  REQUIRE(s.value_size() == 2);
  CHECK(s.value(0).tag() == "a");
  CHECK(s.value(1).tag() == "b");
  CHECK(s.value(1).histo().num() == 2);
  std::vector<Tensor> out;
  Status st = sess.TryRun({}, {dup}, {}, &out);
  CHECK_THAT(st.message(), Contains("Duplicate tag a found in summary inputs"));
  Graph empty;
  CHECK(summary::MergeAll(Scope::Root(&empty)).node == nullptr);
}

TEST_CASE("With towers, MergeAll keeps tower 0's summaries", "[summary][towers]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 2});
  train::TowerOptions o;
  o.devices = {"/cpu:0", "/cpu:1"};
  o.num_cpus = 2;
  train::Towers t =
      train::ReplicateTowers(root, o, {x}, [](const Scope& s, const std::vector<Output>& in) {
        Variable w = GetVariable(s, "w", {2}, init::Zeros());
        Output loss = ops::Mean(s, ops::Square(s, ops::Sub(s, in[0], w.value())), {0, 1});
        summary::Scalar(s, "tower_loss", loss);
        return train::TowerOutputs{loss, {}};
      });
  CHECK(t.towers.size() == 2);
  const auto& kept = g.GetCollection(summary::kSummaries);
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].node->name().rfind("tower_0/", 0) == 0);
  Output merged = summary::MergeAll(root);
  SessionOptions so;
  so.device_count["CPU"] = 2;
  Session sess(g, so);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  Tensor batch = Tensor::FromVector<float>({1, 1, 3, 3}, {2, 2});
  tensorflow::Summary s = Parse(sess.Run({{x, batch}}, {merged})[0]);
  REQUIRE(s.value_size() == 1);
  CHECK(s.value(0).simple_value() == 1.f);  // tower 0's row: mean of 1, 1
  CHECK(summary::MergeAll(root, "tower_1/").node == nullptr);
}

}  // namespace
}  // namespace pf::summary_test
