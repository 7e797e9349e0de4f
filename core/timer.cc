#include "placeflow/core/timer.h"

namespace pf {

Timer* Timer::Default() {
  static Timer* timer = new Timer();  // never destroyed: callbacks may run at exit
  return timer;
}

Timer::Timer() : thread_([this] { Loop(); }) {}

Timer::~Timer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Timer::Id Timer::Schedule(Clock::duration delay, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  const Id id = next_id_++;
  const Clock::time_point when = Clock::now() + delay;
  const bool earliest = pending_.empty() || when < pending_.begin()->first.first;
  pending_.emplace(std::make_pair(when, id), std::move(fn));
  deadline_[id] = when;
  if (earliest) cv_.notify_all();
  return id;
}

bool Timer::Cancel(Id id) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = deadline_.find(id);
  if (it != deadline_.end()) {
    pending_.erase({it->second, id});
    deadline_.erase(it);
    return true;
  }
  if (std::this_thread::get_id() != thread_.get_id())
    cv_.wait(lock, [&] { return running_ != id; });
  return false;
}

void Timer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (pending_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto first = pending_.begin();
    // A copy: wait_until reads the deadline again after waking, when a Cancel may have erased
    // the entry that held it (ASan: heap-use-after-free).
    const Clock::time_point deadline = first->first.first;
    if (Clock::now() < deadline) {
      cv_.wait_until(lock, deadline);
      continue;
    }
    const Id id = first->first.second;
    std::function<void()> fn = std::move(first->second);
    pending_.erase(first);
    deadline_.erase(id);
    running_ = id;
    lock.unlock();
    fn();
    fn = nullptr;  // what it holds may cancel timers as it goes: not under our lock
    lock.lock();
    running_ = 0;
    cv_.notify_all();
  }
}

}  // namespace pf
