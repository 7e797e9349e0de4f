// float32 pooling on oneDNN for the CPU kernels of pooling_ops.cc. Kept apart so that only
// pooling_onednn.cc includes dnnl.hpp.
//
//   DnnlPool pool;  // one per kernel: caches the primitives per shard shape
//   PF_RETURN_IF_ERROR(pool.Run(ctx, DnnlPoolKind::kMaxForward, geo, x, nullptr, y));
#pragma once

#include <memory>

#include "placeflow/graph/kernel.h"
#include "placeflow/ops/nn/pooling_ops.h"

namespace pf {

enum class DnnlPoolKind {
  kMaxForward,   // result = max pool of x
  kAvgForward,   // result = average pool of x (padding excluded from the count)
  kMaxBackward,  // result = d x from (x, dy): the window's first maximum gets dy
  kAvgBackward,  // result = d x from dy (x unused)
};

class DnnlPool {
 public:
  DnnlPool();
  ~DnnlPool();
  // Tensors are in g's layout; g must be fully defined with a non-empty input and output.
  Status Run(OpKernelContext* ctx, DnnlPoolKind kind, const Pool2DGeometry& g, const float* x,
             const float* dy, float* result);

 private:
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

}  // namespace pf
