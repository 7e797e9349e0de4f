// The thread pool's scheduling decisions that do not depend on timing: when ParallelFor splits,
// which pools poll for their caller, and who counts as busy.
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "placeflow/core/pool_wait.h"
#include "tests/testing/test_util.h"

namespace pf::thread_pool_test {
namespace {

struct Shards {
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::set<std::thread::id> threads;
  void Add(int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    ranges.emplace_back(b, e);
    threads.insert(std::this_thread::get_id());
  }
};

TEST_CASE("ParallelFor runs a loop below its minimum shard inline, as one range",
          "[threads][core]") {
  ThreadPool pool(3);
  // 4096 elements at 4 cycles each (a float Tanh): 16,384 cycles, under the 40,000-cycle
  // minimum shard, so one call on the calling thread.
  Shards s;
  pool.ParallelFor(4096, 4, [&](int64_t b, int64_t e) { s.Add(b, e); });
  REQUIRE(s.ranges.size() == 1);
  CHECK(s.ranges[0] == std::make_pair<int64_t, int64_t>(0, 4096));
  CHECK(s.threads == std::set<std::thread::id>{std::this_thread::get_id()});
  // 100,000 elements at 100 cycles: split, every index covered exactly once.
  Shards big;
  pool.ParallelFor(100000, 100, [&](int64_t b, int64_t e) { big.Add(b, e); });
  CHECK(big.ranges.size() > 1);
  std::sort(big.ranges.begin(), big.ranges.end());
  int64_t next = 0;
  for (auto [b, e] : big.ranges) {
    CHECK(b == next);
    next = e;
  }
  CHECK(next == 100000);
}

TEST_CASE("Only a pool with fewer workers than cores polls for its caller", "[threads][core]") {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  CHECK_FALSE(LeavesCoreForCaller(ThreadPool(0)));  // no workers: the caller runs everything
  CHECK_FALSE(LeavesCoreForCaller(ThreadPool(cores)));
  CHECK_FALSE(LeavesCoreForCaller(ThreadPool(cores + 1)));
  if (cores > 1) CHECK(LeavesCoreForCaller(ThreadPool(cores - 1)));
  // Default() has a worker per core (or PF_NUM_THREADS): its waiting callers sleep.
  if (std::getenv("PF_NUM_THREADS") == nullptr)
    CHECK_FALSE(LeavesCoreForCaller(*ThreadPool::Default()));
}

TEST_CASE("A thread counts as busy while it runs pool work or holds a BusyScope",
          "[threads][core]") {
  ThreadPool pool(1);
  if (!LeavesCoreForCaller(pool)) {
    WARN("one core: no pool leaves one to its caller, nothing is counted");
    CHECK(std::thread::hardware_concurrency() < 2);
    return;
  }
  // The count is process-wide: counted from what other tests left running (nothing, usually).
  const int base = BusyThreads();
  {
    BusyScope scope(pool);
    CHECK(BusyThreads() == base + 1);
    ThreadPool big(static_cast<int>(std::thread::hardware_concurrency()));
    BusyScope not_counted(big);  // the default pool's shape: polling would take a core
    CHECK(BusyThreads() == base + 1);
  }
  CHECK(BusyThreads() == base);
  std::atomic<int> seen{-1};
  std::atomic<bool> ran{false};
  pool.Schedule([&] {
    seen = BusyThreads();  // this worker, running a task
    ran = true;
  });
  while (!ran.load()) std::this_thread::yield();
  CHECK(seen.load() == base + 1);
  // A task the caller runs through TryRunOne counts too.
  std::atomic<bool> started{false}, gate{false};
  pool.Schedule([&] {
    started = true;
    while (!gate.load()) std::this_thread::yield();  // keeps the worker
  });
  while (!started.load()) std::this_thread::yield();
  std::atomic<int> seen_here{-1};
  pool.Schedule([&] { seen_here = BusyThreads(); });
  CHECK(pool.TryRunOne());  // the worker is held: the task is still queued
  gate = true;
  CHECK(seen_here.load() == base + 2);  // the worker in the gate task, and this thread
  // SpinWhileBusy gives up once nobody is busy and the condition is false.
  while (BusyThreads() > base) std::this_thread::yield();
  if (base == 0) CHECK_FALSE(SpinWhileBusy(pool, [] { return false; }));
  CHECK(SpinWhileBusy(pool, [] { return true; }));
}

}  // namespace
}  // namespace pf::thread_pool_test
