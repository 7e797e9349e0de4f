// Datasets in a graph: MakeIterator / IteratorGetNext through Session::Run, OutOfRange at the
// end of an epoch, re-initialisation, feeding, step cancellation, sessions closing mid-epoch.
#include "placeflow/data/iterator_ops.h"

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/testing/test_util.h"

namespace pf::data::iterator_ops_test {
namespace {

int64_t Threads() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoll(line.substr(8));
  return -1;
}

// x: float [n, 3] with row i = (i, i, i); y: int32 [n] = i.
Dataset Rows(int64_t n) {
  Tensor x(DT_FLOAT, {n, 3});
  Tensor y(DT_INT32, {n});
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) x.data<float>()[i * 3 + k] = static_cast<float>(i);
    y.data<int32_t>()[i] = static_cast<int32_t>(i);
  }
  return Dataset::FromTensorSlices({x, y});
}

TEST_CASE("IteratorGetNext feeds a graph until OutOfRange, and re-initialises", "[data][graph]") {
  for (bool prefetch : {false, true}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Dataset d = Rows(10).Batch(4);
    if (prefetch) d = d.Prefetch(2);
    GraphIterator it = MakeIterator(root, d, "input");
    REQUIRE(it.next.size() == 2);
    CHECK(it.next[0].dtype() == DT_FLOAT);
    CHECK(it.next[0].shape() == Shape{-1, 3});
    CHECK(it.next[1].dtype() == DT_INT32);
    CHECK(it.next[1].shape() == Shape{-1});
    Output sum = ops::Sum(root, it.next[0], {0, 1});
    Session sess(g);
    // Not initialised yet: TensorFlow's FailedPrecondition.
    try {
      sess.Run({sum});
      FAIL("GetNext before the initializer ran");
    } catch (const Error& e) {
      CHECK(e.code() == Code::kFailedPrecondition);
      CHECK_THAT(e.what(), Catch::Contains("iterator has not been initialized"));
    }
    for (int epoch = 0; epoch < 2; ++epoch) {
      sess.Run({}, {}, {it.initializer});
      // Rows 0-3, 4-7, 8-9: sums of 3 * (row) per batch.
      std::vector<float> sums;
      std::vector<int64_t> sizes;
      for (;;) {
        try {
          auto out = sess.Run({sum, it.next[1]});
          sums.push_back(out[0].scalar<float>());
          sizes.push_back(out[1].dim(0));
        } catch (const Error& e) {
          CHECK(e.code() == Code::kOutOfRange);
          CHECK_THAT(e.what(), Catch::Contains("End of sequence"));
          break;
        }
      }
      CHECK(sums == std::vector<float>{18, 66, 51});
      CHECK(sizes == std::vector<int64_t>{4, 4, 2});
    }
    // Feeding the outputs still works (the iterator is not run).
    Tensor fed = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    CHECK(sess.Run({{it.next[0], fed}}, {sum})[0].scalar<float>() == 21);
  }
}

TEST_CASE("A training step reads its batch from the iterator", "[data][graph]") {
  // Linear regression y = 2x + 1 from a shuffled, batched, prefetched dataset: the loss falls.
  const int64_t n = 256;
  Tensor x(DT_FLOAT, {n, 1}), y(DT_FLOAT, {n, 1});
  for (int64_t i = 0; i < n; ++i) {
    x.data<float>()[i] = static_cast<float>(i) / n;
    y.data<float>()[i] = 2 * x.data<float>()[i] + 1;
  }
  Graph g;
  Scope root = Scope::Root(&g);
  GraphIterator it = MakeIterator(
      root, Dataset::FromTensorSlices({x, y}).Shuffle(64, 1).Batch(32, true).Prefetch(2));
  Variable w = GetVariable(root, "w", {1, 1}, init::Zeros());
  Variable b = GetVariable(root, "b", {1}, init::Zeros());
  Output pred = ops::BiasAdd(root, ops::MatMul(root, it.next[0], w.value()), b.value());
  Output loss = ops::Mean(root, ops::Square(root, ops::Sub(root, pred, it.next[1])));
  Operation step = train::GradientDescent(0.5).Minimize(root, loss);
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  float first = -1, last = -1;
  int steps = 0;
  for (int epoch = 0; epoch < 20; ++epoch) {
    sess.Run({}, {}, {it.initializer});
    for (;;) {
      try {
        last = sess.Run({}, {loss}, {step})[0].scalar<float>();
        if (first < 0) first = last;
        ++steps;
      } catch (const Error& e) {
        REQUIRE(e.code() == Code::kOutOfRange);
        break;
      }
    }
  }
  CHECK(steps == 20 * 8);
  CHECK(last < first / 20);
}

