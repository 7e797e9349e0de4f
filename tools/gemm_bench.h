// pf-bench's GEMM threading figure (tools/gemm_bench.cc).
#pragma once

namespace pf::bench {

// gemm_threading: the GEMMs of mlp_seed000's step (batch 2000) and mnist_mlp's (batch 100)
// through placeflow's MatMul (the output split over the session's pool, oneDNN sgemm with
// OpenMP at 1 thread per shard) against dnnl_sgemm called directly with OpenMP threading
// itself over all cores, and on one core.
void GemmThreading();

}  // namespace pf::bench
