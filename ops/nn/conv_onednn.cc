// oneDNN plumbing of the float32 and bfloat16 convolution kernels. Activations stay in the tensors'
// own plain layout (nhwc / nchw); weights are described as `any` so oneDNN picks its fast blocked
// layout, and are reordered from (or, for the filter gradient, to) TensorFlow's
// [rows, cols, in, out] layout, which is oneDNN's hwio (hwigo for depthwise groups).
//
// Threading: as MatMul, oneDNN runs single-threaded inside each call and the batch is split
// across the intra-op pool, one primitive per shard size (at most two sizes); the filter
// gradient sums the shards' partial gradients. PF_CONV_OMP=1 instead runs one primitive on
// OpenMP threads (the pool's size), kept for benchmarking the two (`pf_tests "[conv-bench]"`);
// on 2 cores they were within noise of each other, and the shards share the pool with
// inter-op work instead of oversubscribing the cores.
#include "placeflow/ops/nn/conv_onednn.h"

#include <omp.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <unordered_map>

#include "placeflow/ops/nn/dnnl_util.h"
#include "placeflow/ops/op_util.h"

namespace pf {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

bool ConvUseOmp() {
  static const bool omp = EnvSwitchOn("PF_CONV_OMP");
  return omp;
}

// Aligned scratch of at least `bytes`, not zeroed: everything that uses it writes it whole first
// (reorders, the filter gradients, oneDNN's scratchpads). Zeroing the scratchpads of the larger
// convolutions took 1.2% of a MobileNetV2 training step's CPU time (perf).
Tensor Scratch(size_t bytes, DType dtype = DT_FLOAT) {
  const size_t elem = DTypeSize(dtype);
  return Tensor::Allocate(CpuAllocator(), dtype,
                          Shape{static_cast<int64_t>((bytes + elem - 1) / elem)})
      .ValueOrThrow();
}

struct ConvPrim {
  dnnl::primitive prim;
  memory::desc src, dst;       // activations: input and output (or their gradients)
  memory::desc wei, user_wei;  // the primitive's weights layout and TensorFlow's
  memory::desc scratch;
  bool reorder = false;
  dnnl::primitive wei_reorder;  // user -> wei, or wei -> user for the filter gradient
};

using ConvKey = std::array<int64_t, 21>;

std::unique_ptr<ConvPrim> MakePrim(ConvDirection dir, const ConvParams& p, int64_t nb, bool bf16) {
  const Tag tag = p.nchw ? Tag::nchw : Tag::nhwc;
  // Every tensor of a bfloat16 convolution is bfloat16 (oneDNN accumulates in float32).
  const auto dt = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  auto prim = std::make_unique<ConvPrim>();
  prim->src = memory::desc({nb, p.in_depth, p.in_rows, p.in_cols}, dt, tag);
  prim->dst = memory::desc({nb, p.out_depth, p.out_rows, p.out_cols}, dt, tag);
  memory::dims wdims;
  if (p.groups == 1) {
    wdims = {p.out_depth, p.in_depth, p.filter_rows, p.filter_cols};
    prim->user_wei = memory::desc(wdims, dt, Tag::hwio);
  } else {
    wdims = {p.groups, p.out_per_group, p.in_depth / p.groups, p.filter_rows, p.filter_cols};
    prim->user_wei = memory::desc(wdims, dt, Tag::hwigo);
  }
  const memory::desc any_wei(wdims, dt, Tag::any);
  const memory::dims strides = {p.stride_rows, p.stride_cols};
  const memory::dims dilates = {p.dilation_rows - 1, p.dilation_cols - 1};
  const memory::dims pad_l = {p.pad_top, p.pad_left};
  const memory::dims pad_r = {p.PadBottomExact(), p.PadRightExact()};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto alg = dnnl::algorithm::convolution_direct;
  std::unique_lock<std::mutex> lock = LockDnnlCreation();
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, prim->src, any_wei,
                                      prim->dst, strides, dilates, pad_l, pad_r),
      attr, DnnlEngine());
  switch (dir) {
    case ConvDirection::kForward:
      prim->prim = dnnl::convolution_forward(fwd);
      prim->wei = fwd.weights_desc();
      prim->scratch = fwd.scratchpad_desc();
      break;
    case ConvDirection::kBackwardData: {
      dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(alg, prim->src, any_wei, prim->dst, strides,
                                                dilates, pad_l, pad_r),
          attr, DnnlEngine(), fwd);
      prim->prim = dnnl::convolution_backward_data(pd);
      prim->wei = pd.weights_desc();
      prim->scratch = pd.scratchpad_desc();
      break;
    }
    case ConvDirection::kBackwardFilter: {
      dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(alg, prim->src, any_wei, prim->dst, strides,
                                                   dilates, pad_l, pad_r),
          attr, DnnlEngine(), fwd);
      prim->prim = dnnl::convolution_backward_weights(pd);
      prim->wei = pd.diff_weights_desc();
      prim->scratch = pd.scratchpad_desc();
      break;
    }
  }
  prim->reorder = prim->wei != prim->user_wei;
  if (prim->reorder) {
    prim->wei_reorder = dir == ConvDirection::kBackwardFilter
                            ? dnnl::reorder(dnnl::reorder::primitive_desc(
                                  DnnlEngine(), prim->wei, DnnlEngine(), prim->user_wei))
                            : dnnl::reorder(dnnl::reorder::primitive_desc(
                                  DnnlEngine(), prim->user_wei, DnnlEngine(), prim->wei));
  }
  return prim;
}

