#include "tools/gemm_bench.h"

#include <dnnl.h>
#include <omp.h>

#include <cstdio>
#include <thread>
#include <vector>

#include "tools/bench_util.h"

namespace pf::bench {
namespace {

struct GemmShape {
  bool ta, tb;
  int64_t m, n, k;
};

// Forward x.W, dW = x^T.g and dX = g.W^T of each dense layer, as the step runs them.
std::vector<GemmShape> StepGemms(int64_t batch, const std::vector<int64_t>& dims) {
  std::vector<GemmShape> out;
  for (size_t l = 0; l + 1 < dims.size(); ++l) {
    const int64_t in = dims[l], o = dims[l + 1];
    out.push_back({false, false, batch, o, in});
    out.push_back({true, false, in, o, batch});
    if (l > 0) out.push_back({false, true, batch, in, o});
  }
  return out;
}

double Gflop(const std::vector<GemmShape>& shapes) {
  double f = 0;
  for (const GemmShape& s : shapes) f += 2.0 * s.m * s.n * s.k;
  return f / 1e9;
}

// Seconds for one pass over `shapes` through sessions' MatMul kernels.
double ThroughMatMul(const std::vector<GemmShape>& shapes) {
  Graph g;
  Scope r = Scope::Root(&g);
  std::vector<Output> outs;
  for (const GemmShape& s : shapes) {
    Tensor a(DT_FLOAT, s.ta ? Shape{s.k, s.m} : Shape{s.m, s.k});
    Tensor b(DT_FLOAT, s.tb ? Shape{s.n, s.k} : Shape{s.k, s.n});
    std::fill(a.data<float>(), a.data<float>() + a.num_elements(), 0.5f);
    std::fill(b.data<float>(), b.data<float>() + b.num_elements(), 0.25f);
    outs.push_back(ops::MatMul(r, ops::Const(r, a), ops::Const(r, b), s.ta, s.tb));
  }
  Session sess(g, OnDevice(false));
  auto pass = [&] {
    for (const Output& o : outs) sess.Run({o});
  };
  pass();
  return TimeMedian([&] {
           for (int i = 0; i < 10; ++i) pass();
         }) /
         10;
}

// Seconds for one pass calling dnnl_sgemm directly with `threads` OpenMP threads, on tensors'
// buffers (64-byte aligned, as MatMul's: oneDNN's AVX2 sgemm runs some shapes 1.3-1.5x slower on
// 32-byte-aligned operands than on the 16-byte-aligned ones std::vector gives).
double DirectSgemm(const std::vector<GemmShape>& shapes, int threads) {
  struct Buffers {
    Tensor a, b, c;
  };
  std::vector<Buffers> bufs;
  for (const GemmShape& s : shapes) {
    Buffers& b = bufs.emplace_back(Buffers{
        Tensor(DT_FLOAT, {s.m, s.k}), Tensor(DT_FLOAT, {s.k, s.n}), Tensor(DT_FLOAT, {s.m, s.n})});
    std::fill(b.a.data<float>(), b.a.data<float>() + b.a.num_elements(), 0.5f);
    std::fill(b.b.data<float>(), b.b.data<float>() + b.b.num_elements(), 0.25f);
  }
  omp_set_num_threads(threads);
  auto pass = [&] {
    for (size_t i = 0; i < shapes.size(); ++i) {
      const GemmShape& s = shapes[i];
      dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.f, bufs[i].a.data<float>(),
                 s.ta ? s.m : s.k, bufs[i].b.data<float>(), s.tb ? s.k : s.n, 0.f,
                 bufs[i].c.data<float>(), s.n);
    }
  };
  pass();
  const double t = TimeMedian([&] {
                     for (int i = 0; i < 10; ++i) pass();
                   }) /
                   10;
  omp_set_num_threads(1);
  return t;
}

}  // namespace

void GemmThreading() {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const struct {
    const char* name;
    std::vector<GemmShape> shapes;
  } sets[] = {{"mlp_seed000", StepGemms(2000, {600, 512, 128, 128, 1})},
              {"mnist_mlp", StepGemms(100, {784, 500, 10})}};
  for (const auto& [name, shapes] : sets) {
    const double pool = ThroughMatMul(shapes);
    const double omp = DirectSgemm(shapes, cores);
    const double one = DirectSgemm(shapes, 1);
    const double gflop = Gflop(shapes);
    std::printf(
        "gemm_threading model=%s pool_split_ms=%.3f onednn_omp_ms=%.3f onednn_1core_ms=%.3f "
        "pool_gflops=%.1f omp_gflops=%.1f omp_over_pool=%.2f cores=%d gemms=%zu repeats=%d\n",
        name, pool * 1e3, omp * 1e3, one * 1e3, gflop / pool, gflop / omp, omp / pool, cores,
        shapes.size(), kRepeats);
  }
}

}  // namespace pf::bench
