// Logical CPU devices with threads of their own (SessionOptions::cpu_device_threads) and memory
// limits (SessionOptions::device_memory): which threads run each device's nodes and loops, that
// results match the shared-pool default, what the devices' allocators measure, and the errors.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "placeflow/core/tracking_allocator.h"
#include "placeflow/devices/device.h"
#include "placeflow/models/models.h"
#include "placeflow/ops/op_util.h"
#include "tests/testing/test_util.h"

namespace pf::device_threads_test {
namespace {

using Catch::Matchers::Contains;

// TestLoopThreads: y = x, computed by a ParallelFor over 64 units of ~20 us each on the device's
// intra-op pool; every thread that runs a unit is recorded under the device's name.
struct ThreadLog {
  std::mutex mu;
  std::map<std::string, std::set<std::thread::id>> by_device;
};
ThreadLog* loop_threads = new ThreadLog();

class TestLoopThreadsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    ParallelFor(ctx, 64, int64_t{1} << 20, [&](int64_t b, int64_t e) {
      {
        std::lock_guard<std::mutex> lock(loop_threads->mu);
        loop_threads->by_device[ctx->device()->name()].insert(std::this_thread::get_id());
      }
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20 * (e - b));
      while (std::chrono::steady_clock::now() < until) {
      }
    });
    return ctx->ForwardInput(0, 0);
  }
};
PF_REGISTER_OP(
    OpDef("TestLoopThreads").Input("x", "float").Output("y", "float").SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("TestLoopThreads", "CPU"), TestLoopThreadsOp);

std::string Cpu(int i) { return "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i); }

// Eight independent branches, each a chain of `depth` Tanh(MatMul(h, w_b)) on a [rows, 64] input,
// summed at the end on /cpu:0. Branch b runs on /cpu:(b < 4 ? 0 : split).
struct Wide {
  Graph g;
  Output x, sum;
  Wide(int split, int depth = 6, bool loops = false) {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root.WithOpName("x").WithDevice("/cpu:0"), DT_FLOAT, {-1, 64});
    std::vector<Output> branches;
    for (int b = 0; b < 8; ++b) {
      Scope s = root.WithDevice(b < 4 ? "/cpu:0" : "/cpu:" + std::to_string(split));
      Output w = ops::Const(s, testing::RandomTensor({64, 64}, 100 + b, -0.2f, 0.2f));
      Output h = x;
      for (int d = 0; d < depth; ++d) h = ops::Tanh(s, ops::MatMul(s, h, w));
      if (loops)
        h = NodeBuilder(s.WithOpName("loop" + std::to_string(b)), "TestLoopThreads")
                .Input(h)
                .Finalize();
      branches.push_back(h);
    }
    sum = ops::AddN(root.WithOpName("sum").WithDevice("/cpu:0"), branches);
  }
};

// The trace's thread ids of each device's nodes.
std::map<std::string, std::set<uint64_t>> TraceThreads(const RunMetadata& md) {
  std::map<std::string, std::set<uint64_t>> out;
  for (const NodeExecStats& s : md.step_stats) out[s.device].insert(s.thread);
  return out;
}

SessionOptions TwoCpus(int threads_each) {
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  opts.cpu_device_threads = threads_each;
  return opts;
}

