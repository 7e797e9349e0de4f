#include "placeflow/devices/cuda/gpu_dnn.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "placeflow/devices/cuda/gpu_dnn_util.h"

namespace pf {
namespace dnn_util {

Status Scratch::Allocate(GpuDevice* gpu, size_t bytes, const char* what) {
  if (TryAllocate(gpu, bytes)) return Status::OK();
  Allocator* a = gpu->GetAllocator();
  return errors::ResourceExhausted("OOM when allocating ", bytes, " bytes of cuDNN scratch (", what,
                                   ") by allocator ", a->Name(), ": ", a->DescribeFailure(bytes));
}

bool Scratch::TryAllocate(GpuDevice* gpu, size_t bytes) {
  Release();
  if (bytes == 0) return true;
  allocator_ = gpu->GetAllocator();
  ptr_ = allocator_->Allocate(bytes);
  bytes_ = ptr_ != nullptr ? bytes : 0;
  return ptr_ != nullptr;
}

void Scratch::Release() {
  if (ptr_ != nullptr) allocator_->Free(ptr_, bytes_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Status SetTensor(const CallSite& site, const TensorDesc& desc, DType dtype, const DnnTensor4& t) {
  PF_DNN_CALL(site, cudnnSetTensor4dDescriptorEx(desc.get(), CudnnType(dtype), t.dims[0], t.dims[1],
                                                 t.dims[2], t.dims[3], t.strides[0], t.strides[1],
                                                 t.strides[2], t.strides[3]));
  return Status::OK();
}

StatusOr<DnnLock> LockDnn(GpuDevice* gpu, const CallSite& site) {
  PF_RETURN_IF_ERROR(gpu->Activate());
  DnnLock l;
  l.lock = gpu->LockDnn();
  l.handle = gpu->dnn();
  PF_DNN_CALL(site, cudnnSetStream(l.handle, gpu->compute_stream()));
  return l;
}

}  // namespace dnn_util

using dnn_util::CallSite;
using dnn_util::Scratch;

bool CudnnAutotuneEnabled() {
  const char* v = std::getenv("PF_CUDNN_AUTOTUNE");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

namespace {

// Workspaces beyond this are not considered (TensorFlow's default scratch limit).
constexpr size_t kMaxWorkspace = size_t{4} << 30;

enum class ConvKind : int { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };
const char* KindName(ConvKind k) {
  return k == ConvKind::kForward        ? "forward"
         : k == ConvKind::kBackwardData ? "backward data"
                                        : "backward filter";
}

struct AlgoChoice {
  int algo = 0;
  size_t workspace = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  // The best algorithm needing no workspace, run when the workspace cannot be allocated.
  bool has_fallback = false;
  int fallback_algo = 0;
  cudnnMathType_t fallback_math = CUDNN_DEFAULT_MATH;
};

// Per GPU (ordinal) and TF32 setting: the handle's math rules differ between the two.
using AlgoKey = std::tuple<int, bool, int, GpuConvDesc>;
std::mutex g_algo_mu;
std::map<AlgoKey, AlgoChoice>& AlgoCache() {
  static auto* cache = new std::map<AlgoKey, AlgoChoice>();
  return *cache;
}

struct ConvSetup {
  GpuConvPlan plan;
  dnn_util::TensorDesc x, y;
  dnn_util::FilterDesc w;
  dnn_util::ConvDesc conv;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  bool fma_only = false;  // float without TF32: only algorithms running in plain FP32
};

Status Setup(const CallSite& site, GpuDevice* gpu, const GpuConvDesc& d, ConvSetup* s) {
  PF_ASSIGN_OR_RETURN(s->plan, PlanGpuConv(d));
  const GpuConvPlan& p = s->plan;
  PF_RETURN_IF_ERROR(s->x.Init(site));
  PF_RETURN_IF_ERROR(s->y.Init(site));
  PF_RETURN_IF_ERROR(s->w.Init(site));
  PF_RETURN_IF_ERROR(s->conv.Init(site));
  PF_RETURN_IF_ERROR(dnn_util::SetTensor(site, s->x, d.dtype, p.x));
  PF_RETURN_IF_ERROR(dnn_util::SetTensor(site, s->y, d.dtype, p.y));
  PF_DNN_CALL(site, cudnnSetFilter4dDescriptor(
                        s->w.get(), dnn_util::CudnnType(d.dtype),
                        p.filter_krsc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, p.k, p.c, p.r, p.s));
  PF_DNN_CALL(
      site, cudnnSetConvolution2dDescriptor(s->conv.get(), p.rows.common, p.cols.common, d.stride_h,
                                            d.stride_w, d.dilation_h, d.dilation_w,
                                            CUDNN_CROSS_CORRELATION, dnn_util::CudnnType(d.dtype)));
  PF_DNN_CALL(site, cudnnSetConvolutionGroupCount(s->conv.get(), d.groups));
  // CUDNN_DEFAULT_MATH lets float convolutions use TF32 tensor cores on Ampere and later, so
  // without allow_tf32 float asks for FMA math (plain FP32, as cuBLAS's pedantic mode).
  s->fma_only = d.dtype == DT_FLOAT && !gpu->allow_tf32();
  s->math = s->fma_only ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  PF_DNN_CALL(site, cudnnSetConvolutionMathType(s->conv.get(), s->math));
  return Status::OK();
}

// Picks from perf results in cuDNN's order (fastest first): the first that ran, fits `budget`
// and has the wanted math, and the first needing no workspace.
template <typename Perf>
bool Pick(const std::vector<Perf>& perfs, int n, size_t budget, const ConvSetup& s,
          AlgoChoice* out) {
  bool found = false;
  for (int strict = 1; strict >= 0 && !found; --strict) {
    for (int i = 0; i < n; ++i) {
      const Perf& p = perfs[i];
      if (p.status != CUDNN_STATUS_SUCCESS) continue;
      if (strict && s.fma_only && p.mathType != CUDNN_FMA_MATH) continue;
      // Without TF32 the descriptor keeps FMA math whatever the entry says.
      const cudnnMathType_t math = s.fma_only ? CUDNN_FMA_MATH : p.mathType;
      if (!found && p.memory <= budget) {
        out->algo = static_cast<int>(p.algo);
        out->workspace = p.memory;
        out->math = math;
        found = true;
      }
      if (!out->has_fallback && p.memory == 0) {
        out->has_fallback = true;
        out->fallback_algo = static_cast<int>(p.algo);
        out->fallback_math = math;
      }
    }
  }
  return found;
}

// Device pointers for the autotuning run (it writes `out`, which the real call overwrites).
struct ConvPtrs {
  const void* x = nullptr;  // input (forward, backward filter)
  const void* w = nullptr;  // cuDNN-layout filter (forward, backward data)
  const void* y = nullptr;  // output or its gradient
  void* out = nullptr;      // y, dx or the cuDNN-layout dw
};

StatusOr<AlgoChoice> ChooseAlgo(const CallSite& site, GpuDevice* gpu, cudnnHandle_t h,
                                ConvKind kind, const GpuConvDesc& d, ConvSetup& s,
                                const ConvPtrs& ptr) {
  const AlgoKey key{gpu->ordinal(), gpu->allow_tf32(), static_cast<int>(kind), d};
  {
    std::lock_guard<std::mutex> l(g_algo_mu);
    auto it = AlgoCache().find(key);
    if (it != AlgoCache().end()) return it->second;
  }
  const bool tune = CudnnAutotuneEnabled();
  size_t budget = std::min<size_t>(kMaxWorkspace, gpu->bfc()->FreeBytes());
  Scratch tune_ws;
  if (tune) {
    while (budget >= (size_t{1} << 20) && !tune_ws.TryAllocate(gpu, budget)) budget /= 2;
    if (tune_ws.get() == nullptr) budget = 0;
  }
  AlgoChoice c;
  bool found = false;
  int max_count = 0, n = 0;
  auto xd = s.x.get(), yd = s.y.get();
  auto wd = s.w.get();
  auto cd = s.conv.get();
  if (kind == ConvKind::kForward) {
    PF_DNN_CALL(site, cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(std::max(max_count, 1));
    if (tune) {
      PF_DNN_CALL(site, cudnnFindConvolutionForwardAlgorithmEx(h, xd, ptr.x, wd, ptr.w, cd, yd,
                                                               ptr.out, max_count, &n, perfs.data(),
                                                               tune_ws.get(), tune_ws.size()));
    } else {
      PF_DNN_CALL(site, cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, max_count, &n,
                                                               perfs.data()));
    }
    found = Pick(perfs, n, budget, s, &c);
    if (found) {
      PF_DNN_CALL(site, cudnnSetConvolutionMathType(cd, c.math));
      PF_DNN_CALL(site, cudnnGetConvolutionForwardWorkspaceSize(
                            h, xd, wd, cd, yd, static_cast<cudnnConvolutionFwdAlgo_t>(c.algo),
                            &c.workspace));
    }
  } else if (kind == ConvKind::kBackwardData) {
    PF_DNN_CALL(site, cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(std::max(max_count, 1));
    if (tune) {
      PF_DNN_CALL(site, cudnnFindConvolutionBackwardDataAlgorithmEx(
                            h, wd, ptr.w, yd, ptr.y, cd, xd, ptr.out, max_count, &n, perfs.data(),
                            tune_ws.get(), tune_ws.size()));
    } else {
      PF_DNN_CALL(site, cudnnGetConvolutionBackwardDataAlgorithm_v7(h, wd, yd, cd, xd, max_count,
                                                                    &n, perfs.data()));
    }
    found = Pick(perfs, n, budget, s, &c);
    if (found) {
      PF_DNN_CALL(site, cudnnSetConvolutionMathType(cd, c.math));
      PF_DNN_CALL(site, cudnnGetConvolutionBackwardDataWorkspaceSize(
                            h, wd, yd, cd, xd, static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                            &c.workspace));
    }
  } else {
    PF_DNN_CALL(site, cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(std::max(max_count, 1));
    if (tune) {
      PF_DNN_CALL(site, cudnnFindConvolutionBackwardFilterAlgorithmEx(
                            h, xd, ptr.x, yd, ptr.y, cd, wd, ptr.out, max_count, &n, perfs.data(),
                            tune_ws.get(), tune_ws.size()));
    } else {
      PF_DNN_CALL(site, cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, xd, yd, cd, wd, max_count,
                                                                      &n, perfs.data()));
    }
    found = Pick(perfs, n, budget, s, &c);
    if (found) {
      PF_DNN_CALL(site, cudnnSetConvolutionMathType(cd, c.math));
      PF_DNN_CALL(site, cudnnGetConvolutionBackwardFilterWorkspaceSize(
                            h, xd, yd, cd, wd, static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo),
                            &c.workspace));
    }
  }
  if (!found) {
    return errors::Unimplemented("cuDNN has no convolution ", KindName(kind), " algorithm (of ", n,
                                 " tried) fitting a ", budget, "-byte workspace for ", site.what());
  }
  std::lock_guard<std::mutex> l(g_algo_mu);
  AlgoCache()[key] = c;
  return c;
}

// Allocates the chosen algorithm's workspace, or falls back to the no-workspace algorithm, and
// leaves the descriptor's math type matching the algorithm returned.
Status Workspace(const CallSite& site, GpuDevice* gpu, const ConvSetup& s, const AlgoChoice& c,
                 Scratch* ws, int* algo) {
  *algo = c.algo;
  cudnnMathType_t math = c.math;
  if (!ws->TryAllocate(gpu, c.workspace)) {
    if (!c.has_fallback) return ws->Allocate(gpu, c.workspace, "convolution workspace");
    *algo = c.fallback_algo;
    math = c.fallback_math;
  }
  PF_DNN_CALL(site, cudnnSetConvolutionMathType(s.conv.get(), math));
  return Status::OK();
}

CallSite Site(GpuDevice* gpu, const GpuConvDesc& d, const char* what) {
  return CallSite{gpu->ordinal(), [&d, what] { return std::string(what) + " " + d.ToString(); }};
}

// The HWIO filter in cuDNN's layout, in scratch.
Status FilterToCudnn(GpuDevice* gpu, const GpuConvDesc& d, const GpuConvPlan& p, const void* filter,
                     Scratch* out) {
  PF_RETURN_IF_ERROR(out->Allocate(gpu, p.filter_elements * DTypeSize(d.dtype), "filter"));
  dnn::LaunchFilterTransform(dnn_util::LaunchType(d.dtype), /*to_cudnn=*/true, p.filter_krsc,
                             filter, out->get(), p.r, p.s, p.c, p.k, gpu->compute_stream());
  return Status::OK();
}

// The input padded by the asymmetric remainder (zeros), in scratch; or x itself.
StatusOr<const void*> PaddedInput(GpuDevice* gpu, const GpuConvDesc& d, const GpuConvPlan& p,
                                  const void* x, Scratch* out) {
  if (!p.explicit_pad) return x;
  PF_RETURN_IF_ERROR(out->Allocate(gpu, p.padded_x_elements * DTypeSize(d.dtype), "padded input"));
  const dnn::Dims4 src{d.batch, d.in_c, d.in_h, d.in_w};
  dnn::LaunchPad4(dnn_util::LaunchType(d.dtype), d.layout == DnnLayout::kNHWC, src,
                  p.rows.extra_before, p.rows.extra_after, p.cols.extra_before, p.cols.extra_after,
                  0.0, x, out->get(), gpu->compute_stream());
  return static_cast<const void*>(out->get());
}

bool Empty(const GpuConvDesc& d) { return d.batch == 0 || d.out_h == 0 || d.out_w == 0; }

}  // namespace

Status GpuConvForward(GpuDevice* gpu, const GpuConvDesc& d, const void* x, const void* filter,
                      void* y) {
  const CallSite site = Site(gpu, d, "convolution forward");
  PF_RETURN_IF_ERROR(PlanGpuConv(d).status());
  if (Empty(d)) return Status::OK();  // cuDNN refuses zero-sized descriptors
  ConvSetup s;
  PF_RETURN_IF_ERROR(Setup(site, gpu, d, &s));
  PF_ASSIGN_OR_RETURN(dnn_util::DnnLock lock, dnn_util::LockDnn(gpu, site));
  Scratch w, xp, ws;
  PF_RETURN_IF_ERROR(FilterToCudnn(gpu, d, s.plan, filter, &w));
  PF_ASSIGN_OR_RETURN(const void* xin, PaddedInput(gpu, d, s.plan, x, &xp));
  PF_ASSIGN_OR_RETURN(AlgoChoice c, ChooseAlgo(site, gpu, lock.handle, ConvKind::kForward, d, s,
                                               {xin, w.get(), nullptr, y}));
  int algo = 0;
  PF_RETURN_IF_ERROR(Workspace(site, gpu, s, c, &ws, &algo));
  PF_DNN_CALL(site, cudnnConvolutionForward(lock.handle, dnn_util::One(d.dtype), s.x.get(), xin,
                                            s.w.get(), w.get(), s.conv.get(),
                                            static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws.get(),
                                            ws.size(), dnn_util::Zero(d.dtype), s.y.get(), y));
  return Status::OK();
}

Status GpuConvBackwardData(GpuDevice* gpu, const GpuConvDesc& d, const void* filter, const void* dy,
                           void* dx) {
  const CallSite site = Site(gpu, d, "convolution backward data");
  ConvSetup s;
  PF_RETURN_IF_ERROR(Setup(site, gpu, d, &s));
  if (d.batch == 0) return Status::OK();
  const size_t dx_bytes =
      static_cast<size_t>(d.batch * d.in_h * d.in_w * d.in_c) * DTypeSize(d.dtype);
  PF_ASSIGN_OR_RETURN(dnn_util::DnnLock lock, dnn_util::LockDnn(gpu, site));
  if (Empty(d)) {  // no output position: the input gradient is zero
    PF_DNN_CALL(site, cudaMemsetAsync(dx, 0, dx_bytes, gpu->compute_stream()));
    return Status::OK();
  }
  Scratch w, dxp, ws;
  PF_RETURN_IF_ERROR(FilterToCudnn(gpu, d, s.plan, filter, &w));
  // With an asymmetric padding cuDNN computes the gradient of the padded input; the padding's
  // rows and columns are cropped away.
  void* out = dx;
  if (s.plan.explicit_pad) {
    PF_RETURN_IF_ERROR(
        dxp.Allocate(gpu, s.plan.padded_x_elements * DTypeSize(d.dtype), "padded input gradient"));
    out = dxp.get();
  }
  PF_ASSIGN_OR_RETURN(AlgoChoice c, ChooseAlgo(site, gpu, lock.handle, ConvKind::kBackwardData, d,
                                               s, {nullptr, w.get(), dy, out}));
  int algo = 0;
  PF_RETURN_IF_ERROR(Workspace(site, gpu, s, c, &ws, &algo));
  PF_DNN_CALL(site, cudnnConvolutionBackwardData(
                        lock.handle, dnn_util::One(d.dtype), s.w.get(), w.get(), s.y.get(), dy,
                        s.conv.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws.get(),
                        ws.size(), dnn_util::Zero(d.dtype), s.x.get(), out));
  if (s.plan.explicit_pad) {
    dnn::LaunchCrop4(dnn_util::LaunchType(d.dtype), d.layout == DnnLayout::kNHWC,
                     dnn_util::Dims(s.plan.x), {d.batch, d.in_c, d.in_h, d.in_w},
                     s.plan.rows.extra_before, s.plan.cols.extra_before, out, dx,
                     gpu->compute_stream());
  }
  return Status::OK();
}

Status GpuConvBackwardFilter(GpuDevice* gpu, const GpuConvDesc& d, const void* x, const void* dy,
                             void* dfilter) {
  const CallSite site = Site(gpu, d, "convolution backward filter");
  PF_ASSIGN_OR_RETURN(GpuConvPlan plan, PlanGpuConv(d));
  if (Empty(d)) {  // nothing to sum: the filter gradient is zero
    PF_RETURN_IF_ERROR(gpu->Activate());
    PF_DNN_CALL(site, cudaMemsetAsync(dfilter, 0, plan.filter_elements * DTypeSize(d.dtype),
                                      gpu->compute_stream()));
    return Status::OK();
  }
  ConvSetup s;
  PF_RETURN_IF_ERROR(Setup(site, gpu, d, &s));
  PF_ASSIGN_OR_RETURN(dnn_util::DnnLock lock, dnn_util::LockDnn(gpu, site));
  Scratch dw, xp, ws;
  PF_RETURN_IF_ERROR(dw.Allocate(gpu, s.plan.filter_elements * DTypeSize(d.dtype), "filter"));
  PF_ASSIGN_OR_RETURN(const void* xin, PaddedInput(gpu, d, s.plan, x, &xp));
  PF_ASSIGN_OR_RETURN(AlgoChoice c, ChooseAlgo(site, gpu, lock.handle, ConvKind::kBackwardFilter, d,
                                               s, {xin, nullptr, dy, dw.get()}));
  int algo = 0;
  PF_RETURN_IF_ERROR(Workspace(site, gpu, s, c, &ws, &algo));
  PF_DNN_CALL(site, cudnnConvolutionBackwardFilter(
                        lock.handle, dnn_util::One(d.dtype), s.x.get(), xin, s.y.get(), dy,
                        s.conv.get(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws.get(),
                        ws.size(), dnn_util::Zero(d.dtype), s.w.get(), dw.get()));
  dnn::LaunchFilterTransform(dnn_util::LaunchType(d.dtype), /*to_cudnn=*/false, s.plan.filter_krsc,
                             dw.get(), dfilter, s.plan.r, s.plan.s, s.plan.c, s.plan.k,
                             gpu->compute_stream());
  return Status::OK();
}

}  // namespace pf
