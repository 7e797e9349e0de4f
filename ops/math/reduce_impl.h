// Reduction routines shared by Sum/Mean/Prod/Max/Min and the gradient kernels that reduce
// (SumToShape, BiasAddGrad).
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

#include "placeflow/ops/op_util.h"

namespace pf {

struct SumR {
  template <typename T>
  static T Init() {
    return T(0);
  }
  template <typename T>
  static T Combine(T a, T b) {
    return a + b;
  }
};
struct ProdR {
  template <typename T>
  static T Init() {
    return T(1);
  }
  template <typename T>
  static T Combine(T a, T b) {
    return a * b;
  }
};
struct MaxR {
  template <typename T>
  static T Init() {
    return std::numeric_limits<T>::lowest();
  }
  template <typename T>
  static T Combine(T a, T b) {
    return a > b ? a : b;
  }
};
struct MinR {
  template <typename T>
  static T Init() {
    return std::numeric_limits<T>::max();
  }
  template <typename T>
  static T Combine(T a, T b) {
    return a < b ? a : b;
  }
};

// Combines row[0, n) with 32 partial accumulators so the compiler can vectorise without
// reassociating across the whole row: four AVX2 or two AVX-512 vectors of independent adds in
// flight (eight, one vector's worth, left each add waiting on the last: 0.1 ns an element on
// every ISA). SimdCall runs the copy for the active ISA; the partial results are the same on
// every target, so are the bits.
template <typename T, typename R>
inline T ReduceRow(const T* row, int64_t n) {
  return SimdCall([&] {
    constexpr int kLanes = 32;
    T acc[kLanes];
    std::fill(acc, acc + kLanes, R::template Init<T>());
    int64_t r = 0;
    for (; r + kLanes <= n; r += kLanes) {
      for (int l = 0; l < kLanes; ++l) acc[l] = R::Combine(acc[l], row[r + l]);
    }
    for (; r < n; ++r) acc[0] = R::Combine(acc[0], row[r]);
    T v = acc[0];
    for (int l = 1; l < kLanes; ++l) v = R::Combine(v, acc[l]);
    return v;
  });
}

namespace reduce_internal {

template <typename T, typename R>
void OuterInner(OpKernelContext* ctx, const T* x, T* y, int64_t outer, int64_t reduce,
                int64_t inner) {
  const int threads = IntraOpPool(ctx)->num_threads() + 1;
  if (inner == 1 && outer < threads && reduce >= 65536) {
    // Few long rows: each row is cut into fixed chunks reduced in parallel, then combined in
    // chunk order (the result does not depend on the thread count).
    constexpr int64_t kChunk = 16384;
    const int64_t chunks = (reduce + kChunk - 1) / kChunk;
    std::vector<T> partial(outer * chunks);
    ParallelFor(ctx, outer * chunks, kChunk, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / chunks, c = t % chunks;
        const int64_t begin = c * kChunk, n = std::min(kChunk, reduce - begin);
        partial[t] = ReduceRow<T, R>(x + o * reduce + begin, n);
      }
    });
    for (int64_t o = 0; o < outer; ++o) y[o] = ReduceRow<T, R>(partial.data() + o * chunks, chunks);
    return;
  }
  if (inner == 1) {
    ParallelFor(ctx, outer, reduce, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) y[o] = ReduceRow<T, R>(x + o * reduce, reduce);
    });
    return;
  }
  // Parallel over (outer, inner-block) pairs; each accumulates `reduce` rows of its block.
  const int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  ParallelFor(ctx, outer * blocks, reduce * std::min(inner, kBlock), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / blocks, i0 = (t % blocks) * kBlock, i1 = std::min(inner, i0 + kBlock);
      T* yo = y + o * inner;
      SimdCall([&] {
        for (int64_t i = i0; i < i1; ++i) yo[i] = R::template Init<T>();
        for (int64_t r = 0; r < reduce; ++r) {
          const T* row = x + (o * reduce + r) * inner;
          for (int64_t i = i0; i < i1; ++i) yo[i] = R::Combine(yo[i], row[i]);
        }
      });
    }
  });
}

template <typename T, typename R>
void General(const Tensor& in, const std::vector<bool>& reduced, const T* x, T* y) {
  const int rank = in.rank();
  // Output strides per input dim (0 on reduced dims).
  std::vector<int64_t> ostride(rank, 0);
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (!reduced[d]) {
      ostride[d] = s;
      s *= in.dim(d);
    }
  }
  std::fill(y, y + s, R::template Init<T>());
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    int64_t o = 0;
    for (int d = 0; d < rank; ++d) o += idx[d] * ostride[d];
    y[o] = R::Combine(y[o], x[i]);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < in.dim(d)) break;
      idx[d] = 0;
    }
  }
}

}  // namespace reduce_internal

// Reduces `in` over the dims flagged in `reduced` into `out` (which holds the kept dims in
// order). Neighbouring dims with the same flag merge; [outer, reduce, inner] layouts take
// the fast path, others a general strided walk.
template <typename T, typename R>
void Reduce(OpKernelContext* ctx, const Tensor& in, const std::vector<bool>& reduced, Tensor* out) {
  std::vector<int64_t> dims;
  std::vector<bool> red;
  for (int d = 0; d < in.rank(); ++d) {
    if (in.dim(d) == 1) continue;
    if (!red.empty() && red.back() == reduced[d])
      dims.back() *= in.dim(d);
    else {
      dims.push_back(in.dim(d));
      red.push_back(reduced[d]);
    }
  }
  int64_t outer = 1, reduce = 1, inner = 1;
  size_t i = 0;
  if (i < red.size() && !red[i]) outer = dims[i++];
  if (i < red.size() && red[i]) reduce = dims[i++];
  if (i < red.size() && !red[i]) inner = dims[i++];
  if (i == red.size()) {
    reduce_internal::OuterInner<T, R>(ctx, in.data<T>(), out->data<T>(), outer, reduce, inner);
  } else {
    reduce_internal::General<T, R>(in, reduced, in.data<T>(), out->data<T>());
  }
}

}  // namespace pf
