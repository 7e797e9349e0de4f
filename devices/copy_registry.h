// CopyRegistry moves a tensor to another device, keyed by (source memory's device type,
// destination device type): a tensor in host memory counts as CPU wherever it was made (a GPU
// kernel's HostMemory output). Copies are asynchronous: `done` runs when the copy is usable on
// the destination (for a GPU destination: enqueued, with the destination's compute stream
// waiting on it). CPU->CPU is registered here (memory is shared: no copy); the CUDA backend
// registers host<->GPU and GPU<->GPU (devices/cuda/gpu_copy.cc).
//
//   pf::CopyRegistry::Global()->CopyAsync(t, src, dst, [](pf::StatusOr<pf::Tensor> copy) { ... });
//   pf::Tensor on_host = pf::CopyRegistry::Global()->Copy(t, gpu, cpu).ValueOrThrow();
#pragma once

#include <functional>
#include <map>
#include <shared_mutex>
#include <string>
#include <utility>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"

namespace pf {

class Device;

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
  // The CUDA backend registers its copies when it loads, possibly while other threads copy.
  mutable std::shared_mutex mu_;
  std::map<std::pair<std::string, std::string>, CopyFn> fns_;
};

}  // namespace pf
