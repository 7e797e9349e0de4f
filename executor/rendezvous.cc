#include "placeflow/executor/rendezvous.h"

namespace pf {

Status LocalRendezvous::Send(const std::string& key, const Tensor& value) {
  std::vector<DoneCallback> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return aborted_;
    Item& item = items_[key];
    if (item.has_value) return errors::Internal("Send of '", key, "' twice in one step");
    item.has_value = true;
    item.value = value;
    waiters.swap(item.waiters);
  }
  for (auto& w : waiters) w(Status::OK(), value);
  return Status::OK();
}

void LocalRendezvous::RecvAsync(const std::string& key, DoneCallback done) {
  Tensor value;
  Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status = aborted_;
    if (status.ok()) {
      Item& item = items_[key];
      if (!item.has_value) {
        item.waiters.push_back(std::move(done));
        return;
      }
      value = item.value;
    }
  }
  done(status, value);
}

void LocalRendezvous::StartAbort(const Status& status) {
  std::vector<DoneCallback> waiters;
  Status s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return;
    aborted_ = status.ok() ? errors::Aborted("Rendezvous aborted") : status;
    s = aborted_;
    for (auto& [key, item] : items_) {
      for (auto& w : item.waiters) waiters.push_back(std::move(w));
      item.waiters.clear();
    }
  }
  for (auto& w : waiters) w(s, Tensor());
}

}  // namespace pf
