// pf::data transformations against naive references: slices, batches, shuffle (a permutation,
// TensorFlow's buffer algorithm), shard / take / skip / repeat counts, interleave order (TF's
// documented example), parallel map determinism, prefetch, cancellation without leaks.
#include "placeflow/data/dataset.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "placeflow/data/idx.h"
#include "placeflow/data/image.h"
#include "tests/testing/test_util.h"

namespace pf::data::dataset_test {
namespace {

// 0, 1, ..., n-1 as int64 scalars.
Dataset Range(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return Dataset::FromTensorSlices({Tensor::FromVector<int64_t>(v)});
}

// Component 0 of every element, as int64 scalars.
std::vector<int64_t> Values(const Dataset& d) {
  std::vector<int64_t> out;
  auto it = d.MakeIterator();
  Element e;
  while (it->GetNext(&e).ValueOrThrow()) out.push_back(e[0].scalar<int64_t>());
  return out;
}

std::vector<int64_t> Iota(int64_t begin, int64_t end) {
  std::vector<int64_t> v;
  for (int64_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

int64_t Threads() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoll(line.substr(8));
  return -1;
}

TEST_CASE("FromTensorSlices yields rows in order, FromTensors one element", "[data]") {
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor y = Tensor::FromVector<int32_t>({7, 8, 9});
  Dataset d = Dataset::FromTensorSlices({x, y});
  REQUIRE(d.spec().size() == 2);
  CHECK(d.spec()[0].shape == Shape{2});
  CHECK(d.spec()[1].shape == Shape{});
  auto it = d.MakeIterator();
  Element e;
  for (int r = 0; r < 3; ++r) {
    REQUIRE(it->GetNext(&e).ValueOrThrow());
    CHECK(e[0].shape() == Shape{2});
    CHECK(e[0].data<float>()[0] == 1 + 2 * r);
    CHECK(e[0].data<float>()[1] == 2 + 2 * r);
    CHECK(e[1].scalar<int32_t>() == 7 + r);
  }
  CHECK_FALSE(it->GetNext(&e).ValueOrThrow());
  CHECK_FALSE(it->GetNext(&e).ValueOrThrow());  // stays at the end
  CHECK(Values(Dataset::FromTensors({Tensor::Scalar<int64_t>(5)})) == std::vector<int64_t>{5});
  CHECK_THROWS_WITH(
      Dataset::FromTensorSlices({x, Tensor::FromVector<int32_t>({1, 2})}),
      Catch::Contains("component 0 has 3 rows") && Catch::Contains("component 1 has 2"));
}

TEST_CASE("Batch stacks consecutive elements in order, the last batch short or dropped", "[data]") {
  Dataset d = Range(10).Batch(4);
  CHECK(d.spec()[0].shape == Shape{-1});
  CHECK(Range(10).Batch(4, true).spec()[0].shape == Shape{4});
  auto it = d.MakeIterator();
  Element e;
  std::vector<std::vector<int64_t>> batches;
  while (it->GetNext(&e).ValueOrThrow()) batches.push_back(e[0].ToVector<int64_t>());
  CHECK(batches == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
  it = Range(10).Batch(4, true).MakeIterator();
  int n = 0;
  while (it->GetNext(&e).ValueOrThrow()) ++n;
  CHECK(n == 2);
  CHECK_THROWS_WITH(Range(3).Batch(0), Catch::Contains("batch_size must be positive"));
}

TEST_CASE("A ragged batch is an error naming the component and the shapes", "[data]") {
  // Element i is a vector of length 1 + (i == 2).
  Dataset d = Range(4).Map(PlainMapFn([](Element e) -> StatusOr<Element> {
                             const int64_t n = e[0].scalar<int64_t>() == 2 ? 2 : 1;
                             return Element{Tensor::Scalar<int32_t>(0), Tensor(DT_FLOAT, {n})};
                           }),
                           1, {{DT_INT32, Shape{}}, {DT_FLOAT, Shape{-1}}});
  auto it = d.Batch(4).MakeIterator();
  Element e;
  StatusOr<bool> r = it->GetNext(&e);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK_THAT(r.status().message(),
             Catch::Contains("Cannot batch tensors with different shapes in component 1") &&
                 Catch::Contains("First element had shape [1] and element 2 had shape [2]"));
}

// Three components of known shapes from element i: a vector, a string and a scalar, after an
// uneven amount of work; element 13 fails.
const ElementSpec kThreeSpec = {{DT_FLOAT, Shape{3}}, {DT_STRING, Shape{}}, {DT_INT64, Shape{}}};
StatusOr<Element> ThreeComponents(Element e, const MapContext& ctx) {
  const int64_t i = e[0].scalar<int64_t>();
  std::this_thread::sleep_for(std::chrono::microseconds((i * 37) % 150));
  if (i == 13) return errors::InvalidArgument("thirteen is bad");
  const float v = static_cast<float>(i);
  return Element{Tensor::FromVector<float>({v, -v, v * 0.5f}, {3}),
                 Tensor::Scalar<std::string>("e" + std::to_string(i)),
                 Tensor::Scalar<int64_t>(ctx.index)};
}

TEST_CASE("Map with threads then Batch (fused) gives the unfused pipeline's batches", "[data]") {
  const ElementSpec& spec = kThreeSpec;
  const MapFn fn = ThreeComponents;
  // Every batch, printed: shapes and values of each component.
  auto batches = [&](int threads, int64_t n, int64_t batch, bool drop) {
    std::vector<std::string> out;
    auto it = Range(n).Map(fn, threads, spec).Batch(batch, drop).MakeIterator();
    for (;;) {
      Element e;
      StatusOr<bool> r = it->GetNext(&e);
      if (!r.ok()) {
        out.push_back("error: " + r.status().message());
        continue;  // the iterator ends after its error
      }
      if (!*r) break;
      REQUIRE(e.size() == 3);
      std::string text = e[0].shape().ToString() + e[1].shape().ToString();
      for (float v : e[0].ToVector<float>()) text += " " + std::to_string(v);
      for (int64_t k = 0; k < e[1].num_elements(); ++k) text += " " + e[1].data<std::string>()[k];
      for (int64_t v : e[2].ToVector<int64_t>()) text += " " + std::to_string(v);
      out.push_back(text);
    }
    return out;
  };
  for (auto [n, batch, drop] : {std::tuple{10, 4, false},
                                {10, 4, true},
                                {12, 4, false},
                                {3, 8, false},
                                {3, 8, true},
                                {13, 1, false}}) {
    CAPTURE(n, batch, drop);
    const std::vector<std::string> unfused = batches(1, n, batch, drop);
    CHECK(unfused.size() == static_cast<size_t>(drop ? n / batch : (n + batch - 1) / batch));
    CHECK(batches(2, n, batch, drop) == unfused);
    CHECK(batches(5, n, batch, drop) == unfused);
  }
  // Element 13 fails: the batch holding it is the error, as unfused, and then the iterator ends
  // (as a parallel map does; the sequential one goes on with element 14).
  const std::vector<std::string> failing = batches(3, 30, 4, false);
  REQUIRE(failing.size() == 4);
  CHECK_THAT(failing[3], Catch::Contains("Map function failed on element 13: thirteen is bad"));
  const std::vector<std::string> sequential = batches(1, 30, 4, false);
  REQUIRE(sequential.size() > 4);
  CHECK(std::equal(failing.begin(), failing.end(), sequential.begin()));
  // A map whose results' shapes are not all known batches unfused: a ragged batch is still the
  // ragged-batch error.
  auto ragged = Range(4).Map(PlainMapFn([](Element e) -> StatusOr<Element> {
                               return Element{Tensor(DT_FLOAT, {1 + e[0].scalar<int64_t>()})};
                             }),
                             2, {{DT_FLOAT, Shape{-1}}});
  Element e;
  CHECK_THAT(ragged.Batch(2).MakeIterator()->GetNext(&e).status().message(),
             Catch::Contains("Cannot batch tensors with different shapes in component 0"));
  // Batch(1 << 30), the idiom that collects a whole dataset, allocates only what it holds.
  REQUIRE(
      Range(7).Map(fn, 3, spec).Batch(int64_t{1} << 30).MakeIterator()->GetNext(&e).ValueOrThrow());
  CHECK(e[0].shape() == Shape{7, 3});  // (the iterator and its threads are gone by now)
  // Destroyed mid-batch, with workers still copying rows: every thread stops.
  const int64_t before = Threads();
  for (int i = 0; i < 20; ++i) {
    auto it = Range(1000).Map(fn, 4, spec).Batch(5).MakeIterator();
    for (int k = 0; k < i % 3; ++k) REQUIRE(it->GetNext(&e).ValueOrThrow());
  }
  CHECK(Threads() == before);
}

TEST_CASE("A fused map may write its results into the batch's rows (MapContext::rows)", "[data]") {
  // Offered only when the map runs fused with its batch (threads, known shapes).
  std::atomic<int> offered{0};
  MapFn in_place = [&](Element e, const MapContext& ctx) -> StatusOr<Element> {
    if (ctx.rows == nullptr) return ThreeComponents(std::move(e), ctx);
    ++offered;
    PF_ASSIGN_OR_RETURN(Element r, ThreeComponents(std::move(e), ctx));
    Element rows = *ctx.rows;
    for (size_t c = 0; c < r.size(); ++c) {
      if (r[c].dtype() == DT_STRING) {
        rows[c].data<std::string>()[0] = r[c].data<std::string>()[0];
      } else {
        std::memcpy(rows[c].raw_data(), r[c].raw_data(), r[c].TotalBytes());
      }
    }
    return rows;
  };
  for (int threads : {1, 3}) {
    offered = 0;
    auto it = Range(10).Map(in_place, threads, kThreeSpec).Batch(4).MakeIterator();
    std::vector<std::string> got;
    for (Element b; it->GetNext(&b).ValueOrThrow();)
      got.push_back(b[1].data<std::string>()[0] + b[0].shape().ToString());
    CHECK(got == std::vector<std::string>{"e0[4,3]", "e4[4,3]", "e8[2,3]"});
    CHECK(offered == (threads > 1 ? 10 : 0));
  }
}

// TensorFlow's buffer algorithm, written out independently: fill, draw an index, refill.
std::vector<int64_t> ReferenceShuffle(int64_t n, int64_t buffer, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> buf, out;
  int64_t next = 0;
  while (next < n && static_cast<int64_t>(buf.size()) < buffer) buf.push_back(next++);
  while (!buf.empty()) {
    const size_t i = rng() % buf.size();
    out.push_back(buf[i]);
    if (next < n) {
      buf[i] = next++;
    } else {
      buf[i] = buf.back();
      buf.pop_back();
    }
  }
  return out;
}

TEST_CASE("Shuffle is a permutation matching the buffer algorithm for its seed", "[data]") {
  for (int64_t buffer : {1, 7, 100, 1000}) {
    std::vector<int64_t> got = Values(Range(100).Shuffle(buffer, 42, false));
    std::vector<int64_t> sorted = got;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == Iota(0, 100));
    CHECK(got == ReferenceShuffle(100, buffer, MixSeed(42, 0)));
    // Output i was read by then: at most i + buffer inputs have been read.
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] < static_cast<int64_t>(i) + buffer);
  }
  CHECK(Values(Range(50).Shuffle(1, 3)) == Iota(0, 50));  // a buffer of one keeps the order
  // Each pass (a Repeat) reshuffles: the two halves differ, and each is a permutation.
  std::vector<int64_t> two = Values(Range(100).Shuffle(100, 5).Repeat(2));
  REQUIRE(two.size() == 200);
  std::vector<int64_t> a(two.begin(), two.begin() + 100), b(two.begin() + 100, two.end());
  CHECK(a != b);
  std::sort(b.begin(), b.end());
  CHECK(b == Iota(0, 100));
  // Without reshuffling every pass repeats the first order.
  std::vector<int64_t> same = Values(Range(100).Shuffle(100, 5, false).Repeat(2));
  CHECK(std::vector<int64_t>(same.begin(), same.begin() + 100) ==
        std::vector<int64_t>(same.begin() + 100, same.end()));
  // Seeded: the same order again from a fresh iterator.
  CHECK(Values(Range(100).Shuffle(30, 9)) == Values(Range(100).Shuffle(30, 9)));
}

TEST_CASE("Shard, Take, Skip and Repeat select the expected positions", "[data]") {
  for (int64_t n : {1, 3, 4}) {
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> want;
      for (int64_t k = i; k < 10; k += n) want.push_back(k);
      CHECK(Values(Range(10).Shard(n, i)) == want);
    }
  }
  CHECK(Values(Range(10).Take(3)) == Iota(0, 3));
  CHECK(Values(Range(10).Take(-1)) == Iota(0, 10));
  CHECK(Values(Range(10).Take(20)) == Iota(0, 10));
  CHECK(Values(Range(10).Skip(7)) == Iota(7, 10));
  CHECK(Values(Range(10).Skip(-1)).empty());
  CHECK(Values(Range(3).Repeat(3)) == std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2});
  CHECK(Values(Range(3).Repeat().Take(7)) == std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0});
  CHECK(Values(Range(0).Repeat()).empty());  // nothing to repeat: ends
  CHECK(Values(Range(10).Skip(2).Shard(3, 1).Take(2)) == std::vector<int64_t>{3, 6});
  CHECK_THROWS_WITH(Range(3).Shard(2, 2), Catch::Contains("index must be in [0, 2)"));
}

