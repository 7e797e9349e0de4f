// oneDNN plumbing of the float32 batch norm kernels: batch_normalization forward (training or
// use_global_stats inference) and backward, with separate scale and shift (use_scale |
// use_shift), on the tensors' own plain layout (nhwc / nchw).
//
// Threading: the statistics span the whole batch, so the batch split that conv and pooling use
// does not apply; one primitive runs on OpenMP threads, as many as the intra-op pool has. The
// calling thread's OpenMP count is raised for the call (primitive creation included: oneDNN
// sizes its per-thread reduction scratch from it) and put back to 1, the count every other
// oneDNN call here relies on. Trade-off: the OpenMP team is not the intra-op pool, so while a
// batch norm runs, other ops' pool work competes for the same cores (up to twice the threads on
// them), and two batch norms running at once (towers) each bring a team. oneDNN splits the work
// statically with barriers between passes, so a team thread that loses its core stalls the
// call: on 2 cores, [128,14,14,64] NHWC training forward took 0.30 ms at best against the
// loops' 0.46, but its median rose to 6.5 ms (loops 0.75) while other processes kept the load
// near 6 (`pf_tests "[batchnorm-bench]"`). Results may differ in the last bits with the thread
// count (oneDNN splits its reductions per thread); the thread count is part of the cache key
// so a given configuration stays deterministic.
//
// Backward takes oneDNN's variance and epsilon where the op has the saved inverse standard
// deviation: it gets epsilon = 0 and variance = 1/inv_std^2 (computed in double, rounded once
// to float), so the inverse std oneDNN recomputes, 1/sqrt(variance), is the saved one to about
// two float ulps, whatever epsilon the forward used.
#include "placeflow/ops/nn/batch_norm_onednn.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "placeflow/ops/nn/dnnl_util.h"
#include "placeflow/ops/op_util.h"

namespace pf {

namespace {

using dnnl::memory;

enum class Kind { kForwardTraining, kForwardInference, kBackwardTraining, kBackwardInference };

struct BnPrim {
  dnnl::primitive prim;
  memory::desc data, channel, scratch;
};

// kind, N, C, H, W, nchw, epsilon's bits, OpenMP threads.
using BnKey = std::array<int64_t, 8>;

std::unique_ptr<BnPrim> MakePrim(const BnKey& key) {
  const Kind kind = static_cast<Kind>(key[0]);
  const bool nchw = key[5] != 0;
  float eps;
  const uint32_t eps_bits = static_cast<uint32_t>(key[6]);
  std::memcpy(&eps, &eps_bits, sizeof(eps));
  auto p = std::make_unique<BnPrim>();
  p->data = memory::desc({key[1], key[2], key[3], key[4]}, memory::data_type::f32,
                         nchw ? memory::format_tag::nchw : memory::format_tag::nhwc);
  p->channel = memory::desc({key[2]}, memory::data_type::f32, memory::format_tag::a);
  const bool training = kind == Kind::kForwardTraining || kind == Kind::kBackwardTraining;
  auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  if (!training) flags = flags | dnnl::normalization_flags::use_global_stats;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::prop_kind fwd_kind =
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  std::unique_lock<std::mutex> lock = LockDnnlCreation();
  dnnl::batch_normalization_forward::primitive_desc fwd_pd(
      dnnl::batch_normalization_forward::desc(fwd_kind, p->data, eps, flags), attr, DnnlEngine());
  if (kind == Kind::kForwardTraining || kind == Kind::kForwardInference) {
    p->scratch = fwd_pd.scratchpad_desc();
    p->prim = dnnl::batch_normalization_forward(fwd_pd);
  } else {
    dnnl::batch_normalization_backward::primitive_desc bwd_pd(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, p->data, p->data, eps,
                                                 flags),
        attr, DnnlEngine(), fwd_pd);
    p->scratch = bwd_pd.scratchpad_desc();
    p->prim = dnnl::batch_normalization_backward(bwd_pd);
  }
  return p;
}

// Raises the calling thread's OpenMP thread count for one oneDNN call, and puts back the 1
// that the other oneDNN kernels expect, also when the call throws.
class OmpThreads {
 public:
  explicit OmpThreads(int n) { omp_set_num_threads(n); }
  ~OmpThreads() { omp_set_num_threads(1); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;
};

}  // namespace

struct DnnlBatchNorm::Cache {
  std::mutex mu;
  std::map<BnKey, std::unique_ptr<BnPrim>> prims;

