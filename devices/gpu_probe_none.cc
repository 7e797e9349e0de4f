// CPU-only build: no GPUs.
namespace pf {
int CudaDeviceCount() { return 0; }
}  // namespace pf