TEST_CASE("cpu_device_threads=1: one thread per device, never the caller's",
          "[executor][device_threads]") {
  const Tensor x = testing::RandomTensor({32, 64}, 7);
  for (int split : {0, 1}) {
    INFO("branches 4-7 on /cpu:" << split);
    Wide w(split, 6, /*loops=*/true);
    Session sess(w.g, TwoCpus(1));
    for (int step = 0; step < 3; ++step) {
      loop_threads->by_device.clear();
      RunOptions ro;
      ro.trace = true;
      RunMetadata md;
      sess.Run(ro, {{w.x, x}}, {w.sum}, {}, &md);
      auto threads = TraceThreads(md);
      REQUIRE(threads.count(Cpu(0)) == 1);
      CHECK(threads.at(Cpu(0)).size() == 1);
      CHECK(threads.count(Cpu(1)) == static_cast<size_t>(split));
      // The kernels' parallel loops stay on the device's one thread too.
      auto& loops = loop_threads->by_device;
      REQUIRE(loops.count(Cpu(0)) == 1);
      CHECK(loops.at(Cpu(0)).size() == 1);
      CHECK(loops.at(Cpu(0)).count(std::this_thread::get_id()) == 0);
      if (split == 1) {
        CHECK(threads.at(Cpu(1)).size() == 1);
        CHECK(*threads.at(Cpu(0)).begin() != *threads.at(Cpu(1)).begin());
        REQUIRE(loops.count(Cpu(1)) == 1);
        CHECK(loops.at(Cpu(1)).size() == 1);
        CHECK(*loops.at(Cpu(0)).begin() != *loops.at(Cpu(1)).begin());
      }
    }
  }
}

TEST_CASE("cpu_device_threads=2: each device keeps to its own two threads",
          "[executor][device_threads]") {
  const Tensor x = testing::RandomTensor({32, 64}, 8);
  Wide w(1, 6, /*loops=*/true);
  Session sess(w.g, TwoCpus(2));
  std::map<std::string, std::set<uint64_t>> trace;
  loop_threads->by_device.clear();
  for (int step = 0; step < 5; ++step) {
    RunOptions ro;
    ro.trace = true;
    RunMetadata md;
    sess.Run(ro, {{w.x, x}}, {w.sum}, {}, &md);
    for (auto& [device, ids] : TraceThreads(md)) trace[device].insert(ids.begin(), ids.end());
  }
  REQUIRE(trace.size() == 2);
  auto& loops = loop_threads->by_device;
  REQUIRE(loops.size() == 2);
  for (int d : {0, 1}) {
    CHECK(trace.at(Cpu(d)).size() <= 2);
    CHECK(loops.at(Cpu(d)).size() <= 2);
    CHECK(loops.at(Cpu(d)).count(std::this_thread::get_id()) == 0);
  }
  for (uint64_t id : trace.at(Cpu(0))) CHECK(trace.at(Cpu(1)).count(id) == 0);
  for (const auto& id : loops.at(Cpu(0))) CHECK(loops.at(Cpu(1)).count(id) == 0);
}

// The calling thread's voluntary context switches so far (each time it went to sleep).
long CallerSleeps() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

TEST_CASE("A caller waiting on devices with their own threads sleeps until the step ends",
          "[executor][device_threads]") {
  // A chain of 80 TestLoopThreads on /cpu:1 (~1.3 ms each, ~100 ms in all). The caller has no
  // work to help with (each device runs on its own pool), so it sleeps once, not every 200 us
  // (which took a core from a device's thread: pf-bench auto_placement's wide model ran 11%
  // slower on one device). The bound leaves room for lock hand-offs; the old wait slept ~500
  // times.
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x").WithDevice("/cpu:0"), DT_FLOAT, {-1, 64});
  Output h = x;
  Scope s = root.WithDevice("/cpu:1");
  for (int i = 0; i < 80; ++i)
    h = NodeBuilder(s.WithOpName("spin" + std::to_string(i)), "TestLoopThreads")
            .Input(h)
            .Finalize();
  Output y = ops::Identity(root.WithOpName("y").WithDevice("/cpu:0"), h);
  Session sess(g, TwoCpus(1));
  const Tensor in = testing::RandomTensor({4, 64}, 10);
  sess.Run({{x, in}}, {y});  // warm-up: the step is prepared
  const long before = CallerSleeps();
  const auto start = std::chrono::steady_clock::now();
  Tensor out = sess.Run({{x, in}}, {y})[0];
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const long sleeps = CallerSleeps() - before;
  INFO("the step took " << ms << " ms; the caller slept " << sleeps << " times");
  CHECK(sleeps < 20);
  REQUIRE(out.shape() == in.shape());
  CHECK(std::memcmp(out.raw_data(), in.raw_data(), in.TotalBytes()) == 0);
}

