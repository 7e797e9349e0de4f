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
// MaxPoolGrad: TensorFlow's op gets the forward's input and output, not oneDNN's workspace (each
// window's argmax), and MaxPool cannot know whether a gradient will follow. TensorFlow's oneDNN
// build rewrites the graph (MaxPool becomes _MklMaxPool with a workspace output); here the two
// kernels meet at run time instead, the graph untouched:
//  - a float32 MaxPoolGrad whose orig_output is a MaxPool's output 0 and whose orig_input is
//    that MaxPool's input (MaxPoolLink) looks for the workspace that MaxPool kept for exactly
//    these two buffers (the same Buffer objects, alive, at the same addresses, same geometry);
//  - finding none (the first step, a fed or different orig_input, a second gradient of the same
//    pair) it recomputes it per shard with forward_training, as TensorFlow's CPU kernel does,
//    and asks that MaxPool to keep its workspace from then on;
//  - a MaxPool so asked runs forward_training and keeps the workspace until a MaxPoolGrad takes
//    it or its output buffer dies; one never asked (inference) runs forward_inference.
// Before issue 34 every training step ran forward_inference (MaxPool), forward_training (the
// recomputation) and backward on each image.
#include "placeflow/ops/nn/pooling_onednn.h"

#include <omp.h>

#include <array>
#include <cstdlib>
#include <dnnl.hpp>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "placeflow/ops/nn/dnnl_util.h"
#include "placeflow/ops/op_util.h"

namespace pf {

namespace {

using dnnl::memory;

bool PoolUseOmp() {
  static const bool omp = EnvSwitchOn("PF_POOL_OMP");
  return omp;
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

// Runs one shard: images [first, first + mb) through p. `ws`: kMaxForward runs p's
// forward_training (p made for kMaxBackward) and keeps the argmax in *ws; kMaxBackward runs only
// the backward from *ws. Without it kMaxBackward recomputes the forward into scratch.
void RunShard(DnnlPoolKind kind, const Prims& p, const Pool2DGeometry& g, int64_t first,
              const float* x, const float* dy, float* result, memory* ws) {
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
  memory own_ws;
  if (kind == DnnlPoolKind::kMaxBackward && ws == nullptr) {
    own_ws = memory(p.ws_md, eng);
    memory scratch_dst(p.out_md, eng);
    p.fwd.execute(stream, {{DNNL_ARG_SRC, in(x)},
                           {DNNL_ARG_DST, scratch_dst},
                           {DNNL_ARG_WORKSPACE, own_ws},
                           {DNNL_ARG_SCRATCHPAD, fwd_scratch}});
    ws = &own_ws;
  }
  switch (kind) {
    case DnnlPoolKind::kMaxForward:
    case DnnlPoolKind::kAvgForward:
      if (ws != nullptr) {
        p.fwd.execute(stream, {{DNNL_ARG_SRC, in(x)},
                               {DNNL_ARG_DST, out(result)},
                               {DNNL_ARG_WORKSPACE, *ws},
                               {DNNL_ARG_SCRATCHPAD, fwd_scratch}});
      } else {
        p.fwd.execute(stream, {{DNNL_ARG_SRC, in(x)},
                               {DNNL_ARG_DST, out(result)},
                               {DNNL_ARG_SCRATCHPAD, fwd_scratch}});
      }
      break;
    case DnnlPoolKind::kMaxBackward:
      p.bwd.execute(stream, {{DNNL_ARG_DIFF_DST, out(dy)},
                             {DNNL_ARG_DIFF_SRC, in(result)},
                             {DNNL_ARG_WORKSPACE, *ws},
                             {DNNL_ARG_SCRATCHPAD, bwd_scratch}});
      break;
    case DnnlPoolKind::kAvgBackward:
      p.bwd.execute(stream, {{DNNL_ARG_DIFF_DST, out(dy)},
                             {DNNL_ARG_DIFF_SRC, in(result)},
                             {DNNL_ARG_SCRATCHPAD, bwd_scratch}});
      break;
  }
  stream.wait();
}

// The batch split of one call: the first r shards take q + 1 images, the others q.
struct ShardPlan {
  int64_t shards = 1, q = 0, r = 0;
  int64_t first(int64_t s) const { return s * q + std::min(s, r); }
};

bool SameGeometry(const Pool2DGeometry& a, const Pool2DGeometry& b) {
  auto same = [](const PoolDim& x, const PoolDim& y) {
    return x.in == y.in && x.window == y.window && x.stride == y.stride && x.out == y.out &&
           x.pad_before == y.pad_before && x.pad_after == y.pad_after;
  };
  return a.nchw == b.nchw && a.batch == b.batch && a.channels == b.channels && same(a.h, b.h) &&
         same(a.w, b.w);
}

// A workspace MaxForward kept: valid for a MaxPoolGrad of the same link and geometry whose x and
// y are the very buffers (alive, at the same addresses) this run read and wrote. Within a step
// an Output's tensor is immutable (a kernel reuses an input's buffer in place only when no other
// consumer holds it, and the MaxPoolGrad holds both), so those buffers still hold what the
// forward saw.
struct KeptWorkspace {
  MaxPoolLink link;
  Pool2DGeometry g;
  ShardPlan plan;
  std::weak_ptr<Buffer> x_buf, y_buf;
  const void* x_data = nullptr;
  const void* y_data = nullptr;
  std::vector<memory> ws;  // per shard
};

// The process' kept workspaces, newest last. A workspace nobody takes (a forward-only run of a
// graph that also trains) goes when its y buffer dies, or as the oldest beyond kMaxKept.
class WorkspaceRegistry {
 public:
  static WorkspaceRegistry& Get() {
    static auto* r = new WorkspaceRegistry;  // never destroyed: kernels may run at exit
    return *r;
  }
  bool Wanted(const std::string& pool) {
    std::lock_guard<std::mutex> lock(mu_);
    return wanted_.count(pool) > 0;
  }
  // A MaxPoolGrad found no workspace: `pool`'s later runs keep one ("" names no MaxPool).
  void Recomputing(const std::string& pool) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.recomputed;
    if (!pool.empty()) wanted_.insert(pool);
  }
  MaxPoolWorkspaceCounts counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }
  void Put(std::shared_ptr<KeptWorkspace> w) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.kept;
    kept_.remove_if([](const auto& k) { return k->y_buf.expired(); });
    if (kept_.size() >= kMaxKept) kept_.pop_front();
    kept_.push_back(std::move(w));
  }
  // Removes and returns the workspace kept for (link, g, x, y), or nullptr.
  std::shared_ptr<KeptWorkspace> Take(const MaxPoolLink& link, const Pool2DGeometry& g,
                                      const Tensor& x, const Tensor& y) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      const KeptWorkspace& k = **it;
      if (k.y_data != y.raw_data() || k.x_data != x.raw_data()) continue;
      if (k.y_buf.lock() != y.buffer() || k.x_buf.lock() != x.buffer()) continue;
      if (k.link.pool != link.pool || k.link.x_source != link.x_source) continue;
      if (!SameGeometry(k.g, g)) continue;
      std::shared_ptr<KeptWorkspace> w = *it;
      kept_.erase(it);
      ++counts_.taken;
      return w;
    }
    return nullptr;
  }

 private:
  static constexpr size_t kMaxKept = 64;
  std::mutex mu_;
  std::set<std::string> wanted_;
  std::list<std::shared_ptr<KeptWorkspace>> kept_;
  MaxPoolWorkspaceCounts counts_;
};