// Runs one reorder or convolution on this thread.
void Exec(const dnnl::primitive& prim, const std::unordered_map<int, memory>& args) {
  dnnl::stream stream(DnnlEngine());
  prim.execute(stream, args);
  stream.wait();
}

// How many batch shards a call runs: one per pool thread, but a shard below ~2 MFLOP costs more
// in wake-ups and partial sums than it saves.
int64_t ShardCount(const ConvParams& p, int64_t threads) {
  const double flops_per_image = 2.0 * p.out_rows * p.out_cols * p.out_depth * p.filter_rows *
                                 p.filter_cols * (p.in_depth / p.groups);
  constexpr double kMinFlopsPerShard = 2e6;
  int64_t shards = std::min<int64_t>(p.batch, threads);
  return std::min<int64_t>(
      shards,
      std::max<int64_t>(1, static_cast<int64_t>(flops_per_image * p.batch / kMinFlopsPerShard)));
}

// One call split into batch shards: each of the first r shards takes q + 1 images (prims[1]),
// the others q (prims[0]).
struct ShardedConv {
  ShardedConv(ConvDirection dir, const void* input, const void* filter, const void* dy,
              void* result, bool bf16)
      : dir(dir),
        input(static_cast<const char*>(input)),
        filter(filter),
        dy(static_cast<const char*>(dy)),
        result(static_cast<char*>(result)),
        bf16(bf16),
        elem(bf16 ? 2 : 4) {}

  ConvDirection dir;
  const char* input;
  const void* filter;
  const char* dy;
  char* result;
  bool bf16;
  int64_t elem;  // bytes per element
  bool omp = false;
  int64_t shards = 1, q = 0, r = 0;
  int64_t in_image = 0, out_image = 0, filter_size = 0;  // elements per image / of the filter
  const ConvPrim* prims[2] = {nullptr, nullptr};
  // The filter as each primitive reads it (forward and backward-data).
  Tensor wei_buf[2];
  const void* wei_ptr[2] = {nullptr, nullptr};
  // The filter gradient: one shard writing TensorFlow's layout straight into the result, or
  // one plain partial per shard, summed after.
  bool direct_filter = false;
  Tensor partials;

  // Forward and backward-data read the filter in each primitive's layout: reorder it once per
  // call (and per distinct layout), not per shard.
  void ReorderFilter() {
    for (int i = 0; i < 2; ++i) {
      if (prims[i] == nullptr || !prims[i]->reorder) continue;
      if (i == 1 && prims[0] != nullptr && prims[0]->wei == prims[1]->wei) {
        wei_ptr[1] = wei_ptr[0];
        continue;
      }
      wei_buf[i] = Scratch(prims[i]->wei.get_size());
      Exec(prims[i]->wei_reorder,
           {{DNNL_ARG_FROM, memory(prims[i]->user_wei, DnnlEngine(), const_cast<void*>(filter))},
            {DNNL_ARG_TO, memory(prims[i]->wei, DnnlEngine(), wei_buf[i].raw_data())}});
      wei_ptr[i] = wei_buf[i].raw_data();
    }
  }

