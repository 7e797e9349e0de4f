#include "placeflow/ops/nn/dnnl_util.h"

namespace pf {

const dnnl::engine& DnnlEngine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

std::unique_lock<std::mutex> LockDnnlCreation() {
  static std::mutex* mu = new std::mutex;
  return std::unique_lock<std::mutex>(*mu);
}

}  // namespace pf
