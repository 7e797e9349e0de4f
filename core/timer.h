// Timer: one process-wide thread that runs callbacks at deadlines (step timeouts). Callbacks run
// on the timer's thread and must be short.
//
//   pf::Timer::Id id = pf::Timer::Default()->Schedule(std::chrono::milliseconds(500), [&] { ... });
//   pf::Timer::Default()->Cancel(id);   // after it returns, the callback is not running
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace pf {

class Timer {
 public:
  using Id = uint64_t;
  using Clock = std::chrono::steady_clock;

  static Timer* Default();
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Runs `fn` once `delay` has passed (unless cancelled first).
  Id Schedule(Clock::duration delay, std::function<void()> fn);
  // Drops the callback; if it is running on another thread, waits until it returns. True when
  // it had not started. Safe to call from the callback itself (returns false).
  bool Cancel(Id id);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  // Ordered by deadline, then id.
  std::map<std::pair<Clock::time_point, Id>, std::function<void()>> pending_;
  std::map<Id, Clock::time_point> deadline_;
  Id next_id_ = 1;
  Id running_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pf
