// float32 and bfloat16 convolutions on oneDNN for the CPU kernels of conv_kernels.cc. Kept apart so
// that only conv_onednn.cc includes dnnl.hpp.
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
  // The same in bfloat16 (where DnnlNativeBf16: oneDNN accumulates in float32).
  Status Run(OpKernelContext* ctx, ConvDirection dir, const ConvParams& p, const BFloat16* input,
             const BFloat16* filter, const BFloat16* dy, BFloat16* result);

 private:
  Status Run(OpKernelContext* ctx, ConvDirection dir, const ConvParams& p, const void* input,
             const void* filter, const void* dy, void* result, bool bf16);

  struct Cache;
  std::unique_ptr<Cache> cache_;
};

}  // namespace pf