TEST_CASE("Interleave follows TensorFlow's documented order", "[data]") {
  // tf.data.Dataset.interleave's example: range(1, 6), each x repeated 6 times,
  // cycle_length=2, block_length=4.
  Dataset in = Dataset::FromTensorSlices({Tensor::FromVector<int64_t>({1, 2, 3, 4, 5})});
  Dataset d = in.Interleave(
      [](const Element& e) -> StatusOr<Dataset> { return Dataset::FromTensors({e[0]}).Repeat(6); },
      2, 4);
  CHECK(Values(d) == std::vector<int64_t>{1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3,
                                          3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5});
  // cycle_length 1 is a flat map.
  Dataset flat = in.Interleave(
      [](const Element& e) -> StatusOr<Dataset> { return Dataset::FromTensors({e[0]}).Repeat(2); },
      1);
  CHECK(Values(flat) == std::vector<int64_t>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5});
}

TEST_CASE("Parallel map gives the same order at 1, 2 and 8 threads", "[data]") {
  // A random, uneven amount of work per element, and a value drawn from the element's seed.
  MapFn fn = [](Element e, const MapContext& ctx) -> StatusOr<Element> {
    std::mt19937_64 rng(ctx.Seed(11));
    const uint64_t r = rng();
    std::this_thread::sleep_for(std::chrono::microseconds(r % 200));
    return Element{Tensor::Scalar<int64_t>(e[0].scalar<int64_t>() * 1000 + int64_t(r % 1000))};
  };
  auto run = [&](int threads) {
    return Values(Range(300)
                      .Shuffle(50, 1)
                      .Map(fn, threads)
                      .Batch(7)
                      .Map(PlainMapFn([](Element e) -> StatusOr<Element> {
                             return Element{Tensor::Scalar<int64_t>(e[0].data<int64_t>()[0])};
                           }),
                           1, {{DT_INT64, Shape{}}}));
  };
  std::vector<int64_t> one = run(1);
  CHECK(one.size() == 43);
  CHECK(run(2) == one);
  CHECK(run(8) == one);
  // Without the batch: every element, in the shuffled input order.
  std::vector<int64_t> order = Values(Range(300).Shuffle(50, 1));
  std::vector<int64_t> mapped = Values(Range(300).Shuffle(50, 1).Map(fn, 8));
  REQUIRE(mapped.size() == 300);
  for (size_t i = 0; i < order.size(); ++i) CHECK(mapped[i] / 1000 == order[i]);
}

