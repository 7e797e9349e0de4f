// The test binary's main. GPU settings every test run wants (unless the caller set them):
// processes sharing a GPU grow their allocators on demand instead of each taking most of its
// memory (ctest may run several), and cuBLAS uses pedantic math, so GPU results match the
// CPU's to 1e-5.
#define CATCH_CONFIG_RUNNER
#include <stdlib.h>

#include <catch2/catch.hpp>

int main(int argc, char* argv[]) {
  setenv("PF_FORCE_GPU_ALLOW_GROWTH", "true", /*overwrite=*/0);
  setenv("PF_CUBLAS_PEDANTIC", "1", /*overwrite=*/0);
  return Catch::Session().run(argc, argv);
}
