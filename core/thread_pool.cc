#include "placeflow/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>

namespace pf {
namespace {
thread_local const ThreadPool* current_pool = nullptr;

// Measured on the 2-vCPU development machine (docs/benchmarks.md).
constexpr int64_t kDefaultSpinMicros = 50;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
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
  static const int64_t us = [] {
    const char* env = std::getenv("PF_POOL_SPIN_US");
    return env != nullptr ? std::max<int64_t>(0, std::atoll(env)) : kDefaultSpinMicros;
  }();
  return us;
}

template <typename Ready>
bool ThreadPool::SpinUntil(Ready ready) {
  const int64_t us = SpinMicros();
  if (us == 0) return ready();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  for (int i = 0;; ++i) {
    if (ready()) return true;
    // The clock costs ~20 ns: read it every 64 polls.
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return ready();
    CpuRelax();
  }
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
  fn();
  return true;
}

void ThreadPool::WorkerLoop() {
  current_pool = this;
  for (;;) {
    std::function<void()> fn;
    SpinUntil([this] { return queued_.load(std::memory_order_acquire) > 0 || stop_.load(); });
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_.load() || !queue_.empty(); });
      if (queue_.empty()) return;
      fn = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
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

}  // namespace pf
