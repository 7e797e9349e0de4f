// Launchers of the nn family's device code besides the generic Unary/Binary (ops/gpu/launch.h)
// that nn_ops.cu and loss_ops.cu instantiate for the functors of nn_functors.cuh.
#pragma once

#include "placeflow/ops/gpu/launch.h"

namespace pf::gpu {

// out[i] = x[i] + bias[i % channels] (nn_ops.cu).
template <typename T>
void BiasAdd(const T* x, const T* bias, T* out, int64_t n, int64_t channels, Stream stream);

// Softmax cross-entropy per row of [rows, cols] logits: loss[r] and backprop = softmax - p
// (loss_ops.cu). Dense labels p [rows, cols], or sparse class indices (an index out of range
// gives NaN, as TensorFlow's GPU kernel does).
template <typename T>
void SoftmaxXent(const T* logits, const T* labels, T* loss, T* backprop, int64_t rows, int64_t cols,
                 Stream stream);
template <typename T, typename Index>
void SparseSoftmaxXent(const T* logits, const Index* labels, T* loss, T* backprop, int64_t rows,
                       int64_t cols, Stream stream);

}  // namespace pf::gpu
