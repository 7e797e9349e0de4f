// The CPU loops of FusedBatchNorm and FusedBatchNormGrad on channels-last tensors, viewed as
// [rows, c] (NHWC: rows = N*H*W), with an optional activation fused in (_FusedBatchNormEx and
// _FusedBatchNormGradEx, which the remapper makes of FusedBatchNorm -> Relu6 and of
// Relu6Grad -> FusedBatchNormGrad; the gradient recomputes the pre-activation from x for its
// mask instead of reading the activation's tensor). Each loop reads its tensors once from memory:
//  - the moments: blocks of rows that fit in L2 are summed, then their squared deviations from
//    the block's own mean are summed while the block is still in cache; the blocks are merged
//    in block order (Chan et al.'s pairwise update, in double), so the result does not depend on
//    the thread count;
//  - the gradient's sums: per-block partial sums, added in block order.
// The loops are compiled for SSE2, AVX2 and AVX-512 (SimdCall) and vectorise along the channels.
#pragma once

#include <cstdint>
#include <string>

#include "placeflow/core/status.h"

namespace pf {

class OpKernelContext;

// The activation of the fused ops (TensorFlow's activation_mode attr).
enum class BnActivation { kIdentity, kRelu, kRelu6 };
// "Identity", "Relu" or "Relu6"; anything else is InvalidArgument naming it.
Status ParseBnActivation(const std::string& mode, BnActivation* act);

// mean[k] and the biased variance var[k] of column k of x [rows, c].
template <typename T>
void NhwcMoments(OpKernelContext* ctx, const T* x, int64_t rows, int64_t c, T* mean, T* var);

// y = act(x * a[k] + d[k]).
template <typename T>
void NhwcNormalize(OpKernelContext* ctx, const T* x, int64_t rows, int64_t c, const T* a,
                   const T* d, BnActivation act, T* y);

// The normalisation's y = x * a[k] + d[k]: a = scale * inv_std, d = offset - mean * a. The
// forward kernel and the fused gradient (which recomputes y for its mask) both take them from
// here, so the mask sees the very bits the forward pass activated.
template <typename T>
void NormalizeCoefficients(const T* scale, const T* offset, const T* mean, const T* inv_std,
                           int64_t c, T* a, T* d);

// With g = dy masked by the activation's gradient at the forward pass's pre-activation
// x * fa[k] + fd[k] (NormalizeCoefficients; null for kIdentity, where g = dy):
// sum_g[k] = sum of g, sum_gxc[k] = sum of g * (x - mean[k]).
template <typename T>
void NhwcGradSums(OpKernelContext* ctx, const T* dy, const T* x, const T* fa, const T* fd,
                  BnActivation act, const T* mean, int64_t rows, int64_t c, T* sum_g, T* sum_gxc);

// dx = g * a[k] + x * b[k] + d[k], g as above. dx may be dy (written in place).
template <typename T>
void NhwcGradApply(OpKernelContext* ctx, const T* dy, const T* x, const T* fa, const T* fd,
                   BnActivation act, const T* a, const T* b, const T* d, int64_t rows, int64_t c,
                   T* dx);

}  // namespace pf
