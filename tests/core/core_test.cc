#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "placeflow/core/timer.h"
#include "tests/testing/test_util.h"

namespace pf::core_test {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("Status carries a code and message; OK is cheap", "[core]") {
  Status ok;
  CHECK(ok.ok());
  CHECK(ok.ToString() == "OK");
  Status s = errors::InvalidArgument("bad shape ", Shape{3, 4}, " at ", 7);
  CHECK_FALSE(s.ok());
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message() == "bad shape [3,4] at 7");
  CHECK(s.ToString() == "InvalidArgument: bad shape [3,4] at 7");
  CHECK(s.WithSuffix(" (node x)").message() == "bad shape [3,4] at 7 (node x)");
  for (auto [st, code] : {std::pair{errors::NotFound("x"), Code::kNotFound},
                          {errors::FailedPrecondition("x"), Code::kFailedPrecondition},
                          {errors::ResourceExhausted("x"), Code::kResourceExhausted},
                          {errors::Unimplemented("x"), Code::kUnimplemented},
                          {errors::Internal("x"), Code::kInternal},
                          {errors::Aborted("x"), Code::kAborted},
                          {errors::Cancelled("x"), Code::kCancelled},
                          {errors::OutOfRange("x"), Code::kOutOfRange}}) {
    CHECK(st.code() == code);
  }
}

TEST_CASE("Status carries a reason through suffixes and errors", "[core]") {
  Status s = errors::NotFound("gone").WithReason(Reason::kGraphNotRegistered);
  CHECK(s.reason() == Reason::kGraphNotRegistered);
  CHECK(s.code() == Code::kNotFound);
  CHECK(s.message() == "gone");
  const Status longer = s.WithSuffix(" (on task 1)");
  CHECK(longer.reason() == Reason::kGraphNotRegistered);
  CHECK(longer.message() == "gone (on task 1)");
  CHECK(IsTaskRestart(longer));
  CHECK(s.WithReason(Reason::kNone).reason() == Reason::kNone);
  CHECK(Status::OK().WithReason(Reason::kTaskRestarted).ok());
  CHECK(Status::OK().reason() == Reason::kNone);
  CHECK(errors::InvalidArgument("x").reason() == Reason::kNone);
  const Status u = errors::UninitializedValue("affine0/w");
  CHECK(u.ToString() == "FailedPrecondition: Attempting to use uninitialized value affine0/w");
  CHECK(IsUninitializedVariable(u));
  CHECK(Error(u).status().reason() == Reason::kUninitializedVariable);
  CHECK(ReasonName(Reason::kStaleIncarnation) == "stale_incarnation");
}

TEST_CASE("StatusOr::value() checks; tensor names parse strictly", "[core]") {
  StatusOr<int> bad(errors::NotFound("no such thing"));
  CHECK_THROWS_AS(bad.value(), Error);
  CHECK_THROWS_WITH(std::move(bad).value(), "NotFound: no such thing");
  StatusOr<int> good(3);
  CHECK(good.value() == 3);
  struct Case {
    const char* text;
    const char* node;
    int index;
  };
  for (const Case& c : {Case{"a", "a", 0}, Case{"a:0", "a", 0}, Case{"scope/b:12", "scope/b", 12},
                        Case{"x:y:3", "x:y", 3}}) {
    auto t = ParseTensorName(c.text);
    REQUIRE(t.ok());
    CHECK(t->node == c.node);
    CHECK(t->index == c.index);
  }
  // std::atoi read these as index 0 or 1; std::stoi accepted "1x" as 1.
  for (const char* junk : {"a:", "a:1x", "a:-1", "a: 2", "a:+2", ":0", "", "a:99999999999"}) {
    INFO(junk);
    auto t = ParseTensorName(junk);
    CHECK(t.status().code() == Code::kInvalidArgument);
  }
}