  const BnPrim* Get(const BnKey& key) {
    std::lock_guard<std::mutex> lock(mu);
    std::unique_ptr<BnPrim>& slot = prims[key];
    // Primitive creation (JIT code generation) happens under the lock: a shape is built once.
    if (slot == nullptr) slot = MakePrim(key);
    return slot.get();
  }

  // Runs the primitive for (kind, shape, epsilon) with args (scratchpad added) on the pool's
  // size in OpenMP threads.
  Status Run(OpKernelContext* ctx, Kind kind, const Shape& x, bool nchw, float epsilon,
             const std::vector<std::pair<int, const float*>>& data_args,
             const std::vector<std::pair<int, const float*>>& channel_args) {
    const int threads = std::max(1, IntraOpPool(ctx)->num_threads());
    uint32_t eps_bits;
    std::memcpy(&eps_bits, &epsilon, sizeof(eps_bits));
    const int64_t c = nchw ? x.dim(1) : x.dim(3);
    const int64_t h = nchw ? x.dim(2) : x.dim(1), w = nchw ? x.dim(3) : x.dim(2);
    const BnKey key = {static_cast<int64_t>(kind), x.dim(0), c, h, w, nchw, eps_bits, threads};
    try {
      OmpThreads omp(threads);
      const BnPrim* p = Get(key);
      std::unordered_map<int, memory> args;
      for (const auto& [arg, ptr] : data_args) {
        args.emplace(arg, memory(p->data, DnnlEngine(), const_cast<float*>(ptr)));
      }
      for (const auto& [arg, ptr] : channel_args) {
        args.emplace(arg, memory(p->channel, DnnlEngine(), const_cast<float*>(ptr)));
      }
      const size_t scratch_bytes = p->scratch.get_size();
      Tensor scratch(DT_FLOAT,
                     Shape{static_cast<int64_t>((scratch_bytes + sizeof(float)) / sizeof(float))});
      args.emplace(DNNL_ARG_SCRATCHPAD, memory(p->scratch, DnnlEngine(), scratch.data<float>()));
      dnnl::stream stream(DnnlEngine());
      p->prim.execute(stream, args);
      stream.wait();
    } catch (const dnnl::error& e) {
      return DnnlError("batch normalization", e);
    }
    return Status::OK();
  }
};

DnnlBatchNorm::DnnlBatchNorm() : cache_(std::make_unique<Cache>()) {}
DnnlBatchNorm::~DnnlBatchNorm() = default;

Status DnnlBatchNorm::Forward(OpKernelContext* ctx, const Shape& x_shape, bool nchw, bool training,
                              float epsilon, const float* x, const float* scale,
                              const float* offset, float* mean, float* variance, float* y) {
  return cache_->Run(ctx, training ? Kind::kForwardTraining : Kind::kForwardInference, x_shape,
                     nchw, epsilon, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}},
                     {{DNNL_ARG_SCALE, scale},
                      {DNNL_ARG_SHIFT, offset},
                      {DNNL_ARG_MEAN, mean},
                      {DNNL_ARG_VARIANCE, variance}});
}

Status DnnlBatchNorm::Backward(OpKernelContext* ctx, const Shape& x_shape, bool nchw, bool training,
                               const float* dy, const float* x, const float* scale,
                               const float* mean, const float* inv_std, float* dx, float* dscale,
                               float* doffset) {
  const int64_t c = nchw ? x_shape.dim(1) : x_shape.dim(3);
  // oneDNN 2.6 counts the shift among backward's inputs when use_shift is set, though the
  // gradients do not depend on it: zeros stand in for the offset this op does not receive.
  std::vector<float> variance(c), shift(c, 0.f);
  for (int64_t k = 0; k < c; ++k) {
    const double s = inv_std[k];
    variance[k] = static_cast<float>(1.0 / (s * s));
  }
  return cache_->Run(ctx, training ? Kind::kBackwardTraining : Kind::kBackwardInference, x_shape,
                     nchw, 0.f,
                     {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_SRC, dx}},
                     {{DNNL_ARG_SCALE, scale},
                      {DNNL_ARG_SHIFT, shift.data()},
                      {DNNL_ARG_MEAN, mean},
                      {DNNL_ARG_VARIANCE, variance.data()},
                      {DNNL_ARG_DIFF_SCALE, dscale},
                      {DNNL_ARG_DIFF_SHIFT, doffset}});
}

bool BatchNormUseOneDnn() {
  static const bool onednn = [] {
    const char* v = std::getenv("PF_BATCHNORM_ONEDNN");
    return v != nullptr && v[0] == '1';
  }();
  return onednn;
}

}  // namespace pf
