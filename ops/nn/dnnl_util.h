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

namespace pf {

// The process' CPU engine (never destroyed: kernels may run during static destruction).
const dnnl::engine& DnnlEngine();

// Held while a primitive (and its descriptor) is created. Creation JIT-compiles code and goes
// through oneDNN's process-wide primitive cache, whose own synchronisation lives in the
// uninstrumented library: two kernels creating primitives at once (two towers' first step) were
// reported as a data race by ThreadSanitizer. Creation is rare (each kernel caches its
// primitives), so one lock costs nothing measurable; execution never takes it.
std::unique_lock<std::mutex> LockDnnlCreation();

}  // namespace pf

#endif  // PLACEFLOW_OPS_NN_DNNL_UTIL_H_
