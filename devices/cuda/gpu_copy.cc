// Host<->GPU and GPU<->GPU copies for the copy registry. Every copy runs on a copy stream
// that first waits for the streams whose work it must not overtake (the producer's compute
// stream; the destination's compute stream, whose kernels may still use the memory the
// allocator just handed out again). A GPU destination's compute stream then waits on the copy
// (an event, not a host sync); a host destination is finished by the device's callback
// thread. Source tensors and staging buffers stay alive until their copy is done.
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "placeflow/core/logging.h"
#include "placeflow/devices/copy_registry.h"
#include "placeflow/devices/cuda/cuda_check.h"
#include "placeflow/devices/cuda/gpu_device.h"

namespace pf {
namespace {

using CopyDone = CopyRegistry::CopyDone;

StatusOr<Tensor> Allocate(Allocator* a, const Tensor& like, const Device& where) {
  Tensor t(a, like.dtype(), like.shape());
  if (!t.IsInitialized()) {
    return errors::ResourceExhausted("OOM when allocating a copy of shape ",
                                     like.shape().ToString(), " and type ", DTypeName(like.dtype()),
                                     " on ", where.name(), " by allocator ", a->Name(), ": ",
                                     a->DescribeFailure(like.TotalBytes()));
  }
  return t;
}

bool IsPinned(const Tensor& t) {
  return t.buffer() != nullptr && t.buffer()->allocator() == GpuDevice::PinnedAllocator();
}

// PF_GPU_PAGEABLE_COPY=direct: host->GPU copies from pageable memory go to cudaMemcpyAsync as
// they are (the driver stages them) instead of through a memcpy into pinned memory first. An
// experiment (docs/gpu.md): which is faster depends on the host's memcpy speed.
bool DirectPageableCopies() {
  static const bool direct = [] {
    const char* v = std::getenv("PF_GPU_PAGEABLE_COPY");
    return v != nullptr && std::strcmp(v, "direct") == 0;
  }();
  return direct;
}

// Host -> GPU: staged through pinned memory unless the source is pinned already.
Status HostToGpu(const Tensor& in, GpuDevice* dst, Tensor* out) {
  PF_ASSIGN_OR_RETURN(*out, Allocate(dst->GetAllocator(), in, *dst));
  if (in.TotalBytes() == 0) return Status::OK();
  Tensor src = in;
  if (!IsPinned(in) && !DirectPageableCopies()) {
    PF_ASSIGN_OR_RETURN(src, Allocate(GpuDevice::PinnedAllocator(), in, *dst));
    std::memcpy(src.raw_data(), in.raw_data(), in.TotalBytes());
  }
  PF_RETURN_IF_ERROR(dst->Activate());
  PF_RETURN_IF_ERROR(dst->StreamWaitStream(dst->h2d_stream(), dst->compute_stream()));
  PF_GPU_RETURN_IF_ERROR(dst->ordinal(),
                         cudaMemcpyAsync(out->raw_data(), src.raw_data(), in.TotalBytes(),
                                         cudaMemcpyHostToDevice, dst->h2d_stream()));
  PF_RETURN_IF_ERROR(dst->StreamWaitStream(dst->compute_stream(), dst->h2d_stream()));
  // Keeps the staging buffer alive; a failed copy shows in the destination stream's next check.
  return dst->ThenExecute(dst->h2d_stream(), [src](const Status&) {});
}

void GpuToHost(const Tensor& in, GpuDevice* src, CopyDone done) {
  auto fail = [&](const Status& s) { done(s); };
  StatusOr<Tensor> out = Allocate(GpuDevice::PinnedAllocator(), in, *src);
  if (!out.ok()) return fail(out.status());
  Tensor host = std::move(out).value();
  if (in.TotalBytes() == 0) return done(host);
  Status s = src->Activate();
  if (s.ok()) s = src->StreamWaitStream(src->d2h_stream(), src->compute_stream());
  if (s.ok()) {
    s = cuda::CheckCall(cudaMemcpyAsync(host.raw_data(), in.raw_data(), in.TotalBytes(),
                                        cudaMemcpyDeviceToHost, src->d2h_stream()),
                        "cudaMemcpyAsync(DeviceToHost)", src->ordinal(), __FILE__, __LINE__);
  }
  if (!s.ok()) return fail(s);
  s = src->ThenExecute(src->d2h_stream(), [in, host, done](const Status& copied) {
    if (!copied.ok()) return done(copied);
    done(host);
  });
  if (!s.ok()) fail(s);
}

void GpuToGpu(const Tensor& in, GpuDevice* src, GpuDevice* dst, CopyDone done) {
  if (!dst->CanAccessPeer(*src) || !src->CanAccessPeer(*dst)) {
    static std::once_flag logged;
    std::call_once(logged, [&] {
      PF_LOG_INFO(
          "No peer access between {} and {}: GPU-to-GPU copies are staged through pinned host "
          "memory",
          src->name(), dst->name());
    });
    return GpuToHost(in, src, [dst, done](StatusOr<Tensor> host) {
      if (!host.ok()) return done(host.status());
      Tensor out;
      Status s = HostToGpu(host.value(), dst, &out);
      if (!s.ok()) return done(s);
      done(out);
    });
  }
  StatusOr<Tensor> out = Allocate(dst->GetAllocator(), in, *dst);
  if (!out.ok()) return done(out.status());
  Tensor t = std::move(out).value();
  if (in.TotalBytes() > 0) {
    Status s = src->Activate();
    if (s.ok()) s = src->StreamWaitStream(src->d2d_stream(), src->compute_stream());
    if (s.ok()) s = src->StreamWaitStream(src->d2d_stream(), *dst, dst->compute_stream());
    if (s.ok()) {
      s = cuda::CheckCall(cudaMemcpyPeerAsync(t.raw_data(), dst->ordinal(), in.raw_data(),
                                              src->ordinal(), in.TotalBytes(), src->d2d_stream()),
                          "cudaMemcpyPeerAsync", src->ordinal(), __FILE__, __LINE__);
    }
    if (s.ok()) s = dst->StreamWaitStream(dst->compute_stream(), *src, src->d2d_stream());
    if (s.ok()) s = src->ThenExecute(src->d2d_stream(), [in](const Status&) {});
    if (!s.ok()) return done(s);
  }
  done(t);
}

[[maybe_unused]] const bool copies_registered = [] {
  CopyRegistry* r = CopyRegistry::Global();
  r->Register(kDeviceCpu, kDeviceGpu, [](const Tensor& in, Device*, Device* dst, CopyDone done) {
    Tensor out;
    Status s = HostToGpu(in, static_cast<GpuDevice*>(dst), &out);
    if (!s.ok()) return done(s);
    done(out);
  });
  r->Register(kDeviceGpu, kDeviceCpu, [](const Tensor& in, Device* src, Device*, CopyDone done) {
    GpuToHost(in, static_cast<GpuDevice*>(src), std::move(done));
  });
  r->Register(
      kDeviceGpu, kDeviceGpu, [](const Tensor& in, Device* src, Device* dst, CopyDone done) {
        GpuToGpu(in, static_cast<GpuDevice*>(src), static_cast<GpuDevice*>(dst), std::move(done));
      });
  return true;
}();

}  // namespace
}  // namespace pf
