#include "placeflow/graph/cancellation.h"

#include <utility>

namespace pf {

bool CancellationManager::Register(Token* token, Callback fn, Describe describe) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return false;
  *token = next_++;
  entries_.emplace(*token, Entry{std::move(fn), std::move(describe)});
  return true;
}

bool CancellationManager::Deregister(Token token) {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.erase(token) > 0;
}

void CancellationManager::StartCancel(const Status& status) {
  std::map<Token, Entry> entries;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    status_ = status;
    entries.swap(entries_);
  }
  for (auto& [token, e] : entries) e.fn(status);
}

bool CancellationManager::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

Status CancellationManager::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

std::vector<std::string> CancellationManager::Waiting() const {
  std::vector<Describe> describe;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [token, e] : entries_)
      if (e.describe) describe.push_back(e.describe);
  }
  // Outside the lock: a description may take the lock of what it waits on, whose owner may be
  // deregistering.
  std::vector<std::string> out;
  for (const Describe& d : describe) out.push_back(d());
  return out;
}

}  // namespace pf