TEST_CASE("StatusOr and pf::Error", "[core]") {
  auto parse = [](int v) -> StatusOr<int> {
    if (v < 0) return errors::OutOfRange("negative: ", v);
    return v * 2;
  };
  auto twice = [&](int v) -> StatusOr<int> {
    PF_ASSIGN_OR_RETURN(int x, parse(v));
    return x + 1;
  };
  CHECK(*twice(3) == 7);
  CHECK(twice(-1).status().code() == Code::kOutOfRange);
  try {
    twice(-2).ValueOrThrow();
    FAIL("expected a throw");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kOutOfRange);
    CHECK(std::string(e.what()) == "OutOfRange: negative: -2");
  }
}

TEST_CASE("DType names and sizes", "[core]") {
  CHECK(DTypeName(DT_FLOAT) == "float");
  CHECK(DTypeName(DT_INT64) == "int64");
  CHECK(DTypeName(DT_BFLOAT16) == "bfloat16");
  CHECK(DTypeSize(DT_DOUBLE) == 8);
  CHECK(DTypeSize(DT_HALF) == 2);
  CHECK(DTypeSize(DT_BOOL) == 1);
  CHECK(*ParseDType("float32") == DT_FLOAT);
  CHECK_FALSE(ParseDType("complex64").ok());
  static_assert(DataTypeOf<int32_t>() == DT_INT32);
}

TEST_CASE("Shape with unknown dims", "[core]") {
  Shape s{-1, 600};
  CHECK(s.rank() == 2);
  CHECK_FALSE(s.IsFullyDefined());
  CHECK(s.num_elements() == -1);
  CHECK(s.ToString() == "[?,600]");
  CHECK(Shape{}.ToString() == "[]");
  CHECK(Shape{}.num_elements() == 1);
  CHECK(Shape::Unknown().ToString() == "<unknown>");
  CHECK(s.IsCompatibleWith(Shape{32, 600}));
  CHECK_FALSE(s.IsCompatibleWith(Shape{32, 601}));
  CHECK_FALSE(s.IsCompatibleWith(Shape{600}));
  CHECK(s.IsCompatibleWith(Shape::Unknown()));
  CHECK(s.MergeWith(Shape{32, -1}) == Shape{32, 600});
  CHECK_FALSE(Shape::FromDims(std::vector<int64_t>{1, -2}).ok());
  CHECK_FALSE(Shape::FromDims(std::vector<int64_t>(9, 1)).ok());
  Shape t{2, 3};
  t.InsertDim(0, 1);
  CHECK(t == Shape{1, 2, 3});
  t.RemoveDim(1);
  CHECK(t == Shape{1, 3});
}

// Small host blocks are cached per thread by size class: blocks handed out at once never
// overlap, stay 64-byte aligned, keep what was written into them, and blocks freed on another
// thread than the one that allocated them are reused there without harm (ASan/TSan builds run
// this too).
TEST_CASE("Host allocator: small blocks are reused safely across threads", "[core]") {
  Allocator* a = CpuAllocator();
  // Small blocks (per-thread classes), then up to 70,000 bytes (the per-thread cache of
  // blocks up to 64 KiB and the shared one).
  const size_t max_bytes = GENERATE(size_t{4095}, size_t{70000});
  std::atomic<int> bad{0};  // Catch2 assertions are not thread-safe: count, check after join
  auto churn = [a, &bad, max_bytes](int seed, std::vector<std::pair<void*, size_t>>* handoff) {
    std::vector<std::pair<void*, size_t>> live;
    for (int i = 0; i < 2000; ++i) {
      const size_t bytes = 1 + static_cast<size_t>((i * 37 + seed * 11) % max_bytes);
      auto* p = static_cast<unsigned char*>(a->Allocate(bytes));
      if (p == nullptr || reinterpret_cast<uintptr_t>(p) % 64 != 0) {
        ++bad;
        return;
      }
      std::memset(p, (i + seed) & 0xff, bytes);
      live.emplace_back(p, bytes);
      if (live.size() > 40) {  // free the oldest, checking nobody else wrote into it
        auto [q, n] = live.front();
        const unsigned char want = static_cast<unsigned char>(i - 40 + seed);
        auto* c = static_cast<unsigned char*>(q);
        bad += !(c[0] == want && c[n - 1] == want);
        a->Free(q, n);
        live.erase(live.begin());
      }
    }
    *handoff = std::move(live);  // freed by the other thread
  };
  std::vector<std::pair<void*, size_t>> from_a, from_b;
  std::thread ta([&] { churn(1, &from_a); });
  std::thread tb([&] { churn(2, &from_b); });
  ta.join();
  tb.join();
  std::thread fa([&] {
    for (auto [p, n] : from_b) a->Free(p, n);
  });
  std::thread fb([&] {
    for (auto [p, n] : from_a) a->Free(p, n);
  });
  fa.join();
  fb.join();
  CHECK(bad == 0);
}

