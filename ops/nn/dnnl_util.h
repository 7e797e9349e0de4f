// What every oneDNN kernel shares: the one CPU engine, and the lock under which primitives are
// created.
//
//   std::unique_lock<std::mutex> lock = LockDnnlCreation();
//   dnnl::matmul::primitive_desc pd(desc, attr, DnnlEngine());
//   prim = dnnl::matmul(pd);
#ifndef PLACEFLOW_OPS_NN_DNNL_UTIL_H_
#define PLACEFLOW_OPS_NN_DNNL_UTIL_H_

#include <dnnl.hpp>
#include <mutex>

#include "placeflow/core/status.h"

namespace pf {

// The process' CPU engine (never destroyed: kernels may run during static destruction).
const dnnl::engine& DnnlEngine();

// Held while a primitive (and its descriptor) is created. Creation JIT-compiles code and goes
// through oneDNN's process-wide primitive cache, whose own synchronisation lives in the
// uninstrumented library: two kernels creating primitives at once (two towers' first step) were
// reported as a data race by ThreadSanitizer. Creation is rare (each kernel caches its
// primitives), so one lock costs nothing measurable; execution never takes it.
std::unique_lock<std::mutex> LockDnnlCreation();

// Internal error for a failed oneDNN call: "oneDNN <what> failed: <message> (status <n>)".
Status DnnlError(const char* what, const dnnl::error& e);

// Whether the environment variable `name` is "1..." (the kernels' opt-in OpenMP switches:
// PF_CONV_OMP, PF_POOL_OMP, PF_FUSED_MATMUL_OMP). Read once per call site, e.g.
//   static const bool omp = EnvSwitchOn("PF_CONV_OMP");
bool EnvSwitchOn(const char* name);

// Limits the calling thread's OpenMP team to one thread, once per thread: a kernel that runs one
// oneDNN primitive per pool thread (a batch shard) must not start an OpenMP team in each.
void OneOmpThread();

}  // namespace pf

#endif  // PLACEFLOW_OPS_NN_DNNL_UTIL_H_
