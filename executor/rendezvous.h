// Rendezvous: where a _Send leaves a tensor and a _Recv picks it up, by key. Send never blocks;
// Recv is asynchronous (a callback, so a waiting Recv never holds a thread); aborting wakes
// every waiting Recv with the error.
//
//   std::string key = pf::Rendezvous::Key(send_device, recv_device, "MatMul:0");
//   rendezvous.Send(key, tensor);
//   rendezvous.RecvAsync(key, [](const pf::Status& s, const pf::Tensor& t) { ... });
//
// CopyRegistry moves a received tensor to the receiving device, keyed by (source memory's
// device type, destination device type): a tensor in host memory counts as CPU wherever it
// was made (a GPU kernel's HostMemory output). Copies are asynchronous: `done` runs when the
// copy is usable on the destination (for a GPU destination: enqueued, with the destination's
// compute stream waiting on it). CPU->CPU is registered here (memory is shared: no copy); the
// CUDA backend registers host<->GPU and GPU<->GPU.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace pf {

class Device;

class Rendezvous {
 public:
  using DoneCallback = std::function<void(const Status&, const Tensor&)>;
  // "send_device;recv_device;tensor", as TensorFlow's rendezvous keys name both ends.
  static std::string Key(const std::string& send_device, const std::string& recv_device,
                         const std::string& tensor);

  Status Send(const std::string& key, const Tensor& value);
  // Calls `done` at once when the value is there (or the rendezvous aborted), else on Send.
  void RecvAsync(const std::string& key, DoneCallback done);
  // Every pending and later Recv fails with `status`.
  void StartAbort(const Status& status);

 private:
  struct Item {
    bool has_value = false;
    Tensor value;
    std::vector<DoneCallback> waiters;
  };
  std::mutex mu_;
  std::map<std::string, Item> items_;
  Status aborted_;
};

class CopyRegistry {
 public:
  using CopyDone = std::function<void(StatusOr<Tensor>)>;
  using CopyFn = std::function<void(const Tensor& in, Device* src, Device* dst, CopyDone done)>;
  static CopyRegistry* Global();
  void Register(const std::string& src_type, const std::string& dst_type, CopyFn fn);
  // The copy of `in` on `dst`, or an error naming both devices when no copy is registered.
  void CopyAsync(const Tensor& in, Device* src, Device* dst, CopyDone done) const;
  // Blocks until the copy is done (the client's thread: feeds and fetches, tests).
  StatusOr<Tensor> Copy(const Tensor& in, Device* src, Device* dst) const;

 private:
  std::map<std::pair<std::string, std::string>, CopyFn> fns_;
};

}  // namespace pf