// A 16 KiB block (a 4096-float tensor) freed on a thread goes back to that thread, not to
// another: two threads running independent chains then keep writing into their own cache.
TEST_CASE("Host allocator: a thread gets back the medium block it freed", "[core][threads]") {
  Allocator* a = CpuAllocator();
  const size_t bytes = 4096 * sizeof(float);
  void* mine = nullptr;
  void* again = nullptr;
  void* other = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  int stage = 0;
  auto wait_for = [&](int s) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return stage >= s; });
  };
  auto advance = [&] {
    std::lock_guard<std::mutex> lock(mu);
    ++stage;
    cv.notify_all();
  };
  std::thread owner([&] {
    mine = a->Allocate(bytes);
    a->Free(mine, bytes);
    advance();  // stage 1: freed here
    wait_for(2);
    again = a->Allocate(bytes);
    a->Free(again, bytes);
  });
  std::thread thief([&] {
    wait_for(1);
    other = a->Allocate(bytes);
    advance();  // stage 2
  });
  owner.join();
  thief.join();
  CHECK(other != mine);  // still in the owner's cache
  CHECK(again == mine);
  a->Free(other, bytes);
}

TEST_CASE("Tensor buffers are shared, aligned and printed", "[core]") {
  Tensor t(DT_FLOAT, {2, 3});
  CHECK(t.num_elements() == 6);
  CHECK(t.TotalBytes() == 24);
  CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0);
  for (float v : t.flat<float>()) CHECK(v == 0.f);  // zero-filled
  for (int i = 0; i < 6; ++i) t.flat<float>()[i] = static_cast<float>(i + 1);
  CHECK(t.DebugString() == "Tensor<float [2,3]> [[1, 2, 3], [4, 5, 6]]");
  Tensor copy = t;
  CHECK(copy.SharesBufferWith(t));
  CHECK(t.buffer().use_count() == 2);
  Tensor deep = t.Clone();
  CHECK_FALSE(deep.SharesBufferWith(t));
  CHECK(deep.BitwiseEqual(t));
  auto r = t.Reshaped({3, 2});
  REQUIRE(r.ok());
  CHECK(r->SharesBufferWith(t));
  CHECK(r->shape() == Shape{3, 2});
  CHECK_FALSE(t.Reshaped({4, 2}).ok());
  CHECK(Tensor::Scalar<int32_t>(7).DebugString() == "Tensor<int32 []> 7");
  CHECK(Tensor::FromVector<bool>({true, false}).DebugString() == "Tensor<bool [2]> [true, false]");
  Tensor big(DT_INT32, {100});
  CHECK(big.DebugString(3) == "Tensor<int32 [100]> [0, 0, 0...");
  CHECK_FALSE(Tensor().IsInitialized());
  CHECK(Tensor(DT_FLOAT, {0, 3}).IsInitialized());
}

