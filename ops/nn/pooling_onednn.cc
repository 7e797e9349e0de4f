// oneDNN plumbing of the float32 pooling kernels, in the tensors' own plain layout (nhwc /
// nchw), no reorders.
//
// Threading, as the convolutions: oneDNN runs single-threaded inside each call and the batch is
// split across the intra-op pool, one primitive per shard (at most two shard sizes, so at most
// two primitives per kernel and shape). Until issue 34 each call ran one primitive per image
// (mb1): 7,168 calls of each kind in 28 steps of conv_lenet_step. PF_POOL_OMP=1 instead runs
// one primitive over the whole batch on OpenMP threads (the pool's size), kept for measuring
// the two (docs/benchmarks.md).
//
// MaxPoolGrad: TensorFlow's op gets the forward's input and output, not oneDNN's workspace (the
// argmax of each window), so each shard runs forward_training on its images into scratch (the
// output and the workspace, both discarded after) and then the backward. This is the argmax
// recomputation TensorFlow's own CPU kernel does; MaxPool itself runs forward_inference, as it
// cannot know whether a gradient will follow. Keeping the forward's workspace needs a graph
// rewrite (TensorFlow's oneDNN layout pass turns MaxPool into _MklMaxPool with a workspace
// output); docs/benchmarks.md weighs what that would save.
#include "placeflow/ops/nn/pooling_onednn.h"

#include <omp.h>

#include <array>
#include <cstdlib>
#include <dnnl.hpp>
#include <map>
#include <mutex>

#include "placeflow/ops/nn/dnnl_util.h"
#include "placeflow/ops/op_util.h"

namespace pf {

namespace {

using dnnl::memory;

bool UseOmp() {
  static const bool omp = [] {
    const char* v = std::getenv("PF_POOL_OMP");
    return v != nullptr && v[0] == '1';
  }();
  return omp;
}

void OneOmpThread() {
  thread_local bool single = (omp_set_num_threads(1), true);
  (void)single;
}

// The primitives of one shard shape: [mb, C, H, W] in the node's layout.
struct Prims {
  memory::desc in_md, out_md, ws_md;
  // Shards run the same primitive at once, so each brings its own scratchpad (the library's
  // would be shared: NCHW pooling transposes through it, and two shards garbled each other).
  memory::desc fwd_scratch, bwd_scratch;
  dnnl::pooling_forward fwd;   // the forward kinds; kMaxBackward: forward_training
  dnnl::pooling_backward bwd;  // the backward kinds
};

std::shared_ptr<const Prims> MakePrims(DnnlPoolKind kind, const Pool2DGeometry& g, int64_t mb) {
  const memory::format_tag tag = g.nchw ? memory::format_tag::nchw : memory::format_tag::nhwc;
  const bool max = kind == DnnlPoolKind::kMaxForward || kind == DnnlPoolKind::kMaxBackward;
  const bool forward = kind == DnnlPoolKind::kMaxForward || kind == DnnlPoolKind::kAvgForward;
  const dnnl::algorithm alg =
      max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  auto p = std::make_shared<Prims>();
  p->in_md = memory::desc({mb, g.channels, g.h.in, g.w.in}, memory::data_type::f32, tag);
  p->out_md = memory::desc({mb, g.channels, g.h.out, g.w.out}, memory::data_type::f32, tag);
  const memory::dims strides = {g.h.stride, g.w.stride}, kernel = {g.h.window, g.w.window};
  const memory::dims pad_l = {g.h.pad_before, g.w.pad_before};
  const memory::dims pad_r = {g.h.pad_after, g.w.pad_after};
  const auto prop =
      forward ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  std::unique_lock<std::mutex> lock = LockDnnlCreation();
  dnnl::pooling_forward::primitive_desc fwd_pd(
      dnnl::pooling_forward::desc(prop, alg, p->in_md, p->out_md, strides, kernel, pad_l, pad_r),
      attr, DnnlEngine());
  if (kind != DnnlPoolKind::kAvgBackward) {
    p->fwd = dnnl::pooling_forward(fwd_pd);
    p->fwd_scratch = fwd_pd.scratchpad_desc();
  }
  if (kind == DnnlPoolKind::kMaxBackward) p->ws_md = fwd_pd.workspace_desc();
  if (!forward) {
    dnnl::pooling_backward::primitive_desc bwd_pd(
        dnnl::pooling_backward::desc(alg, p->in_md, p->out_md, strides, kernel, pad_l, pad_r), attr,
        DnnlEngine(), fwd_pd);
    p->bwd = dnnl::pooling_backward(bwd_pd);
    p->bwd_scratch = bwd_pd.scratchpad_desc();
  }
  return p;
}

// Runs one shard: images [first, first + mb) through p.
void RunShard(DnnlPoolKind kind, const Prims& p, const Pool2DGeometry& g, int64_t first,
              const float* x, const float* dy, float* result) {
  const dnnl::engine& eng = DnnlEngine();
  dnnl::stream stream(eng);
  const int64_t in_off = first * g.InImageSize(), out_off = first * g.OutImageSize();
  auto in = [&](const float* base) {
    return memory(p.in_md, eng, const_cast<float*>(base) + in_off);
  };
  auto out = [&](const float* base) {
    return memory(p.out_md, eng, const_cast<float*>(base) + out_off);
  };
  // Scratchpads (empty descs allocate nothing).
  memory fwd_scratch(p.fwd_scratch, eng), bwd_scratch(p.bwd_scratch, eng);
  switch (kind) {
    case DnnlPoolKind::kMaxForward:
    case DnnlPoolKind::kAvgForward:
      p.fwd.execute(
          stream,
          {{DNNL_ARG_SRC, in(x)}, {DNNL_ARG_DST, out(result)}, {DNNL_ARG_SCRATCHPAD, fwd_scratch}});
      break;
    case DnnlPoolKind::kMaxBackward: {
      memory ws(p.ws_md, eng), scratch_dst(p.out_md, eng);
      p.fwd.execute(stream, {{DNNL_ARG_SRC, in(x)},
                             {DNNL_ARG_DST, scratch_dst},
                             {DNNL_ARG_WORKSPACE, ws},
                             {DNNL_ARG_SCRATCHPAD, fwd_scratch}});
      p.bwd.execute(stream, {{DNNL_ARG_DIFF_DST, out(dy)},
                             {DNNL_ARG_DIFF_SRC, in(result)},
                             {DNNL_ARG_WORKSPACE, ws},
                             {DNNL_ARG_SCRATCHPAD, bwd_scratch}});
      break;
    }
    case DnnlPoolKind::kAvgBackward:
      p.bwd.execute(stream, {{DNNL_ARG_DIFF_DST, out(dy)},
                             {DNNL_ARG_DIFF_SRC, in(result)},
                             {DNNL_ARG_SCRATCHPAD, bwd_scratch}});
      break;
  }
  stream.wait();
}

// How many batch shards a call runs: one per pool thread, but not below ~64k element visits
// per shard (a wake-up costs more than pooling a small image).
int64_t ShardCount(const Pool2DGeometry& g, int64_t threads) {
  const int64_t per_image = g.OutImageSize() * g.h.window * g.w.window + g.InImageSize();
  constexpr int64_t kMinPerShard = 64 * 1024;
  const int64_t by_work = std::max<int64_t>(1, per_image * g.batch / kMinPerShard);
  return std::min({g.batch, threads, by_work});
}

Status DnnlError(const dnnl::error& e) {
  return errors::Internal("oneDNN pooling failed: ", e.what(), " (status ",
                          static_cast<int>(e.status), ")");
}

}  // namespace

// Primitives keyed by (kind, mb, H, W, C); the window attrs are the node's.
struct DnnlPool::Cache {
  std::mutex mu;
  std::map<std::array<int64_t, 5>, std::shared_ptr<const Prims>> prims;

