// float32 pooling on oneDNN for the CPU kernels of pooling_ops.cc. Kept apart so that only
// pooling_onednn.cc includes dnnl.hpp.
//
//   DnnlPool pool;  // one per kernel: caches the primitives per shard shape
//   PF_RETURN_IF_ERROR(pool.Run(ctx, DnnlPoolKind::kMaxForward, geo, x, nullptr, y));
#pragma once

#include <memory>
#include <string>

#include "placeflow/graph/kernel.h"
#include "placeflow/ops/nn/pooling_ops.h"

namespace pf {

enum class DnnlPoolKind {
  kMaxForward,   // result = max pool of x
  kAvgForward,   // result = average pool of x (padding excluded from the count)
  kMaxBackward,  // result = d x from (x, dy): the window's first maximum gets dy
  kAvgBackward,  // result = d x from dy (x unused)
};

// Names a MaxPool run for its MaxPoolGrad: the MaxPool node and the tensor it pooled
// ("node:index"). A MaxPoolGrad whose orig_output is output 0 of `pool` and whose orig_input is
// `x_source` may take that run's workspace (pooling_onednn.cc); an empty `pool` never matches.
struct MaxPoolLink {
  std::string pool;
  std::string x_source;
};

// How often, since the process started, a MaxPool kept its workspace, a MaxPoolGrad took one,
// and a float32 MaxPoolGrad recomputed it (tests and benchmarks read these).
struct MaxPoolWorkspaceCounts {
  int64_t kept = 0, taken = 0, recomputed = 0;
};
MaxPoolWorkspaceCounts GetMaxPoolWorkspaceCounts();

class DnnlPool {
 public:
  DnnlPool();
  ~DnnlPool();
  // Tensors are in g's layout; g must be fully defined with a non-empty input and output.
  Status Run(OpKernelContext* ctx, DnnlPoolKind kind, const Pool2DGeometry& g, const float* x,
             const float* dy, float* result);
  // MaxPool: y = max pool of x; once a MaxPoolGrad of `link` has asked for it, also keeps the
  // workspace (each window's argmax) for that gradient.
  Status MaxForward(OpKernelContext* ctx, const Pool2DGeometry& g, const MaxPoolLink& link,
                    const Tensor& x, Tensor* y);
  // MaxPoolGrad: dx from the workspace MaxForward kept for exactly these x and y buffers, or,
  // when there is none, from x (forward_training recomputed per shard).
  Status MaxBackward(OpKernelContext* ctx, const Pool2DGeometry& g, const MaxPoolLink& link,
                     const Tensor& x, const Tensor& y, const float* dy, float* dx);

 private:
  Status GetPrims(DnnlPoolKind kind, const Pool2DGeometry& g, int64_t q, int64_t r,
                  std::shared_ptr<const void> prims[2]);
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

}  // namespace pf
