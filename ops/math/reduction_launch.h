// Launchers of the reductions' device code (reduction_ops.cu): Sum/Mean/Max/Min, ArgMax, AddN
// and the weighted sum behind WeightedMean and the all-reduce (ops/comm).
#pragma once

#include "placeflow/ops/gpu/launch.h"

namespace pf::gpu {

enum class ReduceFn { kSum, kMax, kMin };

// A reduction viewed as out[o] = R over r of in[offset(o) + offset(r)], with the kept dims (of
// the output, outermost first) and the reduced dims given as (size, input stride) pairs.
struct ReduceDims {
  int kept_rank = 0;
  int64_t kept_dims[kMaxDims] = {};
  int64_t kept_strides[kMaxDims] = {};
  int reduced_rank = 0;
  int64_t reduced_dims[kMaxDims] = {};
  int64_t reduced_strides[kMaxDims] = {};
  int64_t num_out = 1;
  int64_t num_reduced = 1;
};
// out = R(in) per output element; sums are divided by `divisor` (Mean: the count).
template <typename T>
void Reduce(ReduceFn f, const T* in, T* out, const ReduceDims& dims, int64_t divisor,
            Stream stream);
// Index of the largest value along the middle axis of [outer, axis, inner] (first on ties).
template <typename T, typename Index>
void ArgMax(const T* in, Index* out, int64_t outer, int64_t axis, int64_t inner, Stream stream);
// out = sum of `count` inputs (the pointer array lives on the host).
template <typename T>
void AddN(const T* const* inputs, int count, T* out, int64_t n, Stream stream);
// out = sum_i scale[i] * inputs[i], summed in index order (pointers and scales on the host).
template <typename T>
void WeightedSum(const T* const* inputs, const double* scale, int count, T* out, int64_t n,
                 Stream stream);

}  // namespace pf::gpu
