#include "placeflow/ops/nn/batch_norm_nhwc.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/op_util.h"

namespace pf {
namespace {

// Rows per block: a block of x (and, for the gradient, of dy and y) stays in L2 between the two
// sums of the moments; smaller blocks only cost more partial sums.
int64_t RowsPerBlock(int64_t c, size_t elem) {
  constexpr int64_t kBlockBytes = 128 << 10;
  return std::max<int64_t>(1, kBlockBytes / (c * static_cast<int64_t>(elem)));
}

template <BnActivation A>
using Act = std::integral_constant<BnActivation, A>;

// fn(Act<A>()) for the activation `act`: the loops are compiled once per activation, so none
// tests it per element.
template <typename Fn>
void Dispatch(BnActivation act, const Fn& fn) {
  switch (act) {
    case BnActivation::kRelu:
      return fn(Act<BnActivation::kRelu>());
    case BnActivation::kRelu6:
      return fn(Act<BnActivation::kRelu6>());
    case BnActivation::kIdentity:
      return fn(Act<BnActivation::kIdentity>());
  }
}

// The activation and its gradient: the Relu and Relu6 ops' own functors, so a fused op gives
// the bits of the ops it replaces. The gradient's mask tests the pre-activation x * fa + fd.
template <BnActivation A, typename T>
inline T Activate(T v) {
  if constexpr (A == BnActivation::kRelu) return ReluF()(v);
  if constexpr (A == BnActivation::kRelu6) return Relu6F()(v);
  return v;
}
template <BnActivation A, typename T>
inline T Masked(T dy, T x, const T* fa, const T* fd, int64_t k) {
  if constexpr (A == BnActivation::kRelu) return ReluGradF()(dy, x * fa[k] + fd[k]);
  if constexpr (A == BnActivation::kRelu6) return Relu6GradF()(dy, x * fa[k] + fd[k]);
  return dy;
}

// The loops below take restrict pointers and run inside SimdCall, inlined into its AVX2 and
// AVX-512 copies; each inner loop runs along the c channels of one row.

// Column means m and sums of squared deviations from them, q, of a block x [n, c].
template <typename T>
[[gnu::always_inline]] inline void BlockMoments(const T* __restrict x, int64_t n, int64_t c,
                                                T* __restrict m, T* __restrict q) {
  std::fill(m, m + c, T(0));
  std::fill(q, q + c, T(0));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t k = 0; k < c; ++k) m[k] += x[r * c + k];
  }
  const T count = static_cast<T>(n);
  for (int64_t k = 0; k < c; ++k) m[k] /= count;
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t k = 0; k < c; ++k) {
      const T dev = x[r * c + k] - m[k];
      q[k] += dev * dev;
    }
  }
}

template <BnActivation A, typename T>
[[gnu::always_inline]] inline void NormalizeRows(const T* __restrict x, int64_t n, int64_t c,
                                                 const T* __restrict a, const T* __restrict d,
                                                 T* __restrict y) {
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t k = 0; k < c; ++k) y[r * c + k] = Activate<A>(x[r * c + k] * a[k] + d[k]);
  }
}

template <BnActivation A, typename T>
[[gnu::always_inline]] inline void GradSumRows(const T* __restrict dy, const T* __restrict x,
                                               const T* __restrict fa, const T* __restrict fd,
                                               const T* __restrict mean, int64_t n, int64_t c,
                                               T* __restrict s0, T* __restrict s1) {
  std::fill(s0, s0 + c, T(0));
  std::fill(s1, s1 + c, T(0));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t k = 0; k < c; ++k) {
      const T g = Masked<A>(dy[r * c + k], x[r * c + k], fa, fd, k);
      s0[k] += g;
      s1[k] += g * (x[r * c + k] - mean[k]);
    }
  }
}

// dx = mask(dy) * a + x * b + d. GradApplyRowsInPlace is the same with dx == dy, through one
// pointer: restrict forbids passing one array as both dy and dx, and one pointer allows it (each
// element is read before it is written).
template <BnActivation A, typename T>
[[gnu::always_inline]] inline void GradApplyRows(const T* __restrict dy, const T* __restrict x,
                                                 const T* __restrict fa, const T* __restrict fd,
                                                 const T* __restrict a, const T* __restrict b,
                                                 const T* __restrict d, int64_t n, int64_t c,
                                                 T* __restrict dx) {
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t k = 0; k < c; ++k) {
      const int64_t i = r * c + k;
      dx[i] = Masked<A>(dy[i], x[i], fa, fd, k) * a[k] + x[i] * b[k] + d[k];
    }
  }
}
template <BnActivation A, typename T>
[[gnu::always_inline]] inline void GradApplyRowsInPlace(
    T* __restrict g, const T* __restrict x, const T* __restrict fa, const T* __restrict fd,
    const T* __restrict a, const T* __restrict b, const T* __restrict d, int64_t n, int64_t c) {
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t k = 0; k < c; ++k) {
      const int64_t i = r * c + k;
      g[i] = Masked<A>(g[i], x[i], fa, fd, k) * a[k] + x[i] * b[k] + d[k];
    }
  }
}

}  // namespace

Status ParseBnActivation(const std::string& mode, BnActivation* act) {
  if (mode == "Identity") {
    *act = BnActivation::kIdentity;
  } else if (mode == "Relu") {
    *act = BnActivation::kRelu;
  } else if (mode == "Relu6") {
    *act = BnActivation::kRelu6;
  } else {
    return errors::InvalidArgument("Unsupported activation_mode \"", mode,
                                   "\": expected \"Identity\", \"Relu\" or \"Relu6\"");
  }
  return Status::OK();
}

