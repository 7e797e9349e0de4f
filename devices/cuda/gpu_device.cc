#include "placeflow/devices/cuda/gpu_device.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "placeflow/core/logging.h"
#include "placeflow/devices/cuda/cuda_check.h"
#include "placeflow/devices/cuda/gpu_nccl.h"
#include "placeflow/devices/gpu_probe.h"

namespace pf {

namespace cuda {

bool IsSticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

std::string Describe(cudaError_t e) {
  return fmt::format("{} ({}){}", cudaGetErrorString(e), cudaGetErrorName(e),
                     IsSticky(e) ? ". The GPU's CUDA context is lost (a sticky error): every later "
                                   "CUDA call of this process fails; restart the process"
                                 : "");
}
std::string Describe(cublasStatus_t e) {
  return fmt::format("{} ({})", cublasGetStatusString(e), cublasGetStatusName(e));
}
std::string Describe(cudnnStatus_t e) { return cudnnGetErrorString(e); }

Status CallError(bool out_of_memory, const std::string& decoded, const char* call, int device,
                 const char* file, int line) {
  std::string msg =
      fmt::format("{} failed on GPU {}: {} [{}:{}]", call, device, decoded, file, line);
  return out_of_memory ? errors::ResourceExhausted(msg) : errors::Internal(msg);
}

}  // namespace cuda

namespace {

class CudaSubAllocator : public SubAllocator {
 public:
  explicit CudaSubAllocator(int ordinal) : ordinal_(ordinal) {}
  void* Alloc(size_t bytes) override {
    void* p = nullptr;
    if (cudaSetDevice(ordinal_) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  void Free(void* p, size_t) override {
    cudaSetDevice(ordinal_);
    cudaFree(p);
  }

 private:
  int ordinal_;
};

class PinnedSubAllocator : public SubAllocator {
 public:
  void* Alloc(size_t bytes) override {
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  void Free(void* p, size_t) override { cudaFreeHost(p); }
};

// Allocators are process-wide, like TensorFlow's GPUProcessState: tensors (variables, fetched
// values in pinned memory) may outlive the session and device that made them. One allocator
// per (TF device id, physical GPU, limit, growth); a session that asks for other settings gets
// a new one, after the cached free memory of the others on that GPU goes back to the driver.
std::mutex g_allocators_mu;
auto* g_device_allocators =
    new std::map<std::tuple<int, int, double, double, bool>, BfcAllocator*>();

StatusOr<BfcAllocator*> DeviceAllocator(const GpuDevicePlan& plan, const GpuOptions& options) {
  const int tf_id = plan.id, ordinal = plan.physical_id;
  const bool growth = AllowGrowthFromEnv(options.allow_growth);
  std::lock_guard<std::mutex> lock(g_allocators_mu);
  auto& slot = (*g_device_allocators)[{tf_id, ordinal, plan.memory_mb,
                                       options.per_process_gpu_memory_fraction, growth}];
  if (slot == nullptr) {
    for (auto& [key, other] : *g_device_allocators) {
      if (other != nullptr && std::get<1>(key) == ordinal) other->ReleaseFreeRegions();
    }
    size_t free_bytes = 0, total_bytes = 0;
    PF_GPU_RETURN_IF_ERROR(ordinal, cudaSetDevice(ordinal));  // cudaMemGetInfo reads the current
    PF_GPU_RETURN_IF_ERROR(ordinal, cudaMemGetInfo(&free_bytes, &total_bytes));
    size_t limit;
    if (plan.memory_mb > 0) {
      limit = static_cast<size_t>(plan.memory_mb * 1048576.0);
    } else if (options.per_process_gpu_memory_fraction > 0) {
      limit = static_cast<size_t>(static_cast<double>(total_bytes) *
                                  options.per_process_gpu_memory_fraction);
    } else {
      // TensorFlow's default: the free memory less a reserve for the CUDA context and libraries.
      const size_t reserve = std::max<size_t>(size_t{256} << 20, total_bytes / 20);
      limit = free_bytes > reserve ? free_bytes - reserve : free_bytes / 2;
    }
    BfcOptions o;
    o.allow_growth = growth;
    o.name = fmt::format("GPU_{}_bfc", tf_id);
    o.host_accessible = false;
    slot = new BfcAllocator(std::make_unique<CudaSubAllocator>(ordinal), limit, o);
    PF_LOG_INFO("Created GPU_{}_bfc on GPU {} with a {:.1f} MiB limit{}", tf_id, ordinal,
                limit / 1048576.0, growth ? " (allow_growth)" : "");
  }
  return slot;
}

bool SyncKernelsFromEnv() {
  const char* env = std::getenv("PF_SYNC_KERNELS");
  return env != nullptr && std::strcmp(env, "0") != 0 && env[0] != '\0';
}

std::mutex g_peer_mu;
std::set<std::pair<int, int>> g_peers;  // (accessing ordinal, owning ordinal)

}  // namespace

namespace {

// cuBLAS math modes: a handle per mode, each bound to the context's compute stream.
enum BlasMode { kBlasDefault, kBlasPedantic, kBlasTf32, kNumBlasModes };

BlasMode BlasModeFor(const GpuOptions& o) {
  if (o.allow_tf32) return kBlasTf32;
  const char* env = std::getenv("PF_CUBLAS_PEDANTIC");
  const bool forced = env != nullptr && env[0] != '\0' && std::strcmp(env, "0") != 0;
  return o.pedantic_math || forced ? kBlasPedantic : kBlasDefault;
}

// What sessions share on one GPU, created once per (device id, GPU) and kept for the process,
// as TensorFlow keeps its streams: streams, library handles (creating a cuDNN handle costs tens
// of milliseconds), the callback thread. The device allocators are keyed by (device id, GPU,
// memory settings), so each allocator serves exactly one compute stream: memory freed by a
// kernel is only handed out again to work ordered after it on that stream.
struct GpuContext {
  int ordinal = 0;
  cudaDeviceProp props{};
  cudaStream_t compute = nullptr, h2d = nullptr, d2h = nullptr, d2d = nullptr;
  std::mutex blas_mu;
  cublasHandle_t blas[kNumBlasModes] = {};
  cudnnHandle_t dnn = nullptr;
  std::mutex dnn_mu;  // a cuDNN handle must not be used by two threads at once

  // The callback thread: runs what the GPU signalled done (host functions must not call CUDA,
  // so they only queue work here).
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  std::thread thread;

  void Loop() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return !queue.empty(); });
        fn = std::move(queue.front());
        queue.pop_front();
      }
      fn();
    }
  }
  void Enqueue(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(std::move(fn));
    }
    cv.notify_one();
  }

  // This context's cuBLAS handle for `mode`, created on first use.
  StatusOr<cublasHandle_t> Blas(BlasMode mode) {
    std::lock_guard<std::mutex> lock(blas_mu);
    if (blas[mode] != nullptr) return blas[mode];
    PF_GPU_RETURN_IF_ERROR(ordinal, cudaSetDevice(ordinal));
    cublasHandle_t h = nullptr;
    PF_GPU_RETURN_IF_ERROR(ordinal, cublasCreate(&h));
    const cublasMath_t math[kNumBlasModes] = {CUBLAS_DEFAULT_MATH, CUBLAS_PEDANTIC_MATH,
                                              CUBLAS_TF32_TENSOR_OP_MATH};
    Status s = cuda::CheckCall(cublasSetStream(h, compute), "cublasSetStream", ordinal, __FILE__,
                               __LINE__);
    if (s.ok()) {
      s = cuda::CheckCall(cublasSetMathMode(h, math[mode]), "cublasSetMathMode", ordinal, __FILE__,
                          __LINE__);
    }
    if (!s.ok()) {
      cublasDestroy(h);
      return s;
    }
    blas[mode] = h;
    return h;
  }
};