  std::shared_ptr<const Prims> Get(DnnlPoolKind kind, const Pool2DGeometry& g, int64_t mb) {
    const std::array<int64_t, 5> key = {static_cast<int64_t>(kind), mb, g.h.in, g.w.in, g.channels};
    std::lock_guard<std::mutex> lock(mu);
    std::shared_ptr<const Prims>& slot = prims[key];
    if (slot == nullptr) slot = MakePrims(kind, g, mb);
    return slot;
  }
};

DnnlPool::DnnlPool() : cache_(std::make_unique<Cache>()) {}
DnnlPool::~DnnlPool() = default;

Status DnnlPool::Run(OpKernelContext* ctx, DnnlPoolKind kind, const Pool2DGeometry& g,
                     const float* x, const float* dy, float* result) {
  OneOmpThread();
  const int64_t threads = std::max(1, IntraOpPool(ctx)->num_threads());
  const bool omp = UseOmp();
  const int64_t shards = omp ? 1 : ShardCount(g, threads);
  const int64_t q = g.batch / shards, r = g.batch % shards;
  // The first r shards take q + 1 images.
  std::shared_ptr<const Prims> prims[2];
  try {
    prims[0] = q > 0 ? cache_->Get(kind, g, q) : nullptr;
    prims[1] = r > 0 ? cache_->Get(kind, g, q + 1) : nullptr;
  } catch (const dnnl::error& e) {
    return DnnlError(e);
  }
  std::mutex err_mu;
  Status err;
  auto run_shard = [&](int64_t s) {
    const int64_t first = s * q + std::min(s, r);
    try {
      RunShard(kind, *prims[s < r ? 1 : 0], g, first, x, dy, result);
    } catch (const dnnl::error& e) {  // shards run on pool threads: nothing may escape
      std::lock_guard<std::mutex> lock(err_mu);
      if (err.ok()) err = DnnlError(e);
    }
  };
  if (omp) {
    omp_set_num_threads(static_cast<int>(threads));
    run_shard(0);
    omp_set_num_threads(1);
  } else {
    // Each unit is a whole shard: a cost this high gives each shard its own task.
    ParallelFor(ctx, shards, int64_t{1} << 40, [&](int64_t b, int64_t e) {
      OneOmpThread();
      for (int64_t s = b; s < e; ++s) run_shard(s);
    });
  }
  return err;
}

}  // namespace pf
