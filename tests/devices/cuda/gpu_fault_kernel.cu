// A kernel that faults on purpose (tests only): one thread writes 2^40 floats past `base`,
// far outside any allocation, which the GPU reports as an illegal address.
#include <cuda_runtime.h>

namespace pf::testing {
namespace {
__global__ void WriteFarOutOfBounds(float* base, long long offset) { base[offset] = 1.f; }
}  // namespace

void LaunchOutOfBoundsWrite(void* stream, float* base) {
  WriteFarOutOfBounds<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(base, 1LL << 40);
}

}  // namespace pf::testing