// out = sum_b chain_b(x), in double, from the same weights.
std::vector<double> WideReference(const Tensor& x, int depth) {
  const int64_t rows = x.dim(0);
  std::vector<double> sum(rows * 64, 0.0);
  for (int b = 0; b < 8; ++b) {
    Tensor w = testing::RandomTensor({64, 64}, 100 + b, -0.2f, 0.2f);
    std::vector<double> h(x.data<float>(), x.data<float>() + rows * 64);
    for (int d = 0; d < depth; ++d) {
      std::vector<double> next(rows * 64, 0.0);
      for (int64_t i = 0; i < rows; ++i)
        for (int k = 0; k < 64; ++k)
          for (int j = 0; j < 64; ++j)
            next[i * 64 + j] += h[i * 64 + k] * w.data<float>()[k * 64 + j];
      for (double& v : next) v = std::tanh(v);
      h = std::move(next);
    }
    for (size_t i = 0; i < h.size(); ++i) sum[i] += h[i];
  }
  return sum;
}

TEST_CASE("Devices with their own threads compute what the shared pool computes",
          "[executor][device_threads]") {
  const Tensor x = testing::RandomTensor({48, 64}, 9);
  const std::vector<double> want = WideReference(x, 6);
  Wide shared_graph(1);
  SessionOptions shared_opts;
  shared_opts.device_count["CPU"] = 2;
  Session shared(shared_graph.g, shared_opts);
  const Tensor base = shared.Run({{shared_graph.x, x}}, {shared_graph.sum})[0];
  for (int threads : {1, 3}) {
    for (int split : {0, 1}) {
      INFO("threads " << threads << ", split " << split);
      Wide w(split);
      Session sess(w.g, TwoCpus(threads));
      for (int step = 0; step < 2; ++step) {
        Tensor got = sess.Run({{w.x, x}}, {w.sum})[0];
        REQUIRE(got.shape() == base.shape());
        for (int64_t i = 0; i < got.num_elements(); ++i) {
          // float chains of 6 products of 64 terms against double: 1e-4 absolute.
          REQUIRE(std::abs(got.data<float>()[i] - want[i]) < 1e-4);
          REQUIRE(std::abs(got.data<float>()[i] - base.data<float>()[i]) < 1e-5);
        }
      }
    }
  }
}

TEST_CASE("Training on devices with their own threads matches the shared pool",
          "[executor][device_threads]") {
  auto train = [](int threads) {
    Graph g;
    g.set_seed(5);
    Scope root = Scope::Root(&g);
    models::Model m = models::BuildMlpSeed000(root, {});
    for (Node* n : g.nodes()) {
      if (n->name().find("affine1") != std::string::npos) n->set_requested_device("/cpu:1");
    }
    SessionOptions opts = TwoCpus(threads);
    Session sess(g, opts);
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    Tensor x, t;
    models::SeedBatch(64, 2, &x, &t);
    std::vector<float> losses;
    for (int i = 0; i < 4; ++i)
      losses.push_back(
          sess.Run({{m.input, x}, {m.target, t}}, {m.loss}, {m.train_op})[0].scalar<float>());
    return losses;
  };
  const std::vector<float> shared = train(0), own = train(1);
  REQUIRE(shared.size() == own.size());
  CHECK(shared.back() < shared.front());  // it trains
  for (size_t i = 0; i < shared.size(); ++i) CHECK(own[i] == Approx(shared[i]).epsilon(1e-5));
}

// ---- device_memory ----

Scope OnCpu1(Scope& root, const std::string& name) {
  return root.WithOpName(name).WithDevice("/cpu:1");
}

