// PF_HOST_DEVICE marks the functions compiled for both devices: the elementwise functors
// (ops/<family>/*_functors.cuh) that a CPU kernel (.cc, host compiler) and its GPU kernel (.cu,
// nvcc) share, so each formula is written once:
//
//   struct SquareF {
//     template <typename T>
//     PF_HOST_DEVICE T operator()(T a) const { return a * a; }
//   };
//
// Under the host compiler it expands to nothing, so the CPU loops compile exactly as they would
// with a plain inline functor (and vectorise the same way).
#pragma once

#ifdef __CUDACC__
#define PF_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PF_HOST_DEVICE
#endif
