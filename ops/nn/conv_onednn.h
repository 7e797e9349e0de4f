// float32 convolutions on oneDNN for the CPU kernels of conv_kernels.cc. Kept apart so that
// only conv_onednn.cc includes dnnl.hpp.
#pragma once

#include <memory>

#include "placeflow/graph/kernel.h"
#include "placeflow/ops/nn/conv_ops.h"

namespace pf {

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

// One per kernel: caches the primitives per shape (the full batch and the shards' sub-batches).
class DnnlConv {
 public:
  DnnlConv();
  ~DnnlConv();
  // kForward: result = conv(input, filter); kBackwardData: result = d input from (filter, dy);
  // kBackwardFilter: result = d filter from (input, dy). Tensors are in p's layouts; `p` must be
  // fully defined with no empty tensor.
  Status Run(OpKernelContext* ctx, ConvDirection dir, const ConvParams& p, const float* input,
             const float* filter, const float* dy, float* result);

 private:
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

}  // namespace pf
