#include "placeflow/ops/nn/dnnl_eltwise.h"

#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>

#include "placeflow/ops/nn/dnnl_util.h"
#include "placeflow/ops/op_util.h"

namespace pf {
namespace {

// Primitives per length. A length is a shard of some tensor: a model has few. Executing one
// primitive from several threads at once is safe (it holds no scratch state).
std::shared_ptr<dnnl::eltwise_forward> Primitive(int64_t n) {
  static std::mutex mu;
  static auto* cache = new std::map<int64_t, std::shared_ptr<dnnl::eltwise_forward>>;
  std::lock_guard<std::mutex> lock(mu);
  // Bounded: a stream of ever-new shapes rebuilds primitives instead of growing forever.
  if (cache->size() >= 1024 && cache->count(n) == 0) cache->clear();
  auto& p = (*cache)[n];
  if (p == nullptr) {
    dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference,
                                  dnnl::algorithm::eltwise_logistic, md, 0.f, 0.f);
    std::unique_lock<std::mutex> creating = LockDnnlCreation();
    p = std::make_shared<dnnl::eltwise_forward>(
        dnnl::eltwise_forward::primitive_desc(d, DnnlEngine()));
  }
  return p;
}

void Run(const float* x, float* y, int64_t n) {
  // oneDNN parallelises with OpenMP; each call here is already one shard of the pool.
  thread_local bool single = (omp_set_num_threads(1), true);
  (void)single;
  thread_local dnnl::stream stream(DnnlEngine());
  std::shared_ptr<dnnl::eltwise_forward> p = Primitive(n);
  dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  dnnl::memory src(md, DnnlEngine(), const_cast<float*>(x));
  dnnl::memory dst(md, DnnlEngine(), y);
  p->execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
}

}  // namespace

void DnnlLogistic(OpKernelContext* ctx, const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  // Shards are whole blocks, so a tensor's shards come in at most two lengths (one primitive
  // each); ~2 cycles an element.
  constexpr int64_t kBlock = 4096;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  ParallelFor(ctx, blocks, 2 * kBlock, [&](int64_t b, int64_t e) {
    Run(x + b * kBlock, y + b * kBlock, std::min(n, e * kBlock) - b * kBlock);
  });
}

}  // namespace pf
