// The common core of the launch headers: what device code (ops/*/*.cu, compiled by nvcc with no
// fmt and no Status) and the host-side GPU OpKernels (ops/*/*_gpu.cc) share. Each op family
// declares its own launchers beside its kernels, in ops/<family>/<family>_launch.h:
//
//   // ops/nn/nn_launch.h
//   #include "placeflow/ops/gpu/launch.h"
//   template <typename T>
//   void BiasAdd(const T* x, const T* bias, T* out, int64_t n, int64_t channels, Stream stream);
//
// Launchers enqueue on `stream` and return at once; their launch errors are picked up by
// GpuDevice::CheckLaunch. Launch headers hold plain types and declarations only.
#pragma once

#include <cstdint>

struct CUstream_st;

namespace pf::gpu {

using Stream = CUstream_st*;
constexpr int kMaxDims = 8;

// Element types the device code is instantiated for.
enum class Type { kF32, kF64, kI32, kI64, kBool };

// NumPy broadcasting of two inputs into an output of `rank` dims (strides 0 where broadcast).
struct BroadcastDims {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t a_strides[kMaxDims] = {};
  int64_t b_strides[kMaxDims] = {};
  bool same_shape = false;  // fast path: a, b and out have one shape
  bool a_scalar = false;
  bool b_scalar = false;
};

// The generic elementwise launchers: y[i] = F()(x[i]) and out = F()(a, b) with broadcasting, for
// a functor F of an ops/<family>/*_functors.cuh (the one the CPU kernel runs). Defined in
// ops/gpu/elementwise.cuh; the family's .cu instantiates each (F, T) its kernels launch with
// PF_GPU_UNARY / PF_GPU_BINARY / PF_GPU_COMPARE, and a missing one is a link error.
template <typename F, typename T, typename TOut>
void Unary(const T* x, TOut* y, int64_t n, Stream stream);
template <typename F, typename T, typename TOut>
void Binary(const T* a, const T* b, TOut* out, int64_t n, const BroadcastDims& dims, Stream stream);

}  // namespace pf::gpu
