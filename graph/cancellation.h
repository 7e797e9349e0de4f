// CancellationManager: how a step tells its waiting kernels to give up. An asynchronous kernel
// that waits on something outside the step (a queue, an accumulator) registers a callback; when
// the step fails, times out or is aborted, every registered callback runs once with the reason.
// A kernel whose wait ended normally deregisters first.
//
//   pf::CancellationManager::Token t;
//   if (!cm->Register(&t, [=](const pf::Status& s) { queue->CancelWaiter(id, s); },
//                     [=] { return "dequeue from tokens"; }))
//     return done(cm->status());   // already cancelled
//   ...                            // later, when the wait is over:
//   cm->Deregister(t);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "placeflow/core/status.h"

namespace pf {

class CancellationManager {
 public:
  using Token = int64_t;
  using Callback = std::function<void(const Status&)>;
  using Describe = std::function<std::string()>;

  // Registers `fn` (and what it waits for, for error messages). False, with nothing registered,
  // when the step is already cancelled.
  bool Register(Token* token, Callback fn, Describe describe = nullptr);
  // True when the callback was removed before it ran (it will not run).
  bool Deregister(Token token);
  // Runs every registered callback once with `status` (on this thread, without the lock; the
  // callbacks must not touch the manager). Later registrations fail.
  void StartCancel(const Status& status);
  bool cancelled() const;
  Status status() const;
  // What the registered callbacks wait for, one per line (empty when nothing waits).
  std::vector<std::string> Waiting() const;

 private:
  struct Entry {
    Callback fn;
    Describe describe;
  };
  mutable std::mutex mu_;
  Status status_;
  bool cancelled_ = false;
  Token next_ = 1;
  std::map<Token, Entry> entries_;
};

}  // namespace pf
