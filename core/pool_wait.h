// Polling instead of sleeping, for threads that wait on a small ThreadPool. On a VM, waking a
// thread that went to sleep on a condition variable costs tens of microseconds, several short
// nodes' worth (executor_wide: 8 chains of 1.4 us Tanh nodes, issue 34). A pool with fewer
// workers than cores (SessionOptions::num_threads = cores: that many threads in all, the
// caller included) leaves a core to its caller, so there an idle worker keeps polling while
// some thread is busy running a step (it may hand over work any moment), and so does a caller
// waiting for its step, up to BusySpinMicros() (off by default); the caller always polls for
// ThreadPool::SpinMicros() before it sleeps. ThreadPool::Default() (a worker per core) is left as
// it was: a polling caller there would take a core from its workers.
//
//   pf::BusyScope busy(*pool);  // while this thread runs a step's nodes
//   if (pf::LeavesCoreForCaller(*pool)) pf::SpinWhileBusy(*pool, [&] { return done.load(); });
#pragma once

#include <cstdint>
#include <functional>

#include "placeflow/core/thread_pool.h"

namespace pf {

// 0 < pool.num_threads() < the number of cores.
bool LeavesCoreForCaller(const ThreadPool& pool);

// Counts the calling thread as busy running a step's work of `pool` while it lives, when the
// pool LeavesCoreForCaller() (one count for the process; other pools pay nothing). Its workers
// count while they run a task, and so does a task run by ThreadPool::TryRunOne.
class BusyScope {
 public:
  explicit BusyScope(const ThreadPool& pool);
  ~BusyScope();
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  bool counted_;
};
// Threads counted busy now.
int BusyThreads();

// Polls `ready` for ThreadPool::SpinMicros(); then, when the pool LeavesCoreForCaller(), for as
// long as BusyThreads() > 0, up to BusySpinMicros(). True when `ready` came true.
bool SpinWhileBusy(const ThreadPool& pool, const std::function<bool()>& ready);

// The cap on polling while others are busy: PF_POOL_BUSY_SPIN_US, else 0 (off: see
// docs/benchmarks.md, issue 34, for when it helps and when it hurts).
int64_t BusySpinMicros();

}  // namespace pf