TEST_CASE("device_memory measures a device's tensors: in use, peak, reset",
          "[executor][device_memory]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(OnCpu1(root, "x"), DT_FLOAT, {256, 64});
  Output w1 = ops::Placeholder(OnCpu1(root, "w1"), DT_FLOAT, {64, 512});
  Output w2 = ops::Placeholder(OnCpu1(root, "w2"), DT_FLOAT, {512, 128});
  Output h = ops::MatMul(OnCpu1(root, "h"), x, w1);  // [256, 512]: 524288 bytes
  Output o = ops::MatMul(OnCpu1(root, "o"), h, w2);  // [256, 128]: 131072 bytes
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  opts.device_memory["CPU:0"] = 0;  // measured, no limit
  Session sess(g, opts);
  auto stats = sess.DeviceMemoryStats();
  REQUIRE(stats.size() == 2);
  CHECK(stats.at(Cpu(1)).bytes_in_use == 0);
  CHECK(stats.at(Cpu(1)).bytes_limit == 0);
  const FeedDict feeds = {{x, testing::RandomTensor({256, 64}, 1)},
                          {w1, testing::RandomTensor({64, 512}, 2)},
                          {w2, testing::RandomTensor({512, 128}, 3)}};
  {
    Tensor out = sess.Run(feeds, {o})[0];
    stats = sess.DeviceMemoryStats();
    // Feeds are the caller's memory; h is alive while o is computed, then freed; o is fetched.
    const int64_t h_bytes = 256 * 512 * 4, o_bytes = 256 * 128 * 4;
    CHECK(stats.at(Cpu(1)).peak_bytes_in_use == h_bytes + o_bytes);
    CHECK(stats.at(Cpu(1)).bytes_in_use == o_bytes);  // the fetched tensor, still held here
    CHECK(stats.at(Cpu(1)).largest_alloc_size == h_bytes);
    CHECK(stats.at(Cpu(0)).peak_bytes_in_use == 0);
  }
  CHECK(sess.DeviceMemoryStats().at(Cpu(1)).bytes_in_use == 0);
  sess.ResetPeakMemory();
  CHECK(sess.DeviceMemoryStats().at(Cpu(1)).peak_bytes_in_use == 0);
  sess.Run(feeds, {}, {o.node});  // a target: o is freed at once
  CHECK(sess.DeviceMemoryStats().at(Cpu(1)).peak_bytes_in_use == 256 * 512 * 4 + 256 * 128 * 4);
  CHECK(sess.DeviceMemoryStats().at(Cpu(1)).bytes_in_use == 0);
}

TEST_CASE("device_memory counts variables on their device", "[executor][device_memory]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v = GetVariable(root.WithDevice("/cpu:1"), "v", {100, 100});  // 40000 bytes
  Output read = ops::Identity(root.WithOpName("read").WithDevice("/cpu:0"), v.value());
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  opts.device_memory["cpu:1"] = 1 << 20;
  Session sess(g, opts);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  auto stats = sess.DeviceMemoryStats();
  // The variable's own copy stays; its initial value (Glorot: a random [100, 100] scaled and
  // shifted, a few temporaries of 40000 bytes) is freed after the step.
  CHECK(stats.at(Cpu(1)).bytes_in_use == 40000);
  CHECK(stats.at(Cpu(1)).peak_bytes_in_use >= 80000);
  CHECK(stats.at(Cpu(1)).peak_bytes_in_use <= 160000);
  CHECK(stats.at(Cpu(1)).bytes_limit == 1 << 20);
  CHECK(stats.at(Cpu(0)).bytes_in_use == 0);
  CHECK(sess.Run({read})[0].shape() == Shape{100, 100});
  CHECK(sess.DeviceMemoryStats().at(Cpu(1)).bytes_in_use == 40000);
}

