#include "placeflow/executor/rendezvous.h"

namespace pf {

Status LocalRendezvous::Send(const std::string& key, const Tensor& value) {
  std::vector<DoneCallback> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return aborted_;
    Item& item = items_[key];
    if (item.sent) return errors::Internal("Send of '", key, "' twice in one step");
    item.sent = true;
    waiters.swap(item.waiters);
    // A Recv waiting takes the value now; else it is kept for the one that comes.
    if (waiters.empty()) {
      item.value = value;
    } else {
      item.received = true;
    }
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
      if (item.received || !item.waiters.empty()) {
        status = errors::Internal("Recv of '", key, "' twice in one step");
      } else if (!item.sent) {
        item.waiters.push_back(std::move(done));
        return;
      } else {
        value = std::move(item.value);  // the buffer lives as long as its readers, no longer
        item.received = true;
      }
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
