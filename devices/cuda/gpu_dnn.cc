#include "placeflow/devices/cuda/gpu_dnn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "placeflow/core/logging.h"
#include "placeflow/devices/cuda/gpu_dnn_graph.h"
#include "placeflow/devices/cuda/gpu_dnn_util.h"

namespace pf {

using dnn_util::CallSite;
using dnn_util::CudnnAlgoName;
using dnn_util::kMaxWorkspace;
using dnn_util::Scratch;

bool CudnnAutotuneEnabled() {
  const char* v = std::getenv("PF_CUDNN_AUTOTUNE");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

namespace {

using Dir = GpuConvDirection;

// PF_GPU_CONV_PATH, read once (GpuConvCandidates checks it).
std::string_view ForcedConvPath() {
  static const std::string forced = [] {
    const char* v = std::getenv("PF_GPU_CONV_PATH");
    return std::string(v != nullptr ? v : "");
  }();
  return forced;
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

// What one (GPU, TF32 setting, direction, descriptor) runs: the path GpuConvCandidates' walk
// settled on and, for the cuDNN paths, the algorithm. Per GPU and TF32 setting because the
// handle's math rules differ between the two.
struct ConvChoice {
  GpuConvPath path = GpuConvPath::kDirect;
  AlgoChoice algo;
};
using ConvKey = std::tuple<int, bool, int, GpuConvDesc>;
std::mutex g_conv_mu;
std::map<ConvKey, ConvChoice>& ConvCache() {
  static auto* cache = new std::map<ConvKey, ConvChoice>();
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

// `d` in the layout cuDNN is called with.
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

// Device pointers of one cuDNN call, in cuDNN's layouts (the autotuning run writes `out`, which
// the real call overwrites).
struct CudnnPtrs {
  const void* x = nullptr;  // input (forward, backward filter)
  const void* w = nullptr;  // cuDNN-layout filter (forward, backward data)
  const void* y = nullptr;  // output gradient (backward data, backward filter)
  void* out = nullptr;      // y, dx or the cuDNN-layout dw
};

// One algorithm search: cuDNN's list for a direction (measured in `tune_ws` when autotuning),
// then Pick within `budget`; a found algorithm's math is set on the descriptor and its workspace
// size asked for.
struct AlgoSearch {
  const CallSite& site;
  cudnnHandle_t h;
  ConvSetup& s;
  const CudnnPtrs& ptr;
  bool tune;
  const Scratch& tune_ws;
  size_t budget;
  AlgoChoice c;
  bool found;
  int n;  // how many algorithms cuDNN listed

  Status Forward();
  Status BackwardData();
  Status BackwardFilter();
};

Status AlgoSearch::Forward() {
  int max_count = 0;
  auto xd = s.x.get(), yd = s.y.get();
  auto wd = s.w.get();
  auto cd = s.conv.get();
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
    PF_DNN_CALL(
        site, cudnnGetConvolutionForwardWorkspaceSize(
                  h, xd, wd, cd, yd, static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), &c.workspace));
  }
  return Status::OK();
}

Status AlgoSearch::BackwardData() {
  int max_count = 0;
  auto xd = s.x.get(), yd = s.y.get();
  auto wd = s.w.get();
  auto cd = s.conv.get();
  PF_DNN_CALL(site, cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(std::max(max_count, 1));
  if (tune) {
    PF_DNN_CALL(site, cudnnFindConvolutionBackwardDataAlgorithmEx(
                          h, wd, ptr.w, yd, ptr.y, cd, xd, ptr.out, max_count, &n, perfs.data(),
                          tune_ws.get(), tune_ws.size()));
  } else {
    PF_DNN_CALL(site, cudnnGetConvolutionBackwardDataAlgorithm_v7(h, wd, yd, cd, xd, max_count, &n,
                                                                  perfs.data()));
  }
  found = Pick(perfs, n, budget, s, &c);
  if (found) {
    PF_DNN_CALL(site, cudnnSetConvolutionMathType(cd, c.math));
    PF_DNN_CALL(site, cudnnGetConvolutionBackwardDataWorkspaceSize(
                          h, wd, yd, cd, xd, static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                          &c.workspace));
  }
  return Status::OK();
}

Status AlgoSearch::BackwardFilter() {
  int max_count = 0;
  auto xd = s.x.get(), yd = s.y.get();
  auto wd = s.w.get();
  auto cd = s.conv.get();
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
  return Status::OK();
}

// The algorithm for `s` (uncached: the caller caches it with the path). Unimplemented when none
// runs within the workspace budget, so the next path is tried.
StatusOr<AlgoChoice> ChooseAlgo(const CallSite& site, GpuDevice* gpu, cudnnHandle_t h, Dir dir,
                                ConvSetup& s, const CudnnPtrs& ptr) {
  const bool tune = CudnnAutotuneEnabled();
  size_t budget = std::min<size_t>(kMaxWorkspace, gpu->bfc()->FreeBytes());
  Scratch tune_ws;
  if (tune) {
    while (budget >= (size_t{1} << 20) && !tune_ws.TryAllocate(gpu, budget)) budget /= 2;
    if (tune_ws.get() == nullptr) budget = 0;
  }
  AlgoSearch q{site, h, s, ptr, tune, tune_ws, budget, AlgoChoice(), false, 0};
  if (dir == Dir::kForward) {
    PF_RETURN_IF_ERROR(q.Forward());
  } else if (dir == Dir::kBackwardData) {
    PF_RETURN_IF_ERROR(q.BackwardData());
  } else {
    PF_RETURN_IF_ERROR(q.BackwardFilter());
  }
  if (!q.found && budget < kMaxWorkspace) {
    // Memory is short now, not cuDNN: fail this call (the next one chooses again) rather than
    // fall through to a slower path that would then be cached for good.
    return errors::ResourceExhausted("cuDNN has no convolution ", GpuConvDirectionName(dir),
                                     " algorithm (of ", q.n, " tried) fitting the ", budget,
                                     " bytes free for a workspace, for ", site.what());
  }
  if (!q.found) {
    return errors::Unimplemented("cuDNN has no convolution ", GpuConvDirectionName(dir),
                                 " algorithm (of ", q.n, " tried) fitting a ", budget,
                                 "-byte workspace for ", site.what());
  }
  return q.c;
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

// The HWIO filter in cuDNN's layout, in scratch.
Status FilterToCudnn(GpuDevice* gpu, const GpuConvDesc& d, const GpuConvPlan& p, const void* filter,
                     Scratch* out) {
  PF_RETURN_IF_ERROR(out->Allocate(gpu, p.filter_elements * DTypeSize(d.dtype), "filter"));
  dnn::LaunchFilterTransform(dnn_util::LaunchType(d.dtype), /*to_cudnn=*/true, p.filter_krsc,
                             filter, out->get(), p.r, p.s, p.c, p.k, gpu->compute_stream());
  return Status::OK();
}

// Device pointers of one call as the caller passes them: d.layout tensors, HWIO filters.
struct ConvArgs {
  const void* x = nullptr;       // forward, backward filter
  const void* filter = nullptr;  // forward, backward data
  const void* dy = nullptr;      // backward data, backward filter
  void* out = nullptr;           // y, dx or dfilter
};

dnn::Dims4 InputDims(const GpuConvDesc& d) { return {d.batch, d.in_c, d.in_h, d.in_w}; }
dnn::Dims4 OutputDims(const GpuConvDesc& d) { return {d.batch, d.out_c, d.out_h, d.out_w}; }

// How one call's tensors (the caller's layout, `d`) and cuDNN's (`dc`, padded) differ.
struct CallLayout {
  CallLayout(GpuDevice* gpu, const GpuConvDesc& d, const GpuConvDesc& dc, const GpuConvPlan& p)
      : t(dnn_util::LaunchType(d.dtype)),
        esize(DTypeSize(d.dtype)),
        user_nhwc(dnn_util::IsNhwc(d.layout)),
        dnn_nhwc(dnn_util::IsNhwc(dc.layout)),
        relayout(d.layout != dc.layout),
        stream(gpu->compute_stream()),
        xdims(InputDims(d)),
        ydims(OutputDims(d)),
        pxdims(dnn_util::Dims(p.x)) {}
  dnn::DType t;
  size_t esize;
  bool user_nhwc, dnn_nhwc, relayout;
  CUstream_st* stream;
  dnn::Dims4 xdims, ydims, pxdims;  // input, output, padded input
};

// The operands cuDNN reads, in its layout (`dc`): the caller's tensors where the layouts (and,
// for x, the padding) agree, else copies in xbuf / dybuf; the filter always transformed, in wbuf.
Status StageInputs(GpuDevice* gpu, Dir dir, const GpuConvDesc& d, const GpuConvDesc& dc,
                   const GpuConvPlan& p, const ConvArgs& a, const CallLayout& l, Scratch* xbuf,
                   Scratch* wbuf, Scratch* dybuf, CudnnPtrs* ptr) {
  if (dir != Dir::kBackwardData) {  // x, padded and in cuDNN's layout
    ptr->x = a.x;
    if (l.relayout || p.explicit_pad) {
      PF_RETURN_IF_ERROR(xbuf->Allocate(gpu, p.padded_x_elements * l.esize, "convolution input"));
      dnn::LaunchRelayout4(l.t, l.user_nhwc, l.xdims, l.dnn_nhwc, l.pxdims, -p.rows.extra_before,
                           -p.cols.extra_before, a.x, xbuf->get(), l.stream);
      ptr->x = xbuf->get();
    }
  }
  if (dir != Dir::kBackwardFilter) {
    PF_RETURN_IF_ERROR(FilterToCudnn(gpu, dc, p, a.filter, wbuf));
    ptr->w = wbuf->get();
  }
  if (dir != Dir::kForward) {
    ptr->y = a.dy;
    if (l.relayout) {
      PF_RETURN_IF_ERROR(
          dybuf->Allocate(gpu, static_cast<size_t>(d.batch * d.out_c * d.out_h * d.out_w) * l.esize,
                          "output grad"));
      dnn::LaunchRelayout4(l.t, l.user_nhwc, l.ydims, l.dnn_nhwc, l.ydims, 0, 0, a.dy, dybuf->get(),
                           l.stream);
      ptr->y = dybuf->get();
    }
  }
  return Status::OK();
}

// What ran: a legacy algorithm or a graph-API engine (dnn_graph), by number.
struct Ran {
  bool graph = false;
  int id = -1;
};

// The legacy call for `dir` with the cached algorithm (`known`) or a newly chosen one.
Status CallLegacy(const CallSite& site, GpuDevice* gpu, cudnnHandle_t h, Dir dir,
                  const GpuConvDesc& dc, const CudnnPtrs& ptr, const AlgoChoice* known,
                  AlgoChoice* chosen, int* algo) {
  ConvSetup s;
  PF_RETURN_IF_ERROR(Setup(site, gpu, dc, &s));
  if (known != nullptr && known->algo >= 0) {
    *chosen = *known;
  } else {
    PF_ASSIGN_OR_RETURN(*chosen, ChooseAlgo(site, gpu, h, dir, s, ptr));
  }
  Scratch ws;
  PF_RETURN_IF_ERROR(Workspace(site, gpu, s, *chosen, &ws, algo));
  const void* one = dnn_util::One(dc.dtype);
  const void* zero = dnn_util::Zero(dc.dtype);
  if (dir == Dir::kForward) {
    PF_DNN_CALL(site,
                cudnnConvolutionForward(h, one, s.x.get(), ptr.x, s.w.get(), ptr.w, s.conv.get(),
                                        static_cast<cudnnConvolutionFwdAlgo_t>(*algo), ws.get(),
                                        ws.size(), zero, s.y.get(), ptr.out));
  } else if (dir == Dir::kBackwardData) {
    PF_DNN_CALL(
        site, cudnnConvolutionBackwardData(h, one, s.w.get(), ptr.w, s.y.get(), ptr.y, s.conv.get(),
                                           static_cast<cudnnConvolutionBwdDataAlgo_t>(*algo),
                                           ws.get(), ws.size(), zero, s.x.get(), ptr.out));
  } else {
    PF_DNN_CALL(site, cudnnConvolutionBackwardFilter(
                          h, one, s.x.get(), ptr.x, s.y.get(), ptr.y, s.conv.get(),
                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(*algo), ws.get(), ws.size(),
                          zero, s.w.get(), ptr.out));
  }
  return Status::OK();
}

// The cuDNN call: a cached graph-API plan where PF_CUDNN_CONV_API allows and one exists, else
// the legacy call. A graph run caches algo -1 in *chosen, so later calls try the graph first.
Status CallCudnn(const CallSite& site, GpuDevice* gpu, cudnnHandle_t h, Dir dir,
                 const GpuConvDesc& dc, const GpuConvPlan& p, const CudnnPtrs& ptr,
                 const AlgoChoice* known, AlgoChoice* chosen, Ran* ran) {
  if (dnn_graph::ConvEnabled()) {
    const dnn_graph::ConvCall call =
        dnn_graph::MakeConvCall(dir, dc, p, dc.dtype == DT_FLOAT && !gpu->allow_tf32());
    void* x = const_cast<void*>(dir == Dir::kBackwardData ? ptr.out : ptr.x);
    void* w = const_cast<void*>(dir == Dir::kBackwardFilter ? ptr.out : ptr.w);
    void* y = const_cast<void*>(dir == Dir::kForward ? ptr.out : ptr.y);
    Status g = dnn_graph::RunConv(site, gpu, h, call, x, w, y, &ran->id);
    if (g.ok()) {
      ran->graph = true;
      *chosen = AlgoChoice();
      chosen->algo = -1;
      return g;
    }
    if (g.code() != Code::kUnimplemented) return g;
  }
  ran->graph = false;
  return CallLegacy(site, gpu, h, dir, dc, ptr, known, chosen, &ran->id);
}

// One cuDNN path (kCudnn or kCudnnNchw) for `d`: the caller's tensors are copied into cuDNN's
// layout where it differs (fused with the asymmetric padding's explicit part) and the result
// copied back. `known`: the cached algorithm; null: choose one (into *chosen). *ran: what ran
// (the no-workspace algorithm when the workspace could not be had).
Status RunCudnn(GpuDevice* gpu, Dir dir, const GpuConvDesc& d, GpuConvPath path, const ConvArgs& a,
                const AlgoChoice* known, AlgoChoice* chosen, Ran* ran) {
  GpuConvDesc dc = d;
  dc.layout = GpuConvPathLayout(d, path);
  CallSite site{gpu->ordinal(), [&d, &dc, dir] {
                  return fmt::format("convolution {} (cuDNN in {}) {}", GpuConvDirectionName(dir),
                                     dnn_util::IsNhwc(dc.layout) ? "NHWC" : "NCHW", d.ToString());
                }};
  site.unsupported_is_unimplemented = true;
  PF_ASSIGN_OR_RETURN(const GpuConvPlan p, PlanGpuConv(dc));
  PF_ASSIGN_OR_RETURN(dnn_util::DnnLock lock, dnn_util::LockDnn(gpu, site));
  const CallLayout l(gpu, d, dc, p);
  Scratch wbuf, xbuf, dybuf, outbuf;
  CudnnPtrs ptr;
  PF_RETURN_IF_ERROR(StageInputs(gpu, dir, d, dc, p, a, l, &xbuf, &wbuf, &dybuf, &ptr));
  // Where cuDNN writes: the caller's buffer when the layouts and padding agree.
  ptr.out = a.out;
  if (dir == Dir::kForward && l.relayout) {
    PF_RETURN_IF_ERROR(outbuf.Allocate(
        gpu, static_cast<size_t>(d.batch * d.out_c * d.out_h * d.out_w) * l.esize, "output"));
    ptr.out = outbuf.get();
  } else if (dir == Dir::kBackwardData && (l.relayout || p.explicit_pad)) {
    // cuDNN computes the gradient of the padded input; the padding's rows and columns are
    // cropped away on the way back.
    PF_RETURN_IF_ERROR(outbuf.Allocate(gpu, p.padded_x_elements * l.esize, "input gradient"));
    ptr.out = outbuf.get();
  } else if (dir == Dir::kBackwardFilter) {
    PF_RETURN_IF_ERROR(outbuf.Allocate(gpu, p.filter_elements * l.esize, "filter gradient"));
    ptr.out = outbuf.get();
  }
  PF_RETURN_IF_ERROR(CallCudnn(site, gpu, lock.handle, dir, dc, p, ptr, known, chosen, ran));
  if (dir == Dir::kForward && l.relayout) {
    dnn::LaunchRelayout4(l.t, l.dnn_nhwc, l.ydims, l.user_nhwc, l.ydims, 0, 0, ptr.out, a.out,
                         l.stream);
  } else if (dir == Dir::kBackwardData && ptr.out != a.out) {
    dnn::LaunchRelayout4(l.t, l.dnn_nhwc, l.pxdims, l.user_nhwc, l.xdims, p.rows.extra_before,
                         p.cols.extra_before, ptr.out, a.out, l.stream);
  } else if (dir == Dir::kBackwardFilter) {
    dnn::LaunchFilterTransform(l.t, /*to_cudnn=*/false, p.filter_krsc, ptr.out, a.out, p.r, p.s,
                               p.c, p.k, l.stream);
  }
  return Status::OK();
}

Status RunDirect(GpuDevice* gpu, Dir dir, const GpuConvDesc& d, const ConvArgs& a) {
  PF_RETURN_IF_ERROR(gpu->Activate());
  const dnn::ConvGeom g{.n = d.batch,
                        .in_c = d.in_c,
                        .in_h = d.in_h,
                        .in_w = d.in_w,
                        .out_c = d.out_c,
                        .out_h = d.out_h,
                        .out_w = d.out_w,
                        .filter_h = d.filter_h,
                        .filter_w = d.filter_w,
                        .groups = d.groups,
                        .stride_h = d.stride_h,
                        .stride_w = d.stride_w,
                        .dilation_h = d.dilation_h,
                        .dilation_w = d.dilation_w,
                        .pad_top = d.pad_top,
                        .pad_left = d.pad_left};
  const dnn::DType t = dnn_util::LaunchType(d.dtype);
  const bool nhwc = dnn_util::IsNhwc(d.layout);
  CUstream_st* stream = gpu->compute_stream();
  switch (dir) {
    case Dir::kForward:
      dnn::LaunchDirectConvForward(t, nhwc, g, a.x, a.filter, a.out, stream);
      break;
    case Dir::kBackwardData:
      dnn::LaunchDirectConvBackwardData(t, nhwc, g, a.filter, a.dy, a.out, stream);
      break;
    case Dir::kBackwardFilter:
      dnn::LaunchDirectConvBackwardFilter(t, nhwc, g, a.x, a.dy, a.out, stream);
      break;
  }
  // A launch that failed must not be cached as the path that works.
  PF_GPU_RETURN_IF_ERROR(gpu->ordinal(), cudaGetLastError());
  return Status::OK();
}

// Runs the cached choice for (GPU, TF32, dir, d), or walks GpuConvCandidates(d) the first time
// (each candidate runs for real: the first that succeeds has produced the output) and caches
// what worked. A path that fails after it was chosen is the call's error.
Status RunConv(GpuDevice* gpu, Dir dir, const GpuConvDesc& d, const ConvArgs& a,
               std::string* trace_label) {
  const ConvKey key{gpu->ordinal(), gpu->allow_tf32(), static_cast<int>(dir), d};
  std::optional<ConvChoice> cached;
  {
    std::lock_guard<std::mutex> l(g_conv_mu);
    auto it = ConvCache().find(key);
    if (it != ConvCache().end()) cached = it->second;
  }
  ConvChoice c;
  Ran ran;
  if (cached) {
    c = *cached;
    if (c.path == GpuConvPath::kDirect) {
      PF_RETURN_IF_ERROR(RunDirect(gpu, dir, d, a));
    } else {
      AlgoChoice unused;
      PF_RETURN_IF_ERROR(RunCudnn(gpu, dir, d, c.path, a, &c.algo, &unused, &ran));
    }
  } else {
    auto attempt = [&](GpuConvPath path) -> Status {
      if (path == GpuConvPath::kDirect) return RunDirect(gpu, dir, d, a);
      return RunCudnn(gpu, dir, d, path, a, nullptr, &c.algo, &ran);
    };
    PF_ASSIGN_OR_RETURN(std::vector<GpuConvPath> candidates,
                        GpuConvCandidates(d, ForcedConvPath()));
    PF_ASSIGN_OR_RETURN(GpuConvPathChoice choice, ChooseGpuConvPath(candidates, d, attempt));
    c.path = choice.path;
    if (!choice.skipped.empty()) {
      // Once per shape: the fallback is a performance note, never an error.
      const std::string how = GpuConvTraceLabel(dir, d, c.path, "");
      if (c.path == GpuConvPath::kDirect) {
        PF_LOG_WARN("GPU {}: {} for {} (slow; cuDNN cannot run it: {})", gpu->ordinal(), how,
                    d.ToString(), choice.skipped);
      } else {
        PF_LOG_INFO("GPU {}: {} for {} ({})", gpu->ordinal(), how, d.ToString(), choice.skipped);
      }
    }
    std::lock_guard<std::mutex> l(g_conv_mu);
    ConvCache()[key] = c;
  }
  if (trace_label != nullptr) {
    *trace_label = GpuConvTraceLabel(dir, d, c.path,
                                     c.path == GpuConvPath::kDirect ? ""
                                     : ran.graph ? fmt::format("graph engine {}", ran.id)
                                                 : CudnnAlgoName(dir, ran.id));
  }
  return Status::OK();
}

}  // namespace

Status GpuConvForward(GpuDevice* gpu, const GpuConvDesc& d, const void* x, const void* filter,
                      void* y, std::string* trace_label) {
  PF_RETURN_IF_ERROR(ValidateGpuConv(d));
  if (d.batch == 0 || d.out_h == 0 || d.out_w == 0) return Status::OK();  // y is empty
  return RunConv(gpu, Dir::kForward, d, {x, filter, nullptr, y}, trace_label);
}

Status GpuConvBackwardData(GpuDevice* gpu, const GpuConvDesc& d, const void* filter, const void* dy,
                           void* dx, std::string* trace_label) {
  PF_RETURN_IF_ERROR(ValidateGpuConv(d));
  if (d.batch == 0) return Status::OK();  // dx is empty
  if (d.out_h == 0 || d.out_w == 0) {     // no output position: the input gradient is zero
    PF_RETURN_IF_ERROR(gpu->Activate());
    const size_t bytes =
        static_cast<size_t>(d.batch * d.in_h * d.in_w * d.in_c) * DTypeSize(d.dtype);
    PF_GPU_RETURN_IF_ERROR(gpu->ordinal(), cudaMemsetAsync(dx, 0, bytes, gpu->compute_stream()));
    return Status::OK();
  }
  return RunConv(gpu, Dir::kBackwardData, d, {nullptr, filter, dy, dx}, trace_label);
}

Status GpuConvBackwardFilter(GpuDevice* gpu, const GpuConvDesc& d, const void* x, const void* dy,
                             void* dfilter, std::string* trace_label) {
  PF_RETURN_IF_ERROR(ValidateGpuConv(d));
  if (d.batch == 0 || d.out_h == 0 || d.out_w == 0) {  // nothing to sum: the gradient is zero
    PF_RETURN_IF_ERROR(gpu->Activate());
    const size_t bytes =
        static_cast<size_t>(d.filter_h * d.filter_w * (d.in_c / d.groups) * d.out_c) *
        DTypeSize(d.dtype);
    PF_GPU_RETURN_IF_ERROR(gpu->ordinal(),
                           cudaMemsetAsync(dfilter, 0, bytes, gpu->compute_stream()));
    return Status::OK();
  }
  return RunConv(gpu, Dir::kBackwardFilter, d, {x, nullptr, dy, dfilter}, trace_label);
}

}  // namespace pf
