#include "placeflow/devices/copy_registry.h"

#include <future>

#include "placeflow/devices/device.h"

namespace pf {

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
  std::unique_lock lock(mu_);
  fns_[{src_type, dst_type}] = std::move(fn);
}

void CopyRegistry::CopyAsync(const Tensor& in, Device* src, Device* dst, CopyDone done) const {
  const std::string src_type = in.InHostMemory() ? std::string(kDeviceCpu) : src->device_type();
  // std::string elements cannot be memcpy'd to a device: DT_STRING stays in host memory.
  if (in.dtype() == DT_STRING && (src_type != kDeviceCpu || dst->device_type() != kDeviceCpu)) {
    return done(
        errors::InvalidArgument("Cannot copy a string tensor of shape ", in.shape().ToString(),
                                " from ", src->name(), " to ", dst->name(),
                                ": DT_STRING tensors live in host memory only (keep the nodes that "
                                "produce and consume them on a CPU device)"));
  }
  const CopyFn* fn = nullptr;
  {
    std::shared_lock lock(mu_);
    auto it = fns_.find({src_type, dst->device_type()});
    if (it != fns_.end()) fn = &it->second;  // map nodes stay put; entries are never replaced
  }
  if (fn == nullptr) {
    return done(errors::Unimplemented("No copy registered from ", src_type, " (", src->name(),
                                      ") to ", dst->device_type(), " (", dst->name(), ")"));
  }
  (*fn)(in, src, dst, std::move(done));
}

StatusOr<Tensor> CopyRegistry::Copy(const Tensor& in, Device* src, Device* dst) const {
  std::promise<StatusOr<Tensor>> result;
  std::future<StatusOr<Tensor>> ready = result.get_future();
  CopyAsync(in, src, dst, [&result](StatusOr<Tensor> t) { result.set_value(std::move(t)); });
  return ready.get();
}

}  // namespace pf