TEST_CASE("A device over its memory limit fails with ResourceExhausted; the session goes on",
          "[executor][device_memory]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(OnCpu1(root, "x"), DT_FLOAT, {-1, 64});
  Output w = ops::Placeholder(OnCpu1(root, "w"), DT_FLOAT, {64, -1});
  Output y = ops::MatMul(OnCpu1(root, "big_matmul"), x, w);
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  opts.device_memory["/device:cpu:1"] = 300000;
  Session sess(g, opts);
  std::vector<Tensor> out;
  // [256, 512] floats: 524288 bytes, over the limit.
  Status s = sess.TryRun({{x, Tensor(DT_FLOAT, {256, 64})}, {w, Tensor(DT_FLOAT, {64, 512})}}, {y},
                         {}, &out);
  REQUIRE(s.code() == Code::kResourceExhausted);
  CHECK_THAT(s.message(), Contains("OOM when allocating tensor with shape [256,512]"));
  CHECK_THAT(s.message(), Contains("524288 bytes"));
  CHECK_THAT(s.message(), Contains("by allocator cpu of " + Cpu(1) +
                                   ": memory limit of 300000 bytes (SessionOptions::device_memory)"
                                   ": 524288 bytes requested, 0 in use, 300000 free"));
  CHECK_THAT(s.message(), Contains("big_matmul"));
  auto stats = sess.DeviceMemoryStats().at(Cpu(1));
  CHECK(stats.num_ooms == 1);
  CHECK(stats.bytes_in_use == 0);
  // A request that fits still runs, on the same session and signature: [128, 512] = 262144.
  const Tensor xs = testing::RandomTensor({128, 64}, 4), ws = testing::RandomTensor({64, 512}, 5);
  Tensor small = sess.Run({{x, xs}, {w, ws}}, {y})[0];
  REQUIRE(small.shape() == Shape{128, 512});
  double want = 0;
  for (int k = 0; k < 64; ++k) want += double(xs.data<float>()[k]) * ws.data<float>()[k * 512];
  CHECK(small.data<float>()[0] == Approx(want).epsilon(1e-5));
  CHECK(sess.DeviceMemoryStats().at(Cpu(1)).peak_bytes_in_use == 262144);
}

TEST_CASE("A fetched tensor outlives its session's tracking allocator",
          "[executor][device_memory]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(OnCpu1(root, "x"), DT_FLOAT, {4, 4});
  Output y = ops::MatMul(OnCpu1(root, "y"), x, x);
  Tensor out;
  {
    SessionOptions opts;
    opts.device_count["CPU"] = 2;
    opts.device_memory["cpu:1"] = 1 << 20;
    Session sess(g, opts);
    out = sess.Run({{x, testing::Iota({4, 4})}}, {y})[0];
  }
  // Row 0 of iota(4x4)^2: sum_k k * (4k + j).
  CHECK(out.data<float>()[0] == 56.f);
  CHECK(out.data<float>()[3] == 0 * 3 + 1 * 7 + 2 * 11 + 3 * 15);
  out = Tensor();  // frees into the allocator the session left behind (ASan: no use after free)
}

TEST_CASE("device_memory and cpu_device_threads errors name the device and the choices",
          "[executor][device_memory][errors]") {
  Graph g;
  auto error = [&](SessionOptions opts) -> std::string {
    try {
      Session sess(g, opts);
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInvalidArgument);
      return e.status().message();
    }
    return "no error";
  };
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  opts.device_memory["cpu:5"] = 1000;
  std::string msg = error(opts);
  CHECK_THAT(msg, Contains("SessionOptions::device_memory names 'cpu:5', which is no device"));
  CHECK_THAT(msg, Contains(Cpu(0)));
  CHECK_THAT(msg, Contains(Cpu(1)));
  opts.device_memory = {{"cpu", 1000}};
  CHECK_THAT(error(opts), Contains("'cpu', which is not a device name"));
  opts.device_memory = {{"/device:CPU:*", 1000}};
  CHECK_THAT(error(opts), Contains("'/device:CPU:*', which matches 2 devices"));
  opts.device_memory = {{"gpu:0", 1000}};  // no GPU in a session with {"GPU": 0}
  opts.device_count["GPU"] = 0;
  CHECK_THAT(error(opts), Contains("'gpu:0', which is no device of this session"));
  opts.device_memory = {{"bogus:x:y", 1000}};
  CHECK_THAT(error(opts), Contains("'bogus:x:y', which is not a device name"));
  opts.device_memory = {{"cpu:1", -1}};
  CHECK_THAT(error(opts), Contains("a limit is positive"));
  opts.device_memory = {};
  opts.cpu_device_threads = -2;
  CHECK_THAT(error(opts), Contains("cpu_device_threads is -2"));
  // Every spelling of a name reaches its device.
  for (const char* name : {"cpu:1", "CPU:1", "/cpu:1", "/device:CPU:1", "device:cpu:1",
                           "/job:localhost/replica:0/task:0/device:CPU:1"}) {
    INFO(name);
    SessionOptions ok;
    ok.device_count["CPU"] = 2;
    ok.device_memory[name] = 4096;
    Session sess(g, ok);
    CHECK(sess.DeviceMemoryStats().at(Cpu(1)).bytes_limit == 4096);
    CHECK(sess.DeviceMemoryStats().at(Cpu(0)).bytes_limit == 0);
  }
}

