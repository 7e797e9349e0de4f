// StepGroup (executor/executor.h): what the executors of one step share, its first error and
// its timeout.
#include <chrono>
#include <mutex>

#include "placeflow/core/timer.h"
#include "placeflow/executor/executor.h"

namespace pf {

void StepGroup::Fail(const Status& s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status_.ok()) return;
    status_ = s;
    aborted_.store(true, std::memory_order_release);
  }
  rendezvous_->StartAbort(s);
  collectives_.StartAbort(s);
  cancellation_.StartCancel(s);
}

StepGroup::~StepGroup() { CancelTimeout(); }

void StepGroup::CancelTimeout() {
  if (timer_) Timer::Default()->Cancel(timer_);
  timer_ = 0;
}

void StepGroup::SetTimeout(int64_t timeout_ms, std::shared_ptr<void> keep_alive) {
  if (timeout_ms <= 0) return;
  timer_ = Timer::Default()->Schedule(
      std::chrono::milliseconds(timeout_ms), [this, timeout_ms, keep_alive] {
        std::string what;
        for (const std::string& w : cancellation_.Waiting()) what += "\n  waiting: " + w;
        Fail(errors::DeadlineExceeded("Step timed out after ", timeout_ms,
                                      " ms (RunOptions.timeout_in_ms)", what));
      });
}

Status StepGroup::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void StepGroup::Record(NodeExecStats s) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_->step_stats.push_back(std::move(s));
}

}  // namespace pf