TEST_CASE("Map errors and wrong outputs name the element", "[data]") {
  for (int threads : {1, 4}) {
    Dataset d = Range(10).Map(PlainMapFn([](Element e) -> StatusOr<Element> {
                                if (e[0].scalar<int64_t>() == 6)
                                  return errors::InvalidArgument("six is bad");
                                return e;
                              }),
                              threads);
    auto it = d.Prefetch(3).MakeIterator();
    Element e;
    for (int i = 0; i < 6; ++i) REQUIRE(it->GetNext(&e).ValueOrThrow());
    StatusOr<bool> r = it->GetNext(&e);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(),
               Catch::Contains("Map function failed on element 6: six is bad"));
  }
  auto wrong = Range(3)
                   .Map(PlainMapFn([](Element) -> StatusOr<Element> {
                     return Element{Tensor::Scalar<float>(1)};
                   }))
                   .MakeIterator();
  Element e;
  CHECK_THAT(
      wrong->GetNext(&e).status().message(),
      Catch::Contains("produced component 0 as float []") && Catch::Contains("expected int64 []"));
}

TEST_CASE("Prefetch yields the same elements, synchronously and asynchronously", "[data]") {
  CHECK(Values(Range(100)
                   .Map(PlainMapFn([](Element e) { return StatusOr<Element>(e); }), 3)
                   .Prefetch(4)) == Iota(0, 100));
  auto it = Range(20).Prefetch(2).MakeIterator();
  REQUIRE(it->SupportsAsync());
  std::vector<int64_t> got;
  for (;;) {
    Element e;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    StatusOr<bool> result = false;
    it->GetNextAsync(&e, nullptr, [&](StatusOr<bool> r) {
      std::lock_guard<std::mutex> lock(mu);
      result = std::move(r);
      done = true;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    if (!std::move(result).ValueOrThrow()) break;
    got.push_back(e[0].scalar<int64_t>());
  }
  CHECK(got == Iota(0, 20));
}

TEST_CASE("Destroying iterators mid-epoch stops every pipeline thread", "[data][cancel]") {
  MapFn slow = [](Element e, const MapContext&) -> StatusOr<Element> {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    return e;
  };
  Dataset d = Range(1000000).Map(slow, 4).Prefetch(8).Shuffle(16, 1).Map(slow, 2).Prefetch(2);
  const int64_t before = Threads();
  for (int i = 0; i < 30; ++i) {
    auto it = d.MakeIterator();
    Element e;
    for (int k = 0; k < i % 5; ++k) REQUIRE(it->GetNext(&e).ValueOrThrow());
    if (i % 2) it->Cancel();
    // Waits here would hang: the ctest TIMEOUT catches that.
  }
  CHECK(Threads() == before);
  // A cancelled iterator says so.
  auto it = d.MakeIterator();
  Element e;
  REQUIRE(it->GetNext(&e).ValueOrThrow());
  it->Cancel();
  StatusOr<bool> r = it->GetNext(&e);
  bool ended = !r.ok() || !*r;  // buffered elements may still come out first
  for (int k = 0; k < 20 && !ended; ++k) {
    r = it->GetNext(&e);
    ended = !r.ok() || !*r;
  }
  CHECK(ended);
}

TEST_CASE("Image helpers match naive crops, flips and normalisation", "[data][image]") {
  ImageOptions o{4, 5, 2, 0};
  Tensor img = testing::RandomTensor({4 * 5 * 2}, 3);
  const float* p = img.data<float>();
  auto at = [&](int64_t y, int64_t x, int64_t c) -> float {
    return (y < 0 || y >= 4 || x < 0 || x >= 5) ? 0.f : p[(y * 5 + x) * 2 + c];
  };
  Tensor crop = CropWithPadding(img, o, 2, 3, 0).ValueOrThrow();
  CHECK(crop.shape() == img.shape());
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 5; ++x)
      for (int64_t c = 0; c < 2; ++c)
        CHECK(crop.data<float>()[(y * 5 + x) * 2 + c] == at(y + 1, x - 2, c));
  Tensor flip = FlipLeftRight(img, o).ValueOrThrow();
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 5; ++x)
      for (int64_t c = 0; c < 2; ++c)
        CHECK(flip.data<float>()[(y * 5 + x) * 2 + c] == at(y, 4 - x, c));
  Element norm = Normalize(o, {0.5f, -1.f}, {2.f, 4.f})({img}, MapContext{}).ValueOrThrow();
  for (int64_t i = 0; i < img.num_elements(); ++i) {
    const float want = i % 2 == 0 ? (p[i] - 0.5f) / 2.f : (p[i] + 1.f) / 4.f;
    CHECK(norm[0].data<float>()[i] == Approx(want).epsilon(1e-6));
  }
  CHECK_THAT(CropWithPadding(Tensor(DT_FLOAT, {7}), o, 1, 0, 0).status().message(),
             Catch::Contains("needs a float image of 4x5x2 = 40 elements, got float [7]"));
  // Random crops and flips: seeded per element, the same at every thread count, and each
  // result one of the allowed crops.
  Dataset imgs = Dataset::FromTensorSlices({testing::RandomTensor({64, 40}, 4)});
  auto aug = [&](int threads) {
    std::vector<Tensor> out;
    auto it = imgs.Map(RandomCropWithPadding(o, 1, 9), threads)
                  .Map(RandomFlipLeftRight(o, 10), threads)
                  .MakeIterator();
    Element e;
    while (it->GetNext(&e).ValueOrThrow()) out.push_back(e[0]);
    return out;
  };
  std::vector<Tensor> a = aug(1), b = aug(4);
  REQUIRE(a.size() == 64);
  int flipped = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].BitwiseEqual(b[i]));
    bool found = false;
    auto it = imgs.Skip(static_cast<int64_t>(i)).MakeIterator();
    Element e;
    REQUIRE(it->GetNext(&e).ValueOrThrow());
    for (int dy = 0; dy <= 2 && !found; ++dy) {
      for (int dx = 0; dx <= 2 && !found; ++dx) {
        Tensor c = CropWithPadding(e[0], o, 1, dy, dx).ValueOrThrow();
        if (c.BitwiseEqual(a[i])) found = true;
        if (FlipLeftRight(c, o).ValueOrThrow().BitwiseEqual(a[i])) {
          found = true;
          ++flipped;
        }
      }
    }
    CHECK(found);
  }
  CHECK(flipped > 10);
  CHECK(flipped < 54);
}

