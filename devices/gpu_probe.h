// GPU discovery that works with and without the CUDA build.
//
//   int n = pf::CudaDeviceCount();   // 0 without CUDA, without a driver or without a GPU
//   bool built = pf::BuiltWithCuda();
#pragma once

namespace pf {

int CudaDeviceCount();
constexpr bool BuiltWithCuda() {
#ifdef PF_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace pf
