// How many CUDA GPUs this process can see: 0 (never an error) without a driver or GPU.
// The only file outside *.cu that may include CUDA headers: it is compiled only when
// PF_WITH_CUDA is on.
#include <cuda_runtime_api.h>

namespace pf {

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

}  // namespace pf