TEST_CASE("Tensor accessors check the dtype; FromVector wants exactly the shape's values",
          "[core]") {
  Tensor m = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  std::vector<float> copy = m.ToVector<float>();
  CHECK(copy == std::vector<float>{1, 2, 3, 4});
  copy[0] = 9;  // owned: the tensor does not change
  CHECK(m.flat<float>()[0] == 1.f);
  CHECK(Tensor::FromVector<int64_t>({5, 6}).ToVector<int64_t>() == std::vector<int64_t>{5, 6});

  CHECK_THROWS_WITH(m.flat<int32_t>(),
                    Contains("dtype float") && Contains("[2,2]") && Contains("read as int32"));
  CHECK_THROWS_AS(m.ToVector<double>(), Error);
  CHECK_THROWS_WITH(m.scalar<float>(), Contains("shape [2,2]") && Contains("4 elements"));
  CHECK(Tensor::Scalar<int32_t>(7).scalar<int32_t>() == 7);
  CHECK(Tensor::FromVector<float>({3}, {1}).scalar<float>() == 3.f);  // one element, any rank
  CHECK_THROWS_WITH(Tensor::Scalar<int32_t>(7).scalar<int64_t>(), Contains("read as int64"));

  CHECK_THROWS_WITH((Tensor::FromVector<float>({1, 2, 3}, {2, 2})),
                    Contains("3 values for shape [2,2] of 4 elements"));
  CHECK_THROWS_AS((Tensor::FromVector<float>({1, 2, 3, 4, 5}, {2, 2})), Error);
  CHECK_THROWS_AS((Tensor::FromVector<float>({1, 2}, Shape{-1, 2})), Error);
  try {
    Tensor::FromVector<int32_t>({1}, {2});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
  }
}

TEST_CASE("Thread pool: ParallelFor covers every index once, nested calls finish", "[core]") {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(100000);
  pool.ParallelFor(100000, 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) REQUIRE(h.load() == 1);
  // Every pool thread runs a ParallelFor at once: shards are claimed, never waited on blindly.
  std::atomic<int64_t> total{0};
  std::atomic<int> outer_done{0};
  for (int t = 0; t < 6; ++t) {
    pool.Schedule([&] {
      pool.ParallelFor(1000, 100000, [&](int64_t b, int64_t e) { total += e - b; });
      outer_done++;
    });
  }
  while (outer_done.load() < 6) std::this_thread::yield();
  CHECK(total.load() == 6000);
  CHECK(ThreadPool::Default()->num_threads() >= 1);
}

TEST_CASE("Logging level follows SetLogLevel", "[core]") {
  SetLogLevel("debug");
  CHECK(Logger().level() == spdlog::level::debug);
  SetLogLevel("warn");
  CHECK(Logger().level() == spdlog::level::warn);
}

}  // namespace
}  // namespace pf::core_test

namespace pf::core_test {
namespace {

TEST_CASE("Timer runs callbacks in deadline order, and Cancel stops or waits for one",
          "[core][timer]") {
  Timer timer;
  std::mutex mu;
  std::vector<int> order;
  auto record = [&](int i) {
    return [&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    };
  };
  timer.Schedule(std::chrono::milliseconds(60), record(3));
  timer.Schedule(std::chrono::milliseconds(20), record(1));
  Timer::Id dropped = timer.Schedule(std::chrono::milliseconds(40), record(2));
  CHECK(timer.Cancel(dropped));  // had not run: it never will
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  {
    std::lock_guard<std::mutex> lock(mu);
    CHECK(order == std::vector<int>{1, 3});
  }
  // Cancelling a callback that is running waits until it has returned.
  std::atomic<bool> started{false}, finished{false};
  Timer::Id slow = timer.Schedule(std::chrono::milliseconds(0), [&] {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    finished = true;
  });
  while (!started) std::this_thread::yield();
  CHECK_FALSE(timer.Cancel(slow));
  CHECK(finished);
}

// Found by the ASan run (docs/fuzzing.md): the timer thread waited on a reference to the
// earliest entry's deadline, and read it again after a Cancel had freed that entry. The check
// is ASan's (heap-use-after-free); without it the test still checks the later timer runs.
TEST_CASE("Cancelling the timer the thread waits for frees nothing it still reads",
          "[core][timer]") {
  Timer timer;
  std::atomic<int> ran{0};
  for (int i = 0; i < 20; ++i) {
    Timer::Id far = timer.Schedule(std::chrono::hours(1), [&] { ran += 100; });
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the thread waits for `far`
    CHECK(timer.Cancel(far));
    timer.Schedule(std::chrono::milliseconds(0), [&] { ++ran; });  // wakes it
  }
  for (int i = 0; i < 500 && ran < 20; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CHECK(ran == 20);
}

}  // namespace
}  // namespace pf::core_test