thread_local bool t_on_callback_thread = false;

std::mutex g_contexts_mu;
auto* g_contexts = new std::map<std::pair<int, int>, GpuContext*>();

StatusOr<GpuContext*> ContextFor(const GpuDevicePlan& plan) {
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  GpuContext*& slot = (*g_contexts)[{plan.id, plan.physical_id}];
  if (slot != nullptr) return slot;
  auto c = std::make_unique<GpuContext>();
  const int dev = plan.physical_id;
  c->ordinal = dev;
  PF_GPU_RETURN_IF_ERROR(dev, cudaSetDevice(dev));
  PF_GPU_RETURN_IF_ERROR(dev, cudaGetDeviceProperties(&c->props, dev));
  for (cudaStream_t* st : {&c->compute, &c->h2d, &c->d2h, &c->d2d}) {
    PF_GPU_RETURN_IF_ERROR(dev, cudaStreamCreateWithFlags(st, cudaStreamNonBlocking));
  }
  PF_GPU_RETURN_IF_ERROR(dev, cudnnCreate(&c->dnn));
  PF_GPU_RETURN_IF_ERROR(dev, cudnnSetStream(c->dnn, c->compute));
  GpuContext* raw = c.release();  // lives as long as the process (the thread never stops)
  raw->thread = std::thread([raw] {
    t_on_callback_thread = true;
    raw->Loop();
  });
  raw->thread.detach();
  slot = raw;
  return slot;
}

}  // namespace

