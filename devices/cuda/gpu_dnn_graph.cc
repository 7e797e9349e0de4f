#include "placeflow/devices/cuda/gpu_dnn_graph.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "placeflow/core/logging.h"

namespace pf::dnn_graph {
namespace {

using dnn_util::CallSite;
using dnn_util::kMaxWorkspace;

// The byte alignment the plans are built for; a call with a less aligned pointer goes legacy.
constexpr int64_t kAlignment = 16;
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  Desc() = default;
  ~Desc() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  Status Create(const CallSite& site, cudnnBackendDescriptorType_t type) {
    PF_DNN_CALL(site, cudnnBackendCreateDescriptor(type, &d_));
    return Status::OK();
  }
  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnBackendDescriptor_t* address() { return &d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

Status SetAttr(const CallSite& site, const Desc& d, cudnnBackendAttributeName_t name,
               cudnnBackendAttributeType_t type, int64_t count, const void* values) {
  PF_DNN_CALL(site, cudnnBackendSetAttribute(d.get(), name, type, count, values));
  return Status::OK();
}

Status SetDesc(const CallSite& site, const Desc& d, cudnnBackendAttributeName_t name,
               const Desc& value) {
  cudnnBackendDescriptor_t v = value.get();
  return SetAttr(site, d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
}

// A plan and everything it was built from (kept alive with it).
struct Plan {
  std::vector<std::unique_ptr<Desc>> configs;  // declared first: destroyed after the plan
  Desc x, w, y, conv, op, graph, heur, engine, plan;
  int64_t workspace = 0;
  int64_t engine_index = -1;
};

Status MakeTensor(const CallSite& site, Desc* t, int64_t uid, cudnnDataType_t type,
                  const int64_t dims[4], const int64_t strides[4]) {
  PF_RETURN_IF_ERROR(t->Create(site, CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  PF_RETURN_IF_ERROR(
      SetAttr(site, *t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  PF_RETURN_IF_ERROR(SetAttr(site, *t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
  PF_RETURN_IF_ERROR(SetAttr(site, *t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
  PF_RETURN_IF_ERROR(SetAttr(site, *t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  PF_RETURN_IF_ERROR(
      SetAttr(site, *t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kAlignment));
  PF_DNN_CALL(site, cudnnBackendFinalize(t->get()));
  return Status::OK();
}

Status MakeTensor4(const CallSite& site, Desc* t, int64_t uid, cudnnDataType_t type,
                   const DnnTensor4& d) {
  const int64_t dims[4] = {d.dims[0], d.dims[1], d.dims[2], d.dims[3]};
  const int64_t strides[4] = {d.strides[0], d.strides[1], d.strides[2], d.strides[3]};
  return MakeTensor(site, t, uid, type, dims, strides);
}

Status MakeConv(const CallSite& site, const ConvCall& c, cudnnDataType_t type, Desc* conv) {
  PF_RETURN_IF_ERROR(conv->Create(site, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  const int64_t spatial = 2;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t pad[2] = {c.pad_h, c.pad_w};
  const int64_t dilation[2] = {c.dilation_h, c.dilation_w};
  const int64_t stride[2] = {c.stride_h, c.stride_w};
  PF_RETURN_IF_ERROR(
      SetAttr(site, *conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  PF_RETURN_IF_ERROR(SetAttr(site, *conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                             CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  PF_RETURN_IF_ERROR(
      SetAttr(site, *conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial));
  PF_RETURN_IF_ERROR(
      SetAttr(site, *conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
  PF_RETURN_IF_ERROR(
      SetAttr(site, *conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
  PF_RETURN_IF_ERROR(
      SetAttr(site, *conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation));
  PF_RETURN_IF_ERROR(
      SetAttr(site, *conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride));
  PF_DNN_CALL(site, cudnnBackendFinalize(conv->get()));
  return Status::OK();
}

// The convolution operation of `c.dir` over the plan's tensors and descriptor.
Status MakeOp(const CallSite& site, const ConvCall& c, Plan* p) {
  struct Names {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  static const Names kNames[] = {
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
  };
  const Names& n = kNames[static_cast<int>(c.dir)];
  PF_RETURN_IF_ERROR(p->op.Create(site, n.type));
  PF_RETURN_IF_ERROR(SetDesc(site, p->op, n.x, p->x));
  PF_RETURN_IF_ERROR(SetDesc(site, p->op, n.w, p->w));
  PF_RETURN_IF_ERROR(SetDesc(site, p->op, n.y, p->y));
  PF_RETURN_IF_ERROR(SetDesc(site, p->op, n.conv, p->conv));
  if (c.dtype == DT_DOUBLE) {
    const double one = 1.0, zero = 0.0;
    PF_RETURN_IF_ERROR(SetAttr(site, p->op, n.alpha, CUDNN_TYPE_DOUBLE, 1, &one));
    PF_RETURN_IF_ERROR(SetAttr(site, p->op, n.beta, CUDNN_TYPE_DOUBLE, 1, &zero));
  } else {
    const float one = 1.f, zero = 0.f;
    PF_RETURN_IF_ERROR(SetAttr(site, p->op, n.alpha, CUDNN_TYPE_FLOAT, 1, &one));
    PF_RETURN_IF_ERROR(SetAttr(site, p->op, n.beta, CUDNN_TYPE_FLOAT, 1, &zero));
  }
  PF_DNN_CALL(site, cudnnBackendFinalize(p->op.get()));
  return Status::OK();
}

// Whether an engine's numerical notes allow it: without TF32, float runs in plain FP32 only (no
// tensor cores, down-converted inputs or reduced-precision sums), and never on FFT or Winograd
// transforms, whose rounding differs from the CPU's direct sums.
StatusOr<bool> EngineAllowed(const CallSite& site, const Desc& engine, bool fma_only) {
  if (!fma_only) return true;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t n = 0;
  PF_DNN_CALL(site, cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                             CUDNN_TYPE_NUMERICAL_NOTE,
                                             CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes));
  for (int64_t i = 0; i < n; ++i) {
    switch (notes[i]) {
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      case CUDNN_NUMERICAL_NOTE_FFT:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
        return false;
      default:
        break;
    }
  }
  return true;
}

// Tries the engine configurations of heuristic `mode` in order: the first that is allowed,
// finalizes and fits the workspace limit becomes p's plan.
StatusOr<bool> FirstUsable(const CallSite& site, cudnnHandle_t h, const ConvCall& c,
                           cudnnBackendHeurMode_t mode, Plan* p) {
  p->configs.clear();
  Desc heur;
  PF_RETURN_IF_ERROR(heur.Create(site, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  PF_RETURN_IF_ERROR(SetDesc(site, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, p->graph));
  PF_RETURN_IF_ERROR(
      SetAttr(site, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  PF_DNN_CALL(site, cudnnBackendFinalize(heur.get()));
  int64_t count = 0;
  PF_DNN_CALL(site, cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    p->configs.push_back(std::make_unique<Desc>());
    PF_RETURN_IF_ERROR(p->configs.back()->Create(site, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(p->configs.back()->get());
  }
  int64_t got = 0;
  if (count > 0) {
    PF_DNN_CALL(site,
                cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()));
  }
  for (int64_t i = 0; i < got; ++i) {
    Desc engine;
    PF_RETURN_IF_ERROR(engine.Create(site, CUDNN_BACKEND_ENGINE_DESCRIPTOR));
    int64_t n = 0;
    cudnnBackendDescriptor_t e = engine.get();
    if (cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 1, &n, &e) != CUDNN_STATUS_SUCCESS) {
      continue;
    }
    PF_ASSIGN_OR_RETURN(bool allowed, EngineAllowed(site, engine, c.fma_only));
    if (!allowed) continue;
    Desc plan;
    PF_RETURN_IF_ERROR(plan.Create(site, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
    PF_RETURN_IF_ERROR(
        SetAttr(site, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    PF_RETURN_IF_ERROR(SetAttr(site, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw[i]));
    if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) continue;
    int64_t ws = 0;
    PF_DNN_CALL(site, cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                               CUDNN_TYPE_INT64, 1, &n, &ws));
    if (ws < 0 || static_cast<size_t>(ws) > kMaxWorkspace) continue;
    int64_t index = -1;
    cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                             &index);
    std::swap(*p->plan.address(), *plan.address());
    std::swap(*p->engine.address(), *engine.address());
    p->workspace = ws;
    p->engine_index = index;
    std::swap(*p->heur.address(), *heur.address());
    return true;
  }
  return false;
}

// Builds the plan for `c` from heuristic A's configurations, else the fallback heuristic's.
// Null when no engine is usable.
StatusOr<std::unique_ptr<Plan>> Build(const CallSite& site, cudnnHandle_t h, const ConvCall& c) {
  auto p = std::make_unique<Plan>();
  const cudnnDataType_t type = dnn_util::CudnnType(c.dtype);
  PF_RETURN_IF_ERROR(MakeTensor4(site, &p->x, kUidX, type, c.x));
  PF_RETURN_IF_ERROR(MakeTensor4(site, &p->y, kUidY, type, c.y));
  const int64_t wdims[4] = {c.k, c.c, c.r, c.s};
  const int64_t krsc[4] = {int64_t{c.r} * c.s * c.c, 1, int64_t{c.s} * c.c, c.c};
  const int64_t kcrs[4] = {int64_t{c.c} * c.r * c.s, int64_t{c.r} * c.s, c.s, 1};
  PF_RETURN_IF_ERROR(MakeTensor(site, &p->w, kUidW, type, wdims, c.filter_krsc ? krsc : kcrs));
  PF_RETURN_IF_ERROR(MakeConv(site, c, type, &p->conv));
  PF_RETURN_IF_ERROR(MakeOp(site, c, p.get()));

  PF_RETURN_IF_ERROR(p->graph.Create(site, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  PF_RETURN_IF_ERROR(SetDesc(site, p->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, p->op));
  PF_RETURN_IF_ERROR(
      SetAttr(site, p->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  PF_DNN_CALL(site, cudnnBackendFinalize(p->graph.get()));

  Status failed;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    StatusOr<bool> found = FirstUsable(site, h, c, mode, p.get());
    if (found.ok() && found.value()) return p;
    if (!found.ok() && found.status().code() != Code::kUnimplemented) return found.status();
    if (!found.ok()) failed = found.status();
  }
  if (!failed.ok()) return failed;
  return std::unique_ptr<Plan>();
}

// ConvCall's other fields follow from its descriptor (PlanGpuConv), so the descriptor is the key.
using Key = std::tuple<int, int, bool, GpuConvDesc>;

Key KeyOf(int ordinal, const ConvCall& c) {
  return {ordinal, static_cast<int>(c.dir), c.fma_only, c.desc};
}

std::mutex g_plans_mu;
// Null entries: shapes the graph API has no plan for (run through the legacy calls).
std::map<Key, std::shared_ptr<const Plan>>& Plans() {
  static auto* plans = new std::map<Key, std::shared_ptr<const Plan>>();
  return *plans;
}

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlignment == 0; }

}  // namespace

ConvCall MakeConvCall(GpuConvDirection dir, const GpuConvDesc& dc, const GpuConvPlan& p,
                      bool fma_only) {
  return ConvCall{.dir = dir,
                  .desc = dc,
                  .dtype = dc.dtype,
                  .x = p.x,
                  .y = p.y,
                  .k = p.k,
                  .c = p.c,
                  .r = p.r,
                  .s = p.s,
                  .filter_krsc = p.filter_krsc,
                  .pad_h = p.rows.common,
                  .pad_w = p.cols.common,
                  .stride_h = dc.stride_h,
                  .stride_w = dc.stride_w,
                  .dilation_h = dc.dilation_h,
                  .dilation_w = dc.dilation_w,
                  .fma_only = fma_only};
}

bool ConvEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("PF_CUDNN_CONV_API");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "graph") == 0) return true;
    if (std::strcmp(v, "legacy") != 0) {
      PF_LOG_WARN("PF_CUDNN_CONV_API='{}' is neither 'graph' nor 'legacy': using graph", v);
      return true;
    }
    return false;
  }();
  return enabled;
}

Status RunConv(const CallSite& site, GpuDevice* gpu, cudnnHandle_t h, const ConvCall& call, void* x,
               void* w, void* y, int* engine) {
  if (!Aligned(x) || !Aligned(w) || !Aligned(y)) {
    return errors::Unimplemented("a convolution operand is not 16-byte aligned");
  }
  const Key key = KeyOf(gpu->ordinal(), call);
  std::shared_ptr<const Plan> plan;
  bool known = false;
  {
    std::lock_guard<std::mutex> l(g_plans_mu);
    auto it = Plans().find(key);
    if (it != Plans().end()) {
      known = true;
      plan = it->second;
    }
  }
  if (!known) {
    StatusOr<std::unique_ptr<Plan>> built = Build(site, h, call);
    if (!built.ok() && built.status().code() != Code::kUnimplemented) return built.status();
    if (built.ok()) plan = std::move(built).value();
    if (plan == nullptr) {
      PF_LOG_INFO("GPU {}: cuDNN's graph API has no plan for {}{}: the legacy calls run it",
                  gpu->ordinal(), site.what(),
                  built.ok() ? "" : " (" + built.status().message() + ")");
    }
    std::lock_guard<std::mutex> l(g_plans_mu);
    Plans()[key] = plan;
  }
  if (plan == nullptr) return errors::Unimplemented("cuDNN's graph API has no engine for this");
  dnn_util::Scratch ws;
  if (!ws.TryAllocate(gpu, static_cast<size_t>(plan->workspace))) {
    return errors::Unimplemented("no memory for the graph plan's ", plan->workspace,
                                 "-byte workspace");
  }
  void* ptrs[3] = {x, w, y};
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  void* workspace = ws.get();
  Desc pack;
  PF_RETURN_IF_ERROR(pack.Create(site, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  PF_RETURN_IF_ERROR(
      SetAttr(site, pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs));
  PF_RETURN_IF_ERROR(
      SetAttr(site, pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
  PF_RETURN_IF_ERROR(
      SetAttr(site, pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
  PF_DNN_CALL(site, cudnnBackendFinalize(pack.get()));
  PF_DNN_CALL(site, cudnnBackendExecute(h, plan->plan.get(), pack.get()));
  *engine = static_cast<int>(plan->engine_index);
  return Status::OK();
}

}  // namespace pf::dnn_graph
