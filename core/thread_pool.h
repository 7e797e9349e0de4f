// One process-wide pool serves both inter-op scheduling (executor nodes) and intra-op loops
// (kernels), so the two never oversubscribe the cores.
//
//   pf::ThreadPool* pool = pf::ThreadPool::Default();      // hardware_concurrency threads
//   pool->Schedule([] { ... });
//   pool->ParallelFor(n, /*cost_per_unit=*/10, [&](int64_t begin, int64_t end) { ... });
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pf {

class ThreadPool {
 public:
  // `num_threads` may be 0: Schedule then runs work on the calling thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Sized by PF_NUM_THREADS, else std::thread::hardware_concurrency().
  static ThreadPool* Default();

  int num_threads() const { return static_cast<int>(threads_.size()); }
  void Schedule(std::function<void()> fn);

  // Splits [0, n) into shards and runs fn(begin, end) on them, the calling thread included.
  // Shards are claimed through an atomic counter, so a caller that is itself a pool thread
  // never waits on a shard nobody has started: nested calls cannot deadlock.
  // `cost_per_unit` is a rough count of cycles per element; small loops run inline.
  void ParallelFor(int64_t n, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn);

  // Runs one queued task on the calling thread; false when the queue is empty. A thread
  // waiting for work it handed to the pool calls this instead of sitting idle.
  bool TryRunOne();

  // True on one of this pool's threads.
  bool InPool() const;

  // How long an idle worker, or a ParallelFor caller waiting for its helpers, polls before it
  // sleeps: a step's next task usually comes within microseconds, and waking a sleeping thread
  // costs tens of them (TensorFlow's pool spins too). PF_POOL_SPIN_US sets it; 0 never polls.
  static int64_t SpinMicros();

 private:
  void WorkerLoop();
  // Polls `ready` for up to SpinMicros(); true when it became true.
  template <typename Ready>
  static bool SpinUntil(Ready ready);

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::atomic<int64_t> queued_{0};  // queue_.size(), readable without the lock
  std::atomic<bool> stop_{false};
};

}  // namespace pf