TEST_CASE("FromIdx reads the same examples as LoadMnist", "[data]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir)) {
    WARN("dataset-fashion-mnist is not installed: skipped");
    return;
  }
  auto [images, labels] = MnistPaths(dir, Split::kTest);
  MnistArrays arrays = LoadMnist(dir, Split::kTest).ValueOrThrow();
  Dataset d = Dataset::FromIdx(images, labels);
  CHECK(d.spec()[0] == ComponentSpec{DT_FLOAT, Shape{784}});
  CHECK(d.spec()[1] == ComponentSpec{DT_INT32, Shape{}});
  auto it = d.Batch(1000).MakeIterator();
  Element e;
  int64_t rows = 0;
  while (it->GetNext(&e).ValueOrThrow()) {
    Tensor want_x, want_y;
    std::vector<int64_t> order(arrays.size());
    std::iota(order.begin(), order.end(), 0);
    Gather(arrays, order, rows, e[1].dim(0), &want_x, &want_y);
    CHECK(e[0].BitwiseEqual(want_x));
    CHECK(e[1].BitwiseEqual(want_y));
    rows += e[1].dim(0);
  }
  CHECK(rows == 10000);
  CHECK_THROWS_WITH(Dataset::FromIdx(images, images), Catch::Contains("disagree"));
}

}  // namespace
}  // namespace pf::data::dataset_test