  void RunShard(int64_t s) const {
    if (!omp) OneOmpThread();
    const int which = s < r ? 1 : 0;
    const ConvPrim& prim = *prims[which];
    const int64_t n0 = s * q + std::min(s, r);
    Tensor scratch = Scratch(prim.scratch.get_size());
    const memory scratch_mem(prim.scratch, DnnlEngine(), scratch.raw_data());
    auto mem = [&](const memory::desc& d, const void* ptr) {
      return memory(d, DnnlEngine(), const_cast<void*>(ptr));
    };
    switch (dir) {
      case ConvDirection::kForward:
        Exec(prim.prim, {{DNNL_ARG_SRC, mem(prim.src, input + n0 * in_image * elem)},
                         {DNNL_ARG_WEIGHTS, mem(prim.wei, wei_ptr[which])},
                         {DNNL_ARG_DST, mem(prim.dst, result + n0 * out_image * elem)},
                         {DNNL_ARG_SCRATCHPAD, scratch_mem}});
        break;
      case ConvDirection::kBackwardData:
        Exec(prim.prim, {{DNNL_ARG_DIFF_DST, mem(prim.dst, dy + n0 * out_image * elem)},
                         {DNNL_ARG_WEIGHTS, mem(prim.wei, wei_ptr[which])},
                         {DNNL_ARG_DIFF_SRC, mem(prim.src, result + n0 * in_image * elem)},
                         {DNNL_ARG_SCRATCHPAD, scratch_mem}});
        break;
      case ConvDirection::kBackwardFilter: {
        char* dst = direct_filter
                        ? result
                        : static_cast<char*>(partials.raw_data()) + s * filter_size * elem;
        Tensor blocked;
        void* dw = dst;
        if (prim.reorder) {
          blocked = Scratch(prim.wei.get_size());
          dw = blocked.raw_data();
        }
        Exec(prim.prim, {{DNNL_ARG_SRC, mem(prim.src, input + n0 * in_image * elem)},
                         {DNNL_ARG_DIFF_DST, mem(prim.dst, dy + n0 * out_image * elem)},
                         {DNNL_ARG_DIFF_WEIGHTS, mem(prim.wei, dw)},
                         {DNNL_ARG_SCRATCHPAD, scratch_mem}});
        if (prim.reorder) {
          Exec(prim.wei_reorder,
               {{DNNL_ARG_FROM, mem(prim.wei, dw)}, {DNNL_ARG_TO, mem(prim.user_wei, dst)}});
        }
        break;
      }
    }
  }

  // Runs every shard (on the pool, or as one OpenMP primitive) and returns the first error.
  Status RunShards(OpKernelContext* ctx, int64_t threads) const {
    // Shards run on pool threads, where an exception must not escape.
    std::mutex err_mu;
    Status err;
    auto run_shard = [&](int64_t s) {
      try {
        RunShard(s);
      } catch (const dnnl::error& e) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (err.ok()) err = DnnlError("convolution", e);
      }
    };
    if (omp) {
      omp_set_num_threads(static_cast<int>(threads));
      run_shard(0);
      omp_set_num_threads(1);
    } else {
      ForEachShard(ctx, shards, run_shard);
    }
    return err;
  }

  // The shards' filter gradients summed in float32 (bfloat16 partials rounded once more); the
  // float32 sum runs vectorised (SimdFor), shard after shard as the scalar loop adds them.
  void SumPartials(OpKernelContext* ctx) const {
    ParallelFor(ctx, filter_size, shards, [&](int64_t b, int64_t e) {
      if (!bf16) {
        const float* p = partials.data<float>();
        float* out = reinterpret_cast<float*>(result);
        SimdFor(b, e, [&](int64_t i) { out[i] = p[i]; });
        for (int64_t s = 1; s < shards; ++s) {
          const float* q = p + s * filter_size;
          SimdFor(b, e, [&](int64_t i) { out[i] += q[i]; });
        }
        return;
      }
      for (int64_t i = b; i < e; ++i) {
        float sum = 0;
        for (int64_t s = 0; s < shards; ++s)
          sum += BFloat16ToFloat(partials.data<BFloat16>()[s * filter_size + i]);
        reinterpret_cast<BFloat16*>(result)[i] = FloatToBFloat16(sum);
      }
    });
  }
};

}  // namespace

struct DnnlConv::Cache {
  std::mutex mu;
  std::map<ConvKey, std::unique_ptr<ConvPrim>> prims;

  const ConvPrim* Get(ConvDirection dir, const ConvParams& p, int64_t nb, bool bf16) {
    const ConvKey key = {static_cast<int64_t>(dir),
                         nb,
                         p.in_rows,
                         p.in_cols,
                         p.in_depth,
                         p.filter_rows,
                         p.filter_cols,
                         p.out_rows,
                         p.out_cols,
                         p.out_depth,
                         p.groups,
                         p.stride_rows,
                         p.stride_cols,
                         p.dilation_rows,
                         p.dilation_cols,
                         p.pad_top,
                         p.pad_left,
                         p.PadBottomExact(),
                         p.PadRightExact(),
                         p.nchw,
                         bf16};
    std::lock_guard<std::mutex> lock(mu);
    std::unique_ptr<ConvPrim>& slot = prims[key];
    // Primitive creation (JIT code generation) happens under the lock: a shape is built once.
    if (slot == nullptr) slot = MakePrim(dir, p, nb, bf16);
    return slot.get();
  }
};

