#include "placeflow/ops/nn/dnnl_util.h"

#include <omp.h>

#include <cstdlib>

#include "placeflow/ops/half_via_float.h"

namespace pf {

const dnnl::engine& DnnlEngine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

std::unique_lock<std::mutex> LockDnnlCreation() {
  static std::mutex* mu = new std::mutex;
  return std::unique_lock<std::mutex>(*mu);
}

Status DnnlError(const char* what, const dnnl::error& e) {
  return errors::Internal("oneDNN ", what, " failed: ", e.what(), " (status ",
                          static_cast<int>(e.status), ")");
}

bool EnvSwitchOn(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] == '1';
}

bool DnnlNativeBf16() {
  static const bool isa = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  const char* v = std::getenv("PF_ONEDNN_BF16");
  return isa && !(v != nullptr && v[0] == '0');
}

void OneOmpThread() {
  thread_local bool single = (omp_set_num_threads(1), true);
  (void)single;
}

}  // namespace pf
