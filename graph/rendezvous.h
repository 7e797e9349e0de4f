// Rendezvous: what _Send and _Recv kernels see of the runtime. A _Send leaves a tensor under a
// key and never blocks; a _Recv asks for it asynchronously (a callback, so a waiting Recv never
// holds a thread); aborting wakes every waiting Recv with the error. The executor implements it
// (executor/rendezvous.h: one per step, in process); a cluster runtime can implement it too.
//
//   std::string key = pf::Rendezvous::Key(send_device, recv_device, "MatMul:0");
//   ctx->rendezvous()->Send(key, tensor);
//   ctx->rendezvous()->RecvAsync(key, [](const pf::Status& s, const pf::Tensor& t) { ... });
#pragma once

#include <functional>
#include <string>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"

namespace pf {

class Rendezvous {
 public:
  using DoneCallback = std::function<void(const Status&, const Tensor&)>;
  virtual ~Rendezvous() = default;

  // "send_device;recv_device;tensor", as TensorFlow's rendezvous keys name both ends.
  static std::string Key(const std::string& send_device, const std::string& recv_device,
                         const std::string& tensor) {
    return send_device + ";" + recv_device + ";" + tensor;
  }

  // Fails when the key was sent before in this step or the rendezvous was aborted.
  virtual Status Send(const std::string& key, const Tensor& value) = 0;
  // Calls `done` at once when the value is there (or the rendezvous aborted), else on Send.
  virtual void RecvAsync(const std::string& key, DoneCallback done) = 0;
  // Every pending and later Recv fails with `status`.
  virtual void StartAbort(const Status& status) = 0;
};

}  // namespace pf