TEST_CASE("TrackingAllocator under concurrent use never passes its limit",
          "[executor][device_memory][allocator]") {
  constexpr int64_t kLimit = 64 << 10;
  TrackingAllocator::Ptr a = TrackingAllocator::Create(CpuAllocator(), "test", kLimit);
  std::atomic<int64_t> ok{0}, refused{0};
  auto worker = [&](uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::pair<void*, size_t>> held;
    for (int i = 0; i < 20000; ++i) {
      if (!held.empty() && (rng() % 2 == 0 || held.size() > 8)) {
        a->Free(held.back().first, held.back().second);
        held.pop_back();
        continue;
      }
      const size_t bytes = 1 + rng() % (12 << 10);
      void* p = a->Allocate(bytes);
      if (p == nullptr) {
        ++refused;
        continue;
      }
      ++ok;
      std::memset(p, 1, bytes);
      held.emplace_back(p, bytes);
    }
    for (auto& [p, bytes] : held) a->Free(p, bytes);
  };
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();
  const AllocatorStats s = a->Stats();
  CHECK(s.bytes_in_use == 0);
  CHECK(s.peak_bytes_in_use <= kLimit);
  CHECK(s.peak_bytes_in_use > kLimit / 2);  // 4 threads x up to 9 blocks of 6 KiB on average
  CHECK(s.num_allocs == ok.load());
  CHECK(s.num_ooms == refused.load());
  CHECK(s.bytes_limit == kLimit);
  CHECK(a->Allocate(kLimit + 1) == nullptr);
  void* whole = a->Allocate(kLimit);
  CHECK(whole != nullptr);
  a->Free(whole, kLimit);
  a->set_limit(0);  // none: only measured
  void* big = a->Allocate(kLimit * 4);
  CHECK(big != nullptr);
  CHECK(a->Stats().peak_bytes_in_use == kLimit * 4);
  a->Free(big, kLimit * 4);
}

// Wall time of one step of the wide model, median of `steps`, in ms.
double WideStepMs(int split, int threads, int rows, int depth, int steps) {
  Wide w(split, depth);
  SessionOptions opts = TwoCpus(threads);
  Session sess(w.g, opts);
  const Tensor x = testing::RandomTensor({rows, 64}, 11);
  sess.Run({{w.x, x}}, {w.sum});
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    sess.Run({{w.x, x}}, {w.sum});
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Not run by default: timings need idle cores. PF_WIDE_ROWS / PF_WIDE_STEPS size it.
TEST_CASE("Wide model timings: one device vs two, one thread each", "[.][device-threads-bench]") {
  const char* rows_env = std::getenv("PF_WIDE_ROWS");
  const char* steps_env = std::getenv("PF_WIDE_STEPS");
  const int rows = rows_env ? std::atoi(rows_env) : 2048;
  const int steps = steps_env ? std::atoi(steps_env) : 15;
  for (int round = 0; round < 2; ++round) {
    const double one = WideStepMs(0, 1, rows, 8, steps);
    const double two = WideStepMs(1, 1, rows, 8, steps);
    const double one_two_threads = WideStepMs(0, 2, rows, 8, steps);
    const double shared = WideStepMs(1, 0, rows, 8, steps);
    std::printf(
        "wide 8x8 [%d,64]: one device %.2f ms, two devices %.2f ms (%.2fx); one device "
        "of 2 threads %.2f ms, shared pool %.2f ms\n",
        rows, one, two, one / two, one_two_threads, shared);
  }
}

}  // namespace
}  // namespace pf::device_threads_test
