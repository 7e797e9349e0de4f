#include "placeflow/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>

#include "placeflow/core/pool_wait.h"

namespace pf {
namespace {
thread_local const ThreadPool* current_pool = nullptr;

// Measured on the 2-vCPU development machine (docs/benchmarks.md).
constexpr int64_t kDefaultSpinMicros = 50;
// Off by default: on an otherwise idle machine polling up to 500 us while another thread is
// busy cut executor_wide's step tail from ~20 us to ~2 us, but with other processes competing
// for the cores its 2-thread step often settled at 0.8 ms instead of 0.3-0.5 (issue 34,
// docs/benchmarks.md). PF_POOL_BUSY_SPIN_US=500 turns it on for a dedicated machine.
constexpr int64_t kDefaultBusySpinMicros = 0;

std::atomic<int> busy_threads{0};  // BusyScope

int64_t EnvMicros(const char* name, int64_t fallback) {
  const char* env = std::getenv(name);
  return env != nullptr ? std::max<int64_t>(0, std::atoll(env)) : fallback;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `ready` for up to `us` microseconds; true when it became true.
template <typename Ready>
bool PollFor(int64_t us, Ready& ready) {
  if (us == 0) return ready();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  for (int i = 0;; ++i) {
    if (ready()) return true;
    // The clock costs ~20 ns: read it every 64 polls.
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return ready();
    CpuRelax();
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) threads_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

ThreadPool* ThreadPool::Default() {
  static ThreadPool* pool = [] {
    int n = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* env = std::getenv("PF_NUM_THREADS")) n = std::atoi(env);
    return new ThreadPool(std::max(1, n));
  }();
  return pool;
}

bool ThreadPool::InPool() const { return current_pool == this; }

int64_t ThreadPool::SpinMicros() {
  static const int64_t us = EnvMicros("PF_POOL_SPIN_US", kDefaultSpinMicros);
  return us;
}

template <typename Ready>
bool ThreadPool::SpinUntil(Ready ready) {
  return PollFor(SpinMicros(), ready);
}

void ThreadPool::Schedule(std::function<void()> fn) {
  if (threads_.empty()) {
    fn();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
    queued_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_one();
}

bool ThreadPool::TryRunOne() {
  std::function<void()> fn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.empty()) return false;
    fn = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
  }
  BusyScope busy(*this);
  fn();
  return true;
}

void ThreadPool::WorkerLoop() {
  current_pool = this;
  for (;;) {
    std::function<void()> fn;
    SpinWhileBusy(*this,
                  [this] { return queued_.load(std::memory_order_acquire) > 0 || stop_.load(); });
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_.load() || !queue_.empty(); });
      if (queue_.empty()) return;
      fn = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    BusyScope busy(*this);
    fn();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  constexpr int64_t kMinCyclesPerShard = 40'000;  // below this a wake-up costs more than it saves
  int64_t max_shards =
      std::max<int64_t>(1, n * std::max<int64_t>(cost_per_unit, 1) / kMinCyclesPerShard);
  int64_t shards = std::min<int64_t>({max_shards, static_cast<int64_t>(num_threads()) * 4, n});
  if (shards <= 1 || num_threads() == 0) {
    fn(0, n);
    return;
  }
  struct State {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex mu;
    std::condition_variable cv;
  };
  auto state = std::make_shared<State>();
  const int64_t block = (n + shards - 1) / shards;
  shards = (n + block - 1) / block;
  auto work = [state, block, n, shards, &fn] {
    for (int64_t s; (s = state->next.fetch_add(1)) < shards;) {
      fn(s * block, std::min(n, (s + 1) * block));
      if (state->done.fetch_add(1) + 1 == shards) {
        std::lock_guard<std::mutex> lock(state->mu);
        state->cv.notify_all();
      }
    }
  };
  int helpers = static_cast<int>(std::min<int64_t>(shards - 1, num_threads()));
  for (int i = 0; i < helpers; ++i) Schedule(work);
  work();
  if (SpinUntil([&] { return state->done.load(std::memory_order_acquire) == shards; })) return;
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait(lock, [&] { return state->done.load() == shards; });
}

bool LeavesCoreForCaller(const ThreadPool& pool) {
  static const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return pool.num_threads() > 0 && pool.num_threads() < cores;
}

BusyScope::BusyScope(const ThreadPool& pool) : counted_(LeavesCoreForCaller(pool)) {
  if (counted_) busy_threads.fetch_add(1, std::memory_order_relaxed);
}
BusyScope::~BusyScope() {
  if (counted_) busy_threads.fetch_sub(1, std::memory_order_release);
}
int BusyThreads() { return busy_threads.load(std::memory_order_acquire); }

int64_t BusySpinMicros() {
  static const int64_t us = EnvMicros("PF_POOL_BUSY_SPIN_US", kDefaultBusySpinMicros);
  return us;
}

bool SpinWhileBusy(const ThreadPool& pool, const std::function<bool()>& ready) {
  if (PollFor(ThreadPool::SpinMicros(), ready)) return true;
  const int64_t cap = BusySpinMicros();
  if (cap == 0 || !LeavesCoreForCaller(pool)) return ready();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(cap);
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if (BusyThreads() == 0) return ready();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return ready();
    CpuRelax();
  }
}

}  // namespace pf