struct GpuDevice::Impl {
  GpuDevicePlan plan;
  bool tf32 = false;
  bool sync_kernels = false;
  GpuContext* ctx = nullptr;
  cublasHandle_t blas = nullptr;
  BfcAllocator* allocator = nullptr;
};

GpuDevice::GpuDevice(int id, std::unique_ptr<Impl> impl)
    : Device(kDeviceGpu, id), impl_(std::move(impl)) {}

GpuDevice::~GpuDevice() {
  // This session's work finishes before its variables (in the resource manager) are freed.
  static_cast<void>(Sync());
  NcclReleaseDevice(this);
}

StatusOr<std::unique_ptr<GpuDevice>> GpuDevice::Create(const GpuDevicePlan& plan,
                                                       const GpuOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->plan = plan;
  impl->tf32 = options.allow_tf32;
  impl->sync_kernels = SyncKernelsFromEnv();
  PF_ASSIGN_OR_RETURN(impl->ctx, ContextFor(plan));
  const BlasMode mode = BlasModeFor(options);
  PF_ASSIGN_OR_RETURN(impl->blas, impl->ctx->Blas(mode));
  if (mode == kBlasPedantic) PF_LOG_INFO("GPU {}: cuBLAS pedantic math", plan.id);
  PF_ASSIGN_OR_RETURN(impl->allocator, DeviceAllocator(plan, options));
  return std::unique_ptr<GpuDevice>(new GpuDevice(plan.id, std::move(impl)));
}

Allocator* GpuDevice::GetAllocator() { return impl_->allocator; }
BfcAllocator* GpuDevice::bfc() const { return impl_->allocator; }
AllocatorStats GpuDevice::MemoryStats() const { return impl_->allocator->Stats(); }

Allocator* GpuDevice::PinnedAllocator() {
  static BfcAllocator* pinned = [] {
    BfcOptions o;
    o.allow_growth = true;
    o.name = "gpu_host_bfc";
    o.host_accessible = true;
    return new BfcAllocator(std::make_unique<PinnedSubAllocator>(), size_t{64} << 30, o);
  }();
  return pinned;
}

int GpuDevice::ordinal() const { return impl_->plan.physical_id; }
GpuStream GpuDevice::compute_stream() const { return impl_->ctx->compute; }
GpuStream GpuDevice::h2d_stream() const { return impl_->ctx->h2d; }
GpuStream GpuDevice::d2h_stream() const { return impl_->ctx->d2h; }
GpuStream GpuDevice::d2d_stream() const { return impl_->ctx->d2d; }
cublasContext* GpuDevice::blas() const { return impl_->blas; }
cudnnContext* GpuDevice::dnn() const { return impl_->ctx->dnn; }
std::unique_lock<std::mutex> GpuDevice::LockDnn() const {
  return std::unique_lock<std::mutex>(impl_->ctx->dnn_mu);
}
bool GpuDevice::allow_tf32() const { return impl_->tf32; }
int GpuDevice::sm_count() const { return impl_->ctx->props.multiProcessorCount; }

std::string GpuDevice::Description() const {
  const cudaDeviceProp& p = impl_->ctx->props;
  return fmt::format(
      "device: {}, name: {}, pci bus id: {:04x}:{:02x}:{:02x}.0, compute capability: {}.{}",
      impl_->plan.physical_id, p.name, p.pciDomainID, p.pciBusID, p.pciDeviceID, p.major, p.minor);
}

Status GpuDevice::Activate() const {
  PF_GPU_RETURN_IF_ERROR(ordinal(), cudaSetDevice(ordinal()));
  return Status::OK();
}

Status GpuDevice::Sync() {
  PF_RETURN_IF_ERROR(Activate());
  for (cudaStream_t s : {impl_->ctx->compute, impl_->ctx->h2d, impl_->ctx->d2h, impl_->ctx->d2d}) {
    PF_GPU_RETURN_IF_ERROR(ordinal(), cudaStreamSynchronize(s));
  }
  return Status::OK();
}

Status GpuDevice::CopyWithinDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::OK();
  PF_RETURN_IF_ERROR(Activate());
  PF_GPU_RETURN_IF_ERROR(
      ordinal(), cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, impl_->ctx->compute));
  return Status::OK();
}

Status GpuDevice::CheckLaunch(const std::string& what) const {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    return errors::Internal("Launching kernel '", what, "' failed on GPU ", ordinal(), " (", name(),
                            "): ", cuda::Describe(e));
  }
  if (impl_->sync_kernels) {
    e = cudaStreamSynchronize(impl_->ctx->compute);
    if (e != cudaSuccess) {
      return errors::Internal("Kernel '", what, "' failed on GPU ", ordinal(), " (", name(),
                              "): ", cuda::Describe(e), " [PF_SYNC_KERNELS=1]");
    }
  }
  return Status::OK();
}