TEST_CASE("A step waiting on a slow pipeline is cancelled by its timeout", "[data][cancel]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Dataset slow = Rows(100)
                     .Map(PlainMapFn([](Element e) -> StatusOr<Element> {
                       std::this_thread::sleep_for(std::chrono::milliseconds(400));
                       return e;
                     }))
                     .Prefetch(1);
  GraphIterator it = MakeIterator(root, slow);
  Session sess(g);
  sess.Run({}, {}, {it.initializer});
  RunOptions ro;
  ro.timeout_in_ms = 50;
  RunMetadata md;
  const auto start = std::chrono::steady_clock::now();
  try {
    sess.Run(ro, {}, {it.next[0]}, {}, &md);
    FAIL("the step should time out");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kDeadlineExceeded);
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  // The pipeline goes on: the next step gets element 0 (the cancelled request took nothing).
  auto out = sess.Run({it.next[1]});
  CHECK(out[0].scalar<int32_t>() == 0);
}

TEST_CASE("Sessions closed mid-epoch leave no pipeline threads behind", "[data][cancel]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Dataset d = Rows(100000)
                  .Map(PlainMapFn([](Element e) -> StatusOr<Element> {
                         std::this_thread::sleep_for(std::chrono::microseconds(200));
                         return e;
                       }),
                       3)
                  .Shuffle(32, 1)
                  .Batch(8)
                  .Prefetch(4);
  GraphIterator it = MakeIterator(root, d);
  auto one = [&](int steps) {
    Session sess(g);
    sess.Run({}, {}, {it.initializer});
    for (int s = 0; s < steps; ++s) sess.Run({it.next[1]});
    if (steps % 2) sess.Run({}, {}, {it.initializer});  // a second pass replaces the first
  };
  one(1);  // warm up: the shared pool
  const int64_t before = Threads();
  for (int i = 0; i < 40; ++i) one(i % 4);
  CHECK(Threads() == before);
}

TEST_CASE("IteratorGetNext checks elements against its static spec", "[data][graph]") {
  Graph g;
  Scope root = Scope::Root(&g);
  // The map claims float [3] but returns float [2] for element 1.
  Dataset d = Rows(3).Map(PlainMapFn([](Element e) -> StatusOr<Element> {
    if (e[1].scalar<int32_t>() == 1) e[0] = Tensor(DT_FLOAT, {2});
    return e;
  }));
  GraphIterator it = MakeIterator(root, d, "checked");
  Session sess(g);
  sess.Run({}, {}, {it.initializer});
  sess.Run({it.next[0]});
  CHECK_THROWS_WITH(sess.Run({it.next[0]}),
                    Catch::Contains("produced component 0 as float [2], expected float [3]"));
  CHECK(DecodeSpec({DT_FLOAT, DT_INT32},
                   EncodeShapes({{DT_FLOAT, Shape{-1, 784}}, {DT_INT32, Shape::Unknown()}}))
            .ValueOrThrow() ==
        ElementSpec{{DT_FLOAT, Shape{-1, 784}}, {DT_INT32, Shape::Unknown()}});
}

}  // namespace
}  // namespace pf::data::iterator_ops_test
