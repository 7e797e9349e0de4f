// GpuDevice: one CUDA GPU (or one logical slice of one). It owns a compute stream and three
// copy streams (host->device, device->host, device->device), a cuBLAS and a cuDNN handle bound
// to the compute stream, a BFC caching allocator for device memory, and a callback thread
// that finishes work the GPU signals (copies to the host). Streams, handles and the thread are
// shared by every session's device for the same GPU (created once per process); variables
// (the resource manager) belong to the session's device. Kernels only enqueue work on the
// compute stream; Sync() waits for every stream and reports the first asynchronous error.
//
// CUDA-free on purpose: the GPU op kernels (ops/*/*_gpu.cc) include it and are compiled by
// the host compiler; only devices/cuda/*.cc and *.cu include CUDA headers.
//
//   auto* gpu = static_cast<pf::GpuDevice*>(ctx->device());
//   PF_RETURN_IF_ERROR(gpu->Activate());                  // cudaSetDevice for this thread
//   LaunchMyKernel(..., gpu->compute_stream());
//   PF_RETURN_IF_ERROR(gpu->CheckLaunch("MyKernel"));     // PF_SYNC_KERNELS=1 syncs here
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "placeflow/core/bfc_allocator.h"
#include "placeflow/devices/device.h"
#include "placeflow/devices/device_manager.h"

struct CUstream_st;
struct cublasContext;
struct cudnnContext;

namespace pf {

using GpuStream = CUstream_st*;

class GpuDevice final : public Device {
 public:
  static StatusOr<std::unique_ptr<GpuDevice>> Create(const GpuDevicePlan& plan,
                                                     const GpuOptions& options);
  ~GpuDevice() override;

  Allocator* GetAllocator() override;
  // Pinned host memory (process-wide): staging for copies, fetched values.
  static Allocator* PinnedAllocator();
  int priority() const override { return 200; }
  bool uses_host_memory() const override { return false; }
  Status Sync() override;
  Status CopyWithinDevice(void* dst, const void* src,
                          size_t bytes) override;  // on the compute stream
  // TensorFlow's mapping text: "device: 0, name: NVIDIA H100 80GB HBM3, pci bus id: ...,
  // compute capability: 9.0".
  std::string Description() const override;

  int ordinal() const;  // the CUDA device ordinal (physical GPU)
  GpuStream compute_stream() const;
  GpuStream h2d_stream() const;
  GpuStream d2h_stream() const;
  GpuStream d2d_stream() const;
  cublasContext* blas() const;
  cudnnContext* dnn() const;
  // Hold while using dnn(): a cuDNN handle must not be used by two threads at once.
  std::unique_lock<std::mutex> LockDnn() const;
  bool allow_tf32() const;
  int sm_count() const;

  // Makes this GPU current on the calling thread.
  Status Activate() const;
  // After a kernel's launches: a launch error names `what`; with PF_SYNC_KERNELS=1 the compute
  // stream is synchronised so an asynchronous error names the kernel that caused it.
  Status CheckLaunch(const std::string& what) const;
  // Runs `fn` on this device's callback thread once `stream`'s work so far is done, with the
  // stream's error (a kernel's fault) if it has one: it always runs, exactly once.
  Status ThenExecute(GpuStream stream, std::function<void(Status)> fn);
  // Whether the calling thread is a GPU callback thread: code there must never block on GPU
  // work, which may need that thread to finish.
  static bool OnCallbackThread();
  // `waiter` (a stream of this GPU) waits, on the GPU and not the host, for the work enqueued
  // so far on `signaler`, a stream of `signaler_gpu` (this GPU or another). Leaves this GPU
  // current.
  Status StreamWaitStream(GpuStream waiter, const GpuDevice& signaler_gpu,
                          GpuStream signaler) const;
  Status StreamWaitStream(GpuStream waiter, GpuStream signaler) const {
    return StreamWaitStream(waiter, *this, signaler);
  }
  // Whether this GPU reads and writes `other`'s memory directly (peer access enabled).
  bool CanAccessPeer(const GpuDevice& other) const;

  AllocatorStats MemoryStats() const;
  BfcAllocator* bfc() const;

  struct Impl;

 private:
  GpuDevice(int id, std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pf