// How many batch shards a call runs: one per pool thread, but not below ~64k element visits
// per shard (a wake-up costs more than pooling a small image).
int64_t ShardCount(const Pool2DGeometry& g, int64_t threads) {
  const int64_t per_image = g.OutImageSize() * g.h.window * g.w.window + g.InImageSize();
  constexpr int64_t kMinPerShard = 64 * 1024;
  const int64_t by_work = std::max<int64_t>(1, per_image * g.batch / kMinPerShard);
  return std::min({g.batch, threads, by_work});
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

namespace {

ShardPlan PlanShards(OpKernelContext* ctx, const Pool2DGeometry& g, int64_t* threads) {
  *threads = std::max(1, IntraOpPool(ctx)->num_threads());
  ShardPlan plan;
  plan.shards = PoolUseOmp() ? 1 : ShardCount(g, *threads);
  plan.q = g.batch / plan.shards;
  plan.r = g.batch % plan.shards;
  return plan;
}

// Runs fn(s) for every shard of `plan` (on the pool, or the one shard on OpenMP threads) and
// returns the first oneDNN error.
template <typename Fn>
Status RunShards(OpKernelContext* ctx, const ShardPlan& plan, int64_t threads, Fn&& fn) {
  std::mutex err_mu;
  Status err;
  auto run_shard = [&](int64_t s) {
    try {
      fn(s);
    } catch (const dnnl::error& e) {  // shards run on pool threads: nothing may escape
      std::lock_guard<std::mutex> lock(err_mu);
      if (err.ok()) err = DnnlError("pooling", e);
    }
  };
  if (PoolUseOmp()) {
    omp_set_num_threads(static_cast<int>(threads));
    run_shard(0);
    omp_set_num_threads(1);
  } else {
    ForEachShard(ctx, plan.shards, [&](int64_t s) {
      OneOmpThread();
      run_shard(s);
    });
  }
  return err;
}

}  // namespace

MaxPoolWorkspaceCounts GetMaxPoolWorkspaceCounts() { return WorkspaceRegistry::Get().counts(); }

// The primitives of plan's two shard sizes ([0]: q images, [1]: q + 1).
Status DnnlPool::GetPrims(DnnlPoolKind kind, const Pool2DGeometry& g, int64_t q, int64_t r,
                          std::shared_ptr<const void> prims[2]) {
  try {
    prims[0] = q > 0 ? cache_->Get(kind, g, q) : nullptr;
    prims[1] = r > 0 ? cache_->Get(kind, g, q + 1) : nullptr;
  } catch (const dnnl::error& e) {
    return DnnlError("pooling", e);
  }
  return Status::OK();
}

Status DnnlPool::Run(OpKernelContext* ctx, DnnlPoolKind kind, const Pool2DGeometry& g,
                     const float* x, const float* dy, float* result) {
  OneOmpThread();
  int64_t threads;
  const ShardPlan plan = PlanShards(ctx, g, &threads);
  std::shared_ptr<const void> prims[2];
  PF_RETURN_IF_ERROR(GetPrims(kind, g, plan.q, plan.r, prims));
  return RunShards(ctx, plan, threads, [&](int64_t s) {
    const auto& p = *static_cast<const Prims*>(prims[s < plan.r ? 1 : 0].get());
    RunShard(kind, p, g, plan.first(s), x, dy, result, nullptr);
  });
}

Status DnnlPool::MaxForward(OpKernelContext* ctx, const Pool2DGeometry& g, const MaxPoolLink& link,
                            const Tensor& x, Tensor* y) {
  WorkspaceRegistry& registry = WorkspaceRegistry::Get();
  if (link.pool.empty() || !registry.Wanted(link.pool)) {
    return Run(ctx, DnnlPoolKind::kMaxForward, g, x.data<float>(), nullptr, y->data<float>());
  }
  OneOmpThread();
  int64_t threads;
  auto kept = std::make_shared<KeptWorkspace>();
  kept->plan = PlanShards(ctx, g, &threads);
  const ShardPlan& plan = kept->plan;
  // kMaxBackward's primitives: their forward is forward_training, with a workspace.
  std::shared_ptr<const void> prims[2];
  PF_RETURN_IF_ERROR(GetPrims(DnnlPoolKind::kMaxBackward, g, plan.q, plan.r, prims));
  try {
    for (int64_t s = 0; s < plan.shards; ++s) {
      kept->ws.emplace_back(static_cast<const Prims*>(prims[s < plan.r ? 1 : 0].get())->ws_md,
                            DnnlEngine());
    }
  } catch (const dnnl::error& e) {
    return DnnlError("pooling", e);
  }
  PF_RETURN_IF_ERROR(RunShards(ctx, plan, threads, [&](int64_t s) {
    const auto& p = *static_cast<const Prims*>(prims[s < plan.r ? 1 : 0].get());
    RunShard(DnnlPoolKind::kMaxForward, p, g, plan.first(s), x.data<float>(), nullptr,
             y->data<float>(), &kept->ws[s]);
  }));
  kept->link = link;
  kept->g = g;
  kept->x_buf = x.buffer();
  kept->y_buf = y->buffer();
  kept->x_data = x.raw_data();
  kept->y_data = y->raw_data();
  registry.Put(std::move(kept));
  return Status::OK();
}

Status DnnlPool::MaxBackward(OpKernelContext* ctx, const Pool2DGeometry& g, const MaxPoolLink& link,
                             const Tensor& x, const Tensor& y, const float* dy, float* dx) {
  WorkspaceRegistry& registry = WorkspaceRegistry::Get();
  std::shared_ptr<KeptWorkspace> kept = link.pool.empty() ? nullptr : registry.Take(link, g, x, y);
  if (kept == nullptr) {
    // The first step, or no MaxPool of this link ran for these buffers: ask its later runs to
    // keep the workspace, and recompute it this time.
    registry.Recomputing(link.pool);
    return Run(ctx, DnnlPoolKind::kMaxBackward, g, x.data<float>(), dy, dx);
  }
  OneOmpThread();
  const ShardPlan& plan = kept->plan;  // the forward's split: each shard's workspace is its own
  const int64_t threads = std::max(1, IntraOpPool(ctx)->num_threads());
  std::shared_ptr<const void> prims[2];
  PF_RETURN_IF_ERROR(GetPrims(DnnlPoolKind::kMaxBackward, g, plan.q, plan.r, prims));
  return RunShards(ctx, plan, threads, [&](int64_t s) {
    const auto& p = *static_cast<const Prims*>(prims[s < plan.r ? 1 : 0].get());
    RunShard(DnnlPoolKind::kMaxBackward, p, g, plan.first(s), nullptr, dy, dx, &kept->ws[s]);
  });
}

}  // namespace pf
