// Rendezvous: what _Send and _Recv kernels see of the runtime. A _Send leaves a tensor under a
// key and never blocks; a _Recv asks for it asynchronously (a callback, so a waiting Recv never
// holds a thread); aborting wakes every waiting Recv with the error. The executor implements it
// (executor/rendezvous.h: one per step, in process); a cluster runtime can implement it too.
//
//   std::string key = pf::Rendezvous::Key(send_device, incarnation, recv_device, "MatMul:0");
//   ctx->rendezvous()->Send(key, tensor);
//   ctx->rendezvous()->RecvAsync(key, [](const pf::Status& s, const pf::Tensor& t) { ... });
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"

namespace pf {

class Rendezvous {
 public:
  using DoneCallback = std::function<void(const Status&, const Tensor&)>;
  virtual ~Rendezvous() = default;

  // "send_device;incarnation;recv_device;tensor", as TensorFlow's rendezvous keys name both
  // ends and the sender's incarnation (16 hex digits): a cluster task that restarted (a new
  // incarnation) rejects a request for a tensor of its previous life. 0: not checked (one
  // process, collectives).
  static std::string Key(const std::string& send_device, uint64_t send_incarnation,
                         const std::string& recv_device, const std::string& tensor) {
    return fmt::format("{};{:016x};{};{}", send_device, send_incarnation, recv_device, tensor);
  }
  static std::string Key(const std::string& send_device, const std::string& recv_device,
                         const std::string& tensor) {
    return Key(send_device, 0, recv_device, tensor);
  }
  // The sending device and its incarnation in `key` (0 for a malformed one).
  static std::string_view SendDevice(std::string_view key) { return key.substr(0, key.find(';')); }
  static uint64_t SendIncarnation(std::string_view key) {
    const size_t begin = key.find(';') + 1, end = key.find(';', begin);
    if (begin == 0 || end == std::string_view::npos) return 0;
    uint64_t v = 0;
    for (char c : key.substr(begin, end - begin)) {
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (digit < 0) return 0;
      v = v * 16 + static_cast<uint64_t>(digit);
    }
    return v;
  }

  // Fails when the key was sent before in this step or the rendezvous was aborted.
  virtual Status Send(const std::string& key, const Tensor& value) = 0;
  // Calls `done` at once when the value is there (or the rendezvous aborted), else on Send.
  virtual void RecvAsync(const std::string& key, DoneCallback done) = 0;
  // Every pending and later Recv fails with `status`.
  virtual void StartAbort(const Status& status) = 0;
};

}  // namespace pf
