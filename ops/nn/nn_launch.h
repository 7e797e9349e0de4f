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

// LeakyRelu and LeakyReluGrad(g, x), whose functors carry alpha (activation_ops.cu).
template <typename T>
void LeakyRelu(const T* x, T* y, int64_t n, float alpha, Stream stream);
template <typename T>
void LeakyReluGrad(const T* g, const T* x, T* out, int64_t n, float alpha, Stream stream);

// Dropout (dropout_ops.cu): u_i = the Philox uniform of element i of call `call`, exactly as
// RandomUniform draws it (ops/random/philox.cuh); mask[i] = u_i >= rate ? scale : 0 and
// out[i] = x[i] * mask[i].
template <typename T>
void Dropout(const T* x, T* out, T* mask, int64_t n, float rate, T scale, uint32_t key0,
             uint32_t key1, uint32_t call, Stream stream);

}  // namespace pf::gpu