DnnlConv::DnnlConv() : cache_(std::make_unique<Cache>()) {}
DnnlConv::~DnnlConv() = default;

Status DnnlConv::Run(OpKernelContext* ctx, ConvDirection dir, const ConvParams& p,
                     const float* input, const float* filter, const float* dy, float* result) {
  return Run(ctx, dir, p, input, filter, dy, result, false);
}
Status DnnlConv::Run(OpKernelContext* ctx, ConvDirection dir, const ConvParams& p,
                     const BFloat16* input, const BFloat16* filter, const BFloat16* dy,
                     BFloat16* result) {
  return Run(ctx, dir, p, input, filter, dy, result, true);
}

namespace {

// A depthwise convolution (multiplier 1) at stride 1 whose padding is centred on each window: its
// input gradient is the forward convolution of dy with the filter turned by 180 degrees, with the
// same shapes and padding.
bool BackwardDataIsForward(const ConvParams& p) {
  return p.groups > 1 && p.groups == p.in_depth && p.out_per_group == 1 && p.stride_rows == 1 &&
         p.stride_cols == 1 && p.dilation_rows == 1 && p.dilation_cols == 1 &&
         p.filter_rows % 2 == 1 && p.filter_cols % 2 == 1 && p.pad_top == (p.filter_rows - 1) / 2 &&
         p.PadBottomExact() == p.pad_top && p.pad_left == (p.filter_cols - 1) / 2 &&
         p.PadRightExact() == p.pad_left && p.in_rows == p.out_rows && p.in_cols == p.out_cols;
}

// The depthwise filter [rows, cols, channels] (TensorFlow's layout, multiplier 1) turned by 180
// degrees in the plane.
Tensor TurnedFilter(const ConvParams& p, const void* filter, int64_t elem) {
  const int64_t row = p.in_depth * elem;  // bytes of one tap's channels
  Tensor turned = Scratch(static_cast<size_t>(p.filter_rows * p.filter_cols * row));
  const auto* from = static_cast<const char*>(filter);
  auto* to = static_cast<char*>(turned.raw_data());
  const int64_t taps = p.filter_rows * p.filter_cols;
  for (int64_t t = 0; t < taps; ++t) std::memcpy(to + t * row, from + (taps - 1 - t) * row, row);
  return turned;
}

}  // namespace

Status DnnlConv::Run(OpKernelContext* ctx, ConvDirection dir, const ConvParams& p,
                     const void* input, const void* filter, const void* dy, void* result,
                     bool bf16) {
  if (dir == ConvDirection::kBackwardData && BackwardDataIsForward(p)) {
    // oneDNN 2.6's forward depthwise kernel runs about 1.8x its backward-data one (MobileNetV2's
    // stride-1 depthwise input gradients: 10.6 -> 6.0 ms a step at batch 8, docs/benchmarks.md).
    const Tensor turned = TurnedFilter(p, filter, bf16 ? 2 : 4);
    return Run(ctx, ConvDirection::kForward, p, dy, turned.raw_data(), nullptr, result, bf16);
  }
  OneOmpThread();
  ThreadPool* pool = IntraOpPool(ctx);
  const int64_t threads = std::max(1, pool->num_threads());
  ShardedConv c(dir, input, filter, dy, result, bf16);
  c.omp = ConvUseOmp();
  c.shards = c.omp ? 1 : ShardCount(p, threads);
  c.q = p.batch / c.shards;
  c.r = p.batch % c.shards;
  c.in_image = p.in_rows * p.in_cols * p.in_depth;
  c.out_image = p.out_rows * p.out_cols * p.out_depth;
  c.filter_size = p.filter_rows * p.filter_cols * p.in_depth * p.out_per_group;
  c.wei_ptr[0] = c.wei_ptr[1] = filter;
  try {
    c.prims[0] = c.q > 0 ? cache_->Get(dir, p, c.q, bf16) : nullptr;
    c.prims[1] = c.r > 0 ? cache_->Get(dir, p, c.q + 1, bf16) : nullptr;
    if (dir != ConvDirection::kBackwardFilter) c.ReorderFilter();
    c.direct_filter = c.shards == 1 && c.prims[0] != nullptr && !c.prims[0]->reorder;
    const bool sum_partials = dir == ConvDirection::kBackwardFilter && !c.direct_filter;
    if (sum_partials)
      c.partials = Scratch(c.shards * c.filter_size * c.elem, bf16 ? DT_BFLOAT16 : DT_FLOAT);
    PF_RETURN_IF_ERROR(c.RunShards(ctx, threads));
    if (sum_partials) c.SumPartials(ctx);
  } catch (const dnnl::error& e) {
    return DnnlError("convolution", e);
  }
  return Status::OK();
}

}  // namespace pf
