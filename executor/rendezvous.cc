#include "executor/rendezvous.h"

#include <future>

#include "devices/device.h"

namespace pf {

std::string Rendezvous::Key(const std::string& send_device, const std::string& recv_device,
                            const std::string& tensor) {
  return send_device + ";" + recv_device + ";" + tensor;
}

Status Rendezvous::Send(const std::string& key, const Tensor& value) {
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

void Rendezvous::RecvAsync(const std::string& key, DoneCallback done) {
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

void Rendezvous::StartAbort(const Status& status) {
  std::vector<DoneCallback> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return;
    aborted_ = status.ok() ? errors::Aborted("Rendezvous aborted") : status;
    for (auto& [key, item] : items_) {
      for (auto& w : item.waiters) waiters.push_back(std::move(w));
      item.waiters.clear();
    }
  }
  for (auto& w : waiters) w(status, Tensor());
}

CopyRegistry* CopyRegistry::Global() {
  static CopyRegistry* r = [] {
    auto* reg = new CopyRegistry();
    // CPU devices share host memory: the receiver uses the sender's buffer.
    reg->Register(kDeviceCpu, kDeviceCpu,
                  [](const Tensor& in, Device*, Device*, CopyDone done) { done(in); });
    return reg;
  }();
  return r;
}

void CopyRegistry::Register(const std::string& src_type, const std::string& dst_type, CopyFn fn) {
  fns_[{src_type, dst_type}] = std::move(fn);
}

void CopyRegistry::CopyAsync(const Tensor& in, Device* src, Device* dst, CopyDone done) const {
  const std::string src_type = in.InHostMemory() ? std::string(kDeviceCpu) : src->device_type();
  auto it = fns_.find({src_type, dst->device_type()});
  if (it == fns_.end()) {
    return done(errors::Unimplemented("No copy registered from ", src_type, " (", src->name(),
                                      ") to ", dst->device_type(), " (", dst->name(), ")"));
  }
  it->second(in, src, dst, std::move(done));
}

StatusOr<Tensor> CopyRegistry::Copy(const Tensor& in, Device* src, Device* dst) const {
  std::promise<StatusOr<Tensor>> result;
  std::future<StatusOr<Tensor>> ready = result.get_future();
  CopyAsync(in, src, dst, [&result](StatusOr<Tensor> t) { result.set_value(std::move(t)); });
  return ready.get();
}

}  // namespace pf