namespace {
struct HostCallback {
  GpuContext* ctx;
  std::function<void(Status)> fn;
};
// cudaStreamAddCallback and not cudaLaunchHostFunc: after a device error the stream's host
// functions are never called, so whoever waits for one (a _Recv, a fetch) would wait forever;
// a stream callback always runs, once, with the stream's error. CUDA calls are not allowed
// here: the callback thread turns the error into a Status.
void CUDART_CB RunHostCallback(cudaStream_t, cudaError_t status, void* arg) {
  std::unique_ptr<HostCallback> cb(static_cast<HostCallback*>(arg));
  const int ordinal = cb->ctx->ordinal;
  cb->ctx->Enqueue([fn = std::move(cb->fn), status, ordinal] {
    fn(cuda::CheckCall(status, "work on the stream before a host callback", ordinal, __FILE__,
                       __LINE__));
  });
}
}  // namespace

Status GpuDevice::ThenExecute(GpuStream stream, std::function<void(Status)> fn) {
  auto* cb = new HostCallback{impl_->ctx, std::move(fn)};
  cudaError_t e = cudaStreamAddCallback(stream, RunHostCallback, cb, 0);
  if (e != cudaSuccess) {
    delete cb;
    return cuda::CheckCall(e, "cudaStreamAddCallback", ordinal(), __FILE__, __LINE__);
  }
  return Status::OK();
}

bool GpuDevice::OnCallbackThread() { return t_on_callback_thread; }

Status GpuDevice::StreamWaitStream(GpuStream waiter, const GpuDevice& signaler_gpu,
                                   GpuStream signaler) const {
  if (waiter == signaler) return Status::OK();
  // An event is recorded on a stream of the GPU it was created on; a stream of any GPU may wait
  // for it.
  const int dev = signaler_gpu.ordinal();
  PF_GPU_RETURN_IF_ERROR(dev, cudaSetDevice(dev));
  cudaEvent_t ev;
  PF_GPU_RETURN_IF_ERROR(dev, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  Status s =
      cuda::CheckCall(cudaEventRecord(ev, signaler), "cudaEventRecord", dev, __FILE__, __LINE__);
  if (s.ok()) s = Activate();
  if (s.ok())
    s = cuda::CheckCall(cudaStreamWaitEvent(waiter, ev, 0), "cudaStreamWaitEvent", ordinal(),
                        __FILE__, __LINE__);
  cudaEventDestroy(ev);  // the wait keeps what it needs
  return s;
}

bool GpuDevice::CanAccessPeer(const GpuDevice& other) const {
  if (other.ordinal() == ordinal()) return true;
  std::lock_guard<std::mutex> lock(g_peer_mu);
  return g_peers.count({ordinal(), other.ordinal()}) > 0;
}

namespace {

GpuProbe CudaProbe() {
  int n = 0, driver = 0, runtime = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaGetLastError();  // clear the error so later calls do not report it again
  const CudaCountResult r = e == cudaSuccess         ? CudaCountResult::kOk
                            : e == cudaErrorNoDevice ? CudaCountResult::kNoDevice
                                                     : CudaCountResult::kOtherError;
  return InterpretGpuProbe(r, n, cuda::Describe(e), driver, runtime);
}

StatusOr<std::vector<std::unique_ptr<Device>>> CreateCudaDevices(
    const std::vector<GpuDevicePlan>& plan, const GpuOptions& options) {
  std::vector<std::unique_ptr<Device>> out;
  std::set<int> physical;
  for (const GpuDevicePlan& p : plan) {
    PF_ASSIGN_OR_RETURN(std::unique_ptr<GpuDevice> d, GpuDevice::Create(p, options));
    physical.insert(p.physical_id);
    out.push_back(std::move(d));
  }
  // Peer access between every pair that supports it; the others are staged through pinned
  // host memory (gpu_copy.cc logs that once).
  for (int a : physical) {
    for (int b : physical) {
      if (a == b) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can) continue;
      cudaSetDevice(a);
      cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      if (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled) {
        std::lock_guard<std::mutex> lock(g_peer_mu);
        g_peers.insert({a, b});
      }
      cudaGetLastError();
    }
  }
  return out;
}

// The backend announces itself to the core when this library loads (dlopen from
// devices/gpu_backend.cc, or a program that links it).
[[maybe_unused]] const bool devices_registered = [] {
  GpuBackend b;
  b.probe = CudaProbe;
  b.create_devices = CreateCudaDevices;
  RegisterGpuBackend(b);
  return true;
}();

}  // namespace

}  // namespace pf
