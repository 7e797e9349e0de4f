// Which elementwise functors (cwise_functors.cuh, nn_functors.cuh) have a float32 Highway kernel
// (vec_kernels.h): UnaryElementwise and BinaryElementwise (op_util.h) run that kernel for float,
// and the functor itself for every other dtype and on the GPU. The kernels compute the functors'
// formulas with the same IEEE operations in the same order, so a float result is what the
// functor gives (tanh, sigmoid, exp and log: within the ulp docs/simd.md states).
#ifndef PLACEFLOW_OPS_SIMD_FUNCTOR_MAP_H_
#define PLACEFLOW_OPS_SIMD_FUNCTOR_MAP_H_

#include <optional>

#include "placeflow/ops/math/cwise_functors.cuh"
#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/simd/vec_kernels.h"

namespace pf::simd {

template <typename F>
inline constexpr std::optional<UnaryFn> kUnaryFnOf = std::nullopt;
template <>
inline constexpr std::optional<UnaryFn> kUnaryFnOf<TanhF> = UnaryFn::kTanh;
template <>
inline constexpr std::optional<UnaryFn> kUnaryFnOf<SigmoidF> = UnaryFn::kSigmoid;
template <>
inline constexpr std::optional<UnaryFn> kUnaryFnOf<ExpF> = UnaryFn::kExp;
template <>
inline constexpr std::optional<UnaryFn> kUnaryFnOf<LogF> = UnaryFn::kLog;
template <>
inline constexpr std::optional<UnaryFn> kUnaryFnOf<ErfF> = UnaryFn::kErf;
template <>
inline constexpr std::optional<UnaryFn> kUnaryFnOf<ReluF> = UnaryFn::kRelu;
template <>
inline constexpr std::optional<UnaryFn> kUnaryFnOf<NegF> = UnaryFn::kNeg;
template <>
inline constexpr std::optional<UnaryFn> kUnaryFnOf<SquareF> = UnaryFn::kSquare;
template <>
inline constexpr std::optional<UnaryFn> kUnaryFnOf<SqrtF> = UnaryFn::kSqrt;

template <typename F>
inline constexpr std::optional<BinaryFn> kBinaryFnOf = std::nullopt;
template <>
inline constexpr std::optional<BinaryFn> kBinaryFnOf<AddF> = BinaryFn::kAdd;
template <>
inline constexpr std::optional<BinaryFn> kBinaryFnOf<SubF> = BinaryFn::kSub;
template <>
inline constexpr std::optional<BinaryFn> kBinaryFnOf<MulF> = BinaryFn::kMul;
template <>
inline constexpr std::optional<BinaryFn> kBinaryFnOf<DivF> = BinaryFn::kDiv;
template <>
inline constexpr std::optional<BinaryFn> kBinaryFnOf<MaxF> = BinaryFn::kMax;
template <>
inline constexpr std::optional<BinaryFn> kBinaryFnOf<MinF> = BinaryFn::kMin;
template <>
inline constexpr std::optional<BinaryFn> kBinaryFnOf<ReluGradF> = BinaryFn::kReluGrad;
template <>
inline constexpr std::optional<BinaryFn> kBinaryFnOf<TanhGradF> = BinaryFn::kTanhGrad;
template <>
inline constexpr std::optional<BinaryFn> kBinaryFnOf<SigmoidGradF> = BinaryFn::kSigmoidGrad;
template <>
inline constexpr std::optional<BinaryFn> kBinaryFnOf<SquaredDiffF> = BinaryFn::kSquaredDiff;

}  // namespace pf::simd

#endif  // PLACEFLOW_OPS_SIMD_FUNCTOR_MAP_H_