template <typename T>
void NormalizeCoefficients(const T* scale, const T* offset, const T* mean, const T* inv_std,
                           int64_t c, T* a, T* d) {
  for (int64_t k = 0; k < c; ++k) {
    a[k] = scale[k] * inv_std[k];
    d[k] = offset[k] - mean[k] * a[k];
  }
}

template <typename T>
void NhwcMoments(OpKernelContext* ctx, const T* x, int64_t rows, int64_t c, T* mean, T* var) {
  std::fill(mean, mean + c, T(0));
  std::fill(var, var + c, T(0));
  if (rows == 0 || c == 0) return;
  const int64_t per = RowsPerBlock(c, sizeof(T));
  const int64_t blocks = (rows + per - 1) / per;
  std::vector<T> block_mean(blocks * c), block_m2(blocks * c);
  ParallelFor(ctx, blocks, per * c * 4, [&](int64_t b0, int64_t b1) {
    SimdCall([&] {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t r0 = b * per;
        BlockMoments(x + r0 * c, std::min(rows - r0, per), c, block_mean.data() + b * c,
                     block_m2.data() + b * c);
      }
    });
  });
  // Merge the blocks in order: with n rows so far (mean m, squared deviations q) and a block of
  // nb rows, m += delta * nb / (n + nb) and q += q_b + delta^2 * n * nb / (n + nb).
  std::vector<double> m(c, 0.0), q(c, 0.0);
  double n = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const double nb = static_cast<double>(std::min(rows - b * per, per)), total = n + nb;
    for (int64_t k = 0; k < c; ++k) {
      const double delta = static_cast<double>(block_mean[b * c + k]) - m[k];
      m[k] += delta * nb / total;
      q[k] += static_cast<double>(block_m2[b * c + k]) + delta * delta * n * nb / total;
    }
    n = total;
  }
  for (int64_t k = 0; k < c; ++k) {
    mean[k] = static_cast<T>(m[k]);
    var[k] = static_cast<T>(q[k] / n);
  }
}

template <typename T>
void NhwcNormalize(OpKernelContext* ctx, const T* x, int64_t rows, int64_t c, const T* a,
                   const T* d, BnActivation act, T* y) {
  Dispatch(act, [&](auto activation) {
    ParallelFor(ctx, rows, c * 2, [&](int64_t r0, int64_t r1) {
      SimdCall([&] {
        NormalizeRows<decltype(activation)::value>(x + r0 * c, r1 - r0, c, a, d, y + r0 * c);
      });
    });
  });
}

template <typename T>
void NhwcGradSums(OpKernelContext* ctx, const T* dy, const T* x, const T* fa, const T* fd,
                  BnActivation act, const T* mean, int64_t rows, int64_t c, T* sum_g, T* sum_gxc) {
  std::fill(sum_g, sum_g + c, T(0));
  std::fill(sum_gxc, sum_gxc + c, T(0));
  if (rows == 0 || c == 0) return;
  const int64_t per = RowsPerBlock(c, sizeof(T));
  const int64_t blocks = (rows + per - 1) / per;
  std::vector<T> partial(blocks * 2 * c);
  Dispatch(act, [&](auto activation) {
    ParallelFor(ctx, blocks, per * c * 2, [&](int64_t b0, int64_t b1) {
      SimdCall([&] {
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t at = b * per * c;
          GradSumRows<decltype(activation)::value>(dy + at, x + at, fa, fd, mean,
                                                   std::min(rows - b * per, per), c,
                                                   &partial[b * 2 * c], &partial[(b * 2 + 1) * c]);
        }
      });
    });
  });
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t k = 0; k < c; ++k) {
      sum_g[k] += partial[b * 2 * c + k];
      sum_gxc[k] += partial[(b * 2 + 1) * c + k];
    }
  }
}

template <typename T>
void NhwcGradApply(OpKernelContext* ctx, const T* dy, const T* x, const T* fa, const T* fd,
                   BnActivation act, const T* a, const T* b, const T* d, int64_t rows, int64_t c,
                   T* dx) {
  Dispatch(act, [&](auto activation) {
    ParallelFor(ctx, rows, c * 3, [&](int64_t r0, int64_t r1) {
      constexpr BnActivation kAct = decltype(activation)::value;
      const int64_t at = r0 * c;
      // One loop per SimdCall: with both in one lambda GCC kept the lambda out of line, in
      // baseline SSE2 code (9% of a MobileNetV2 step in perf, against 5% for the sums' pass).
      if (dx == dy) {
        SimdCall([&] { GradApplyRowsInPlace<kAct>(dx + at, x + at, fa, fd, a, b, d, r1 - r0, c); });
      } else {
        SimdCall(
            [&] { GradApplyRows<kAct>(dy + at, x + at, fa, fd, a, b, d, r1 - r0, c, dx + at); });
      }
    });
  });
}

#define PF_INSTANTIATE_BN_NHWC(T)                                                                  \
  template void NormalizeCoefficients<T>(const T*, const T*, const T*, const T*, int64_t, T*, T*); \
  template void NhwcMoments<T>(OpKernelContext*, const T*, int64_t, int64_t, T*, T*);              \
  template void NhwcNormalize<T>(OpKernelContext*, const T*, int64_t, int64_t, const T*, const T*, \
                                 BnActivation, T*);                                                \
  template void NhwcGradSums<T>(OpKernelContext*, const T*, const T*, const T*, const T*,          \
                                BnActivation, const T*, int64_t, int64_t, T*, T*);                 \
  template void NhwcGradApply<T>(OpKernelContext*, const T*, const T*, const T*, const T*,         \
                                 BnActivation, const T*, const T*, const T*, int64_t, int64_t,     \
                                 T*);
PF_INSTANTIATE_BN_NHWC(float)
PF_INSTANTIATE_BN_NHWC(double)
#undef PF_INSTANTIATE_BN_NHWC

}  // namespace pf
