// pf-bench: prints one line per figure, "name key=value ...", each a median over repeats.
//
//   pf-bench                       # every figure
//   pf-bench executor_chain session_run_overhead
//
// Figures: executor_chain (us per node, a chain of 10,000 tiny ops), while_loop (us per
// iteration of a scalar loop), executor_wide (speedup of
// independent branches with 2 threads over 1), session_run_overhead (us per Run of a trivial
// graph), mlp_seed000_forward (ms per forward pass at batch 2000), matmul_gflops (the BLAS
// rate of the model's largest GEMM, for context), mlp_seed000_step (one SGD step at batch
// 2000 next to the same step's 11 GEMMs run alone), mnist_mlp_epoch (examples/s of a training
// epoch at batch 100, synthetic data of MNIST's shape), towers_overhead (a 1-tower replicated
// mlp_seed000 step against the plain graph's), towers_scaling (examples/s of mlp_seed000 on 1, 2
// and 4 towers of CPU devices, both aggregation modes, with the traced step's aggregation and
// transfer time; on /gpu:i too when GPUs are visible), mlp_seed000_step_gpu (the step and its
// GEMMs on /gpu:0), gpu_copy_bandwidth (GB/s host<->GPU from pinned and pageable memory, and
// device-to-device). GPU figures print "skipped=no_gpu" without a GPU. Cluster figures
// (tools/dist_bench.h: grpc_recv_bandwidth, dist_step_overhead, dist_mlp_seed000_step,
// allreduce_bandwidth) start pf-server processes on loopback; they print "skipped=no_grpc" in a
// build without gRPC. Convolution figures (tools/cnn_bench.h): conv_lenet_step and
// mobilenet_small_step (ms per training step at batch 128, peak RSS), mobilenet_v2_step (the full
// MobileNetV2 on 224x224x3 at batch 8), conv2d_gflops (a 3x3 layer
// forward and backward next to the oneDNN primitives called directly).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "placeflow/devices/copy_registry.h"
#include "placeflow/devices/gpu_probe.h"
#include "placeflow/models/models.h"
#include "placeflow/placer/placer.h"
#include "tools/bench_util.h"
#include "tools/cnn_bench.h"
#include "tools/data_bench.h"
#include "tools/dist_bench.h"
#include "tools/gemm_bench.h"
#include "tools/io_bench.h"
#include "tools/place_bench.h"
#include "tools/rnn_bench.h"
#include "tools/run_main.h"
#include "tools/simd_bench.h"
#include "tools/summaries_bench.h"
#include "tools/tower_timing.h"

namespace {

using pf::bench::kRepeats;
using pf::bench::Median;
using pf::bench::OnDevice;
using pf::bench::TimeMedian;

// CPU figures hide GPUs, so they mean the same on every machine; GPU figures use GPU 0.
void ExecutorChain() {
  constexpr int kNodes = 10000;
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  pf::Output x = pf::ops::Const(root, 1.f);
  for (int i = 0; i < kNodes; ++i) x = pf::ops::Neg(root, x);
  pf::Session sess(g, OnDevice(false));
  sess.Run({x});  // prepare once
  double s = TimeMedian([&] {
    for (int i = 0; i < 10; ++i) sess.Run({x});
  });
  std::printf("executor_chain us_per_node=%.3f nodes=%d repeats=%d\n", s / 10 / kNodes * 1e6,
              kNodes, kRepeats);
}

// us per iteration of a while loop adding 1 to a scalar, 100,000 iterations (issue 35's goal,
// against tf.compat.v1.while_loop).
void WhileLoop() {
  constexpr int kIterations = 100000;
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  pf::Output n = pf::ops::Placeholder(root.WithOpName("n"), pf::DT_INT32, {});
  std::vector<pf::Output> out = pf::ops::WhileLoop(
      root,
      [&](const pf::Scope& s, const std::vector<pf::Output>& v) {
        return pf::ops::Less(s, v[0], n);
      },
      [](const pf::Scope& s, const std::vector<pf::Output>& v) {
        return std::vector<pf::Output>{pf::ops::Add(s, v[0], pf::ops::ConstInt(s, 1))};
      },
      {pf::ops::ConstInt(root, 0)});
  pf::Session sess(g, OnDevice(false));
  sess.Run({{n, pf::Tensor::Scalar<int32_t>(100)}}, out);  // prepare once
  const pf::Tensor count = pf::Tensor::Scalar<int32_t>(kIterations);
  double s = TimeMedian([&] { sess.Run({{n, count}}, out); });
  std::printf("while_loop us_per_iteration=%.3f iterations=%d repeats=%d\n", s / kIterations * 1e6,
              kIterations, kRepeats);
}

void ExecutorWide() {
  // 8 independent chains of 40 Tanh on 4096 floats: each op is too small to split itself, so
  // only inter-op parallelism can speed the step up.
  auto step_seconds = [](int threads) {
    pf::Graph g;
    pf::Scope root = pf::Scope::Root(&g);
    std::vector<pf::Output> ends;
    for (int b = 0; b < 8; ++b) {
      pf::Output x = pf::ops::Const(root, pf::Tensor(pf::DT_FLOAT, {4096}));
      for (int i = 0; i < 40; ++i) x = pf::ops::Tanh(root, x);
      ends.push_back(x);
    }
    pf::Output sum = pf::ops::AddN(root, ends);
    pf::SessionOptions opts;
    opts.num_threads = threads;
    pf::Session sess(g, opts);
    sess.Run({sum});
    return TimeMedian([&] {
             for (int i = 0; i < 20; ++i) sess.Run({sum});
           }) /
           20;
  };
  double one = step_seconds(1), two = step_seconds(2);
  std::printf("executor_wide speedup=%.2f ms_1thread=%.3f ms_2threads=%.3f branches=8 repeats=%d\n",
              one / two, one * 1e3, two * 1e3, kRepeats);
}

void SessionRunOverhead() {
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  pf::Output y = pf::ops::Neg(root, pf::ops::Const(root, 1.f));
  pf::Session sess(g, OnDevice(false));
  sess.Run({y});
  constexpr int kRuns = 20000;
  double s = TimeMedian([&] {
    for (int i = 0; i < kRuns; ++i) sess.Run({y});
  });
  std::printf("session_run_overhead us_per_run=%.3f runs=%d repeats=%d\n", s / kRuns * 1e6, kRuns,
              kRepeats);
}

// The seed MLP, initialised, with its batch of 2000.
struct SeedModel {
  pf::Graph g;
  pf::models::Model m;
  std::unique_ptr<pf::Session> sess;
  pf::Tensor x, t;
  explicit SeedModel(bool gpu = false) {
    pf::Scope root = pf::Scope::Root(&g);
    m = pf::models::BuildMlpSeed000(root, {});
    sess = std::make_unique<pf::Session>(g, OnDevice(gpu));
    sess->Run({}, {}, {pf::GlobalVariablesInitializer(root)});
    pf::models::SeedBatch(2000, 1, &x, &t);
  }
};

void MlpSeed000Forward() {
  SeedModel s0;
  // References, not a structured binding: clang 14 (the sanitizer builds) cannot capture one.
  const pf::models::Model& m = s0.m;
  const pf::Tensor &x = s0.x, &t = s0.t;
  pf::Session& sess = *s0.sess;
  sess.Run({{m.input, x}, {m.target, t}}, {m.loss});
  double s = TimeMedian([&] {
               for (int i = 0; i < 10; ++i) sess.Run({{m.input, x}, {m.target, t}}, {m.loss});
             }) /
             10;
  const double flops = 2.0 * 2000 * (600 * 512 + 512 * 128 + 128 * 128 + 128);
  std::printf(
      "mlp_seed000_forward ms_per_step=%.3f batch=2000 gemm_gflop=%.3f effective_gflops=%.1f "
      "repeats=%d\n",
      s * 1e3, flops / 1e9, flops / s / 1e9, kRepeats);
}

void MatMulRate() {
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  pf::Output a = pf::ops::Const(root, pf::Tensor(pf::DT_FLOAT, {2000, 600}));
  pf::Output b = pf::ops::Const(root, pf::Tensor(pf::DT_FLOAT, {600, 512}));
  pf::Output c = pf::ops::MatMul(root, a, b);
  pf::Session sess(g, OnDevice(false));
  sess.Run({c});
  double s = TimeMedian([&] {
               for (int i = 0; i < 10; ++i) sess.Run({c});
             }) /
             10;
  std::printf("matmul_gflops gflops=%.1f m=2000 k=600 n=512 repeats=%d\n",
              2.0 * 2000 * 600 * 512 / s / 1e9, kRepeats);
}

void MlpSeed000StepOn(bool gpu) {
  SeedModel s0(gpu);
  // References, not a structured binding: clang 14 (the sanitizer builds) cannot capture one.
  const pf::models::Model& m = s0.m;
  const pf::Tensor &x = s0.x, &t = s0.t;
  pf::Session& sess = *s0.sess;
  for (int i = 0; i < 3; ++i) sess.Run({{m.input, x}, {m.target, t}}, {}, {m.train_op});
  // The same step's GEMMs alone: forward x.W for 4 layers, dW = a^T.g for 4, dA = g.W^T for 3.
  pf::Graph gg;
  pf::Scope r = pf::Scope::Root(&gg);
  auto c = [&](int64_t a, int64_t b) {
    return pf::ops::Const(r, pf::Tensor(pf::DT_FLOAT, {a, b}));
  };
  const int64_t dims[] = {600, 512, 128, 128, 1};
  std::vector<pf::Output> gemms;
  for (int l = 0; l < 4; ++l) {
    const int64_t in = dims[l], out = dims[l + 1];
    gemms.push_back(pf::ops::MatMul(r, c(2000, in), c(in, out)));
    gemms.push_back(pf::ops::MatMul(r, c(2000, in), c(2000, out), true, false));
    if (l > 0) gemms.push_back(pf::ops::MatMul(r, c(2000, out), c(in, out), false, true));
  }
  pf::Session gs(gg, OnDevice(gpu));
  // One GEMM after another, as in the step (each uses the whole pool; on a GPU they queue on
  // one stream, run as targets of one call so no result is copied back). Step and GEMM
  // timings alternate within each repeat so both see the same machine noise.
  std::vector<pf::Operation> gemm_ops;
  for (const pf::Output& o : gemms) gemm_ops.emplace_back(o.node);
  auto run_gemms = [&] {
    if (gpu) {
      gs.Run({}, {}, gemm_ops);
    } else {
      for (const pf::Output& o : gemms) gs.Run({o});
    }
  };
  run_gemms();
  std::vector<double> steps, gemm_times;
  for (int r = 0; r < kRepeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) sess.Run({{m.input, x}, {m.target, t}}, {}, {m.train_op});
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) run_gemms();
    auto t2 = std::chrono::steady_clock::now();
    steps.push_back(std::chrono::duration<double>(t1 - t0).count() / 10);
    gemm_times.push_back(std::chrono::duration<double>(t2 - t1).count() / 10);
  }
  const double step = Median(steps), gemm = Median(gemm_times);
  const double flops =
      2.0 * 2000 * (2 * (600 * 512 + 512 * 128 + 128 * 128 + 128) + 512 * 128 + 128 * 128 + 128);
  std::printf(
      "%s ms_per_step=%.3f gemm_only_ms=%.3f ratio_to_gemm=%.2f gemm_gflop=%.3f gemm_gflops=%.1f "
      "batch=2000 repeats=%d\n",
      gpu ? "mlp_seed000_step_gpu" : "mlp_seed000_step", step * 1e3, gemm * 1e3, step / gemm,
      flops / 1e9, flops / gemm / 1e9, kRepeats);
}

void MlpSeed000Step() { MlpSeed000StepOn(false); }

// GPU figures print a "skipped" line without a GPU (never a number).
bool GpuOrSkip(const char* figure) {
  if (pf::CudaDeviceCount() > 0) return true;
  std::printf("%s skipped=no_gpu cuda_build=%d\n", figure, pf::BuiltWithCuda() ? 1 : 0);
  return false;
}

void MlpSeed000StepGpu() {
  if (GpuOrSkip("mlp_seed000_step_gpu")) MlpSeed000StepOn(true);
}

// What the CUDA runtime reports (gpu_check.sh's first line): GPU count, driver and runtime
// versions, the probe's error if GPUs exist but cannot be used; then whether the CUDA backend
// library loaded (and from where, or why not), and each device's mapping.
void GpuInfo() {
  const pf::GpuProbe& p = pf::ProbeGpus();
  std::printf("gpu_info count=%d cuda_build=%d %s status=%s\n", p.count,
              pf::BuiltWithCuda() ? 1 : 0, p.Versions().c_str(),
              p.status.ok() ? "ok" : p.status.message().c_str());
  std::printf("gpu_info backend: %s\n", p.backend.c_str());
  if (p.count == 0) return;
  pf::GpuOptions o;
  auto gpus = pf::CreateGpuDevices(pf::PlanGpuDevices(p.count, o).ValueOrThrow(), o);
  if (!gpus.ok()) {
    std::printf("gpu_info error=%s\n", gpus.status().message().c_str());
    return;
  }
  for (const auto& d : gpus.value()) {
    std::printf("gpu_info %s -> %s\n", d->name().c_str(), d->Description().c_str());
  }
}

// cuBLAS float32 GEMM (4096^3) on /gpu:0 under each math mode: default (the product's),
// pedantic (what the GPU tests force, to match the CPU at 1e-5) and TF32 tensor cores.
void GpuMatmulMath() {
  if (!GpuOrSkip("gpu_matmul_math")) return;
  const int64_t n = 4096;
  for (const char* mode : {"default", "pedantic", "tf32"}) {
    pf::Graph g;
    pf::Scope gpu = pf::Scope::Root(&g).WithDevice("/gpu:0");
    pf::Output a = pf::ops::Const(gpu, pf::Tensor(pf::DT_FLOAT, {n, n}));
    pf::Output c = pf::ops::MatMul(gpu, a, a);
    for (int i = 0; i < 9; ++i) c = pf::ops::MatMul(gpu, c, a);
    pf::Output done = pf::ops::Slice(gpu, c, {0, 0}, {1, 1});  // fetch 4 bytes, not 64 MiB
    pf::SessionOptions so;
    so.gpu_options.pedantic_math = std::string(mode) == "pedantic";
    so.gpu_options.allow_tf32 = std::string(mode) == "tf32";
    pf::Session sess(g, so);
    sess.Run({done});
    const double s = TimeMedian([&] { sess.Run({done}); }) / 10;
    std::printf("gpu_matmul_math mode=%s tflops=%.1f m=k=n=%lld gemms_per_run=10 repeats=%d\n",
                mode, 2.0 * n * n * n / s / 1e12, static_cast<long long>(n), kRepeats);
    std::fflush(stdout);
  }
}

// Host<->GPU copy bandwidth of a 256 MiB tensor: from pinned memory (one DMA) and from pageable
// memory (staged through pinned memory), next to a device-to-device copy on the same GPU.
void GpuCopyBandwidth() {
  if (!GpuOrSkip("gpu_copy_bandwidth")) return;
  pf::GpuOptions o;
  o.visible_device_list = "0";
  auto gpus = pf::CreateGpuDevices(pf::PlanGpuDevices(pf::CudaDeviceCount(), o).ValueOrThrow(), o)
                  .ValueOrThrow();
  pf::Device* gpu = gpus[0].get();
  std::unique_ptr<pf::Device> cpu = pf::NewCpuDevice(0);
  const int64_t n = 64 << 20;  // floats
  const double gb = n * 4.0 / 1e9;
  pf::Tensor pageable(pf::DT_FLOAT, {n});
  pf::Tensor pinned =
      pf::CopyRegistry::Global()
          ->Copy(pf::CopyRegistry::Global()->Copy(pageable, cpu.get(), gpu).ValueOrThrow(), gpu,
                 cpu.get())
          .ValueOrThrow();
  auto h2d = [&](const pf::Tensor& src) {
    return TimeMedian([&] {
      pf::Tensor t = pf::CopyRegistry::Global()->Copy(src, cpu.get(), gpu).ValueOrThrow();
      static_cast<void>(gpu->Sync());
    });
  };
  const double h2d_pinned = h2d(pinned), h2d_pageable = h2d(pageable);
  pf::Tensor on_gpu = pf::CopyRegistry::Global()->Copy(pinned, cpu.get(), gpu).ValueOrThrow();
  const double d2h =
      TimeMedian([&] { pf::CopyRegistry::Global()->Copy(on_gpu, gpu, cpu.get()).ValueOrThrow(); });
  const double d2d = TimeMedian([&] {
    pf::Tensor copy(gpu->GetAllocator(), pf::DT_FLOAT, {n});
    static_cast<void>(
        gpu->CopyWithinDevice(copy.raw_data(), on_gpu.raw_data(), on_gpu.TotalBytes()));
    static_cast<void>(gpu->Sync());
  });
  std::printf(
      "gpu_copy_bandwidth h2d_pinned_gbs=%.1f d2h_pinned_gbs=%.1f h2d_pageable_gbs=%.1f "
      "d2d_gbs=%.1f bytes=%lld repeats=%d\n",
      gb / h2d_pinned, gb / d2h, gb / h2d_pageable, 2 * gb / d2d, static_cast<long long>(n * 4),
      kRepeats);
}

void MnistMlpEpoch() {
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  pf::models::Model m = pf::models::BuildMnistMlp(root, {});
  pf::Session sess(g, OnDevice(false));
  sess.Run({}, {}, {pf::GlobalVariablesInitializer(root)});
  // 60,000 examples of MNIST's shape; the loader and shuffling are not what is timed here.
  std::mt19937 rng(1);
  std::vector<std::pair<pf::Tensor, pf::Tensor>> batches;
  for (int b = 0; b < 20; ++b) {
    pf::Tensor x(pf::DT_FLOAT, {100, 784}), y(pf::DT_INT32, {100});
    for (float& v : x.flat<float>()) v = static_cast<float>(rng() % 256) / 255.f;
    for (int32_t& v : y.flat<int32_t>()) v = static_cast<int32_t>(rng() % 10);
    batches.emplace_back(x, y);
  }
  for (int i = 0; i < 20; ++i)
    sess.Run({{m.input, batches[i].first}, {m.target, batches[i].second}}, {}, {m.train_op});
  double epoch = TimeMedian([&] {
    for (int i = 0; i < 600; ++i) {
      const auto& [x, y] = batches[i % batches.size()];
      sess.Run({{m.input, x}, {m.target, y}}, {}, {m.train_op});
    }
  });
  std::printf("mnist_mlp_epoch examples_per_s=%.0f seconds=%.3f batch=100 steps=600 repeats=%d\n",
              60000 / epoch, epoch, kRepeats);
}

// A plain mlp_seed000 step against the same model built by ReplicateTowers on one device,
// alternating blocks of 10 steps so both see the same machine noise.
void TowersOverhead() {
  struct Built {
    pf::Graph g;
    pf::models::Model m;
    std::unique_ptr<pf::Session> sess;
    explicit Built(bool towers) {
      pf::Scope root = pf::Scope::Root(&g);
      pf::models::ModelOptions o;
      if (towers) o.towers = pf::train::TowerOptions{};  // one tower on /cpu:0, variables there
      m = pf::models::BuildMlpSeed000(root, o);
      sess = std::make_unique<pf::Session>(g);
      sess->Run({}, {}, {pf::GlobalVariablesInitializer(root)});
    }
  };
  Built plain(false), tower(true);
  pf::Tensor x, t;
  pf::models::SeedBatch(2000, 1, &x, &t);
  auto block = [&](Built& b) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) b.sess->Run({{b.m.input, x}, {b.m.target, t}}, {}, {b.m.train_op});
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 10;
  };
  block(plain);
  block(tower);
  std::vector<double> p, r;
  for (int i = 0; i < 2 * kRepeats; ++i) {
    p.push_back(block(plain));
    r.push_back(block(tower));
  }
  const double mp = Median(p), mr = Median(r);
  std::printf(
      "towers_overhead percent=%.2f plain_ms=%.3f one_tower_ms=%.3f batch=2000 repeats=%d\n",
      100 * (mr / mp - 1), mp * 1e3, mr * 1e3, 2 * kRepeats);
}

void TowersScaling() {
  std::vector<std::string> kinds = {"cpu"};
  if (pf::CudaDeviceCount() > 0) kinds.push_back("gpu");
  for (const std::string& kind : kinds) {
    double base = 0;
    for (int n : {1, 2, 4}) {
      for (auto a :
           {pf::train::Aggregation::kParameterDevice, pf::train::Aggregation::kAllReduce}) {
        pf::towers::TimingOptions o;
        o.towers = n;
        o.kind = kind;
        o.aggregation = a;
        o.steps = 20;
        pf::towers::Timing t = pf::towers::TimeTowers(o);
        if (n == 1 && a == pf::train::Aggregation::kParameterDevice) base = t.examples_per_s;
        std::printf(
            "towers_scaling kind=%s towers=%d aggregation=%s examples_per_s=%.0f speedup=%.2f "
            "ms_per_step=%.3f "
            "aggregation_ms=%.3f transfer_ms=%.3f transfers=%d batch=2000 steps=%d\n",
            kind.c_str(), n, a == pf::train::Aggregation::kAllReduce ? "allreduce" : "param",
            t.examples_per_s, t.examples_per_s / base, t.ms_per_step, t.aggregation_ms,
            t.transfer_ms, t.transfers, 20);
        std::fflush(stdout);
      }
    }
  }
}

struct Figure {
  const char* name;
  const char* what;  // one line for --help
  std::function<void()> run;
};

const std::vector<Figure>& Figures() {
  static const std::vector<Figure> figures = {
      {"executor_chain", "us per node of a chain of 10,000 tiny ops", ExecutorChain},
      {"executor_wide", "speedup of 8 independent branches with 2 threads over 1", ExecutorWide},
      {"session_run_overhead", "us per Run of a trivial graph", SessionRunOverhead},
      {"while_loop", "us per iteration of a while loop adding 1 to a scalar", WhileLoop},
      {"lstm_step",
       "ms per forward and backward pass of a DynamicRnn LSTM (128 units), fused and as a loop",
       pf::bench::LstmStep},
      {"mlp_seed000_forward", "ms per mlp_seed000 forward pass at batch 2000", MlpSeed000Forward},
      {"matmul_gflops", "BLAS GFLOP/s of mlp_seed000's largest GEMM, for context", MatMulRate},
      {"gemm_threading", "the MLP steps' GEMMs: the pool's split against oneDNN's own threads",
       pf::bench::GemmThreading},
      {"mlp_seed000_step", "one SGD step at batch 2000 next to its 11 GEMMs run alone",
       MlpSeed000Step},
      {"mnist_mlp_epoch", "examples/s of a mnist_mlp epoch at batch 100 (synthetic data)",
       MnistMlpEpoch},
      {"mnist_mlp_epoch_pipeline",
       "mnist_mlp_epoch reading IteratorGetNext (shuffle, batch, prefetch) against feeds",
       pf::bench::MnistMlpEpochPipeline},
      {"input_pipeline",
       "examples/s of MNIST from TFRecord: shuffle, batch, parse, prefetch (tf.data's peer)",
       pf::bench::InputPipeline},
      {"image_folder", "images/s of 2,000 JPEGs decoded and resized to 224x224, batch 64",
       pf::bench::ImageFolder},
      {"placer", "seconds to place a 100,000-node graph on 4 CPU devices", pf::bench::PlacerFigure},
      {"placer_auto", "the same graph without requests, placed by each automatic algorithm",
       pf::bench::PlacerAutoFigure},
      {"device_rates", "one CPU thread's GFLOP/s, GB/s and per-node µs, saved for the cost model",
       pf::bench::DeviceRatesFigure},
      {"auto_placement",
       "2 one-thread CPU devices: steps placed 5 ways, measured and predicted (PF_BENCH_ROUNDS, 3)",
       pf::bench::AutoPlacementFigure},
      {"towers_overhead", "a 1-tower replicated mlp_seed000 step against the plain graph's",
       TowersOverhead},
      {"towers_scaling", "examples/s of mlp_seed000 on 1, 2 and 4 towers, both aggregations",
       TowersScaling},
      {"gpu_info", "the GPU probe: count, driver and runtime versions, device mapping", GpuInfo},
      {"mlp_seed000_step_gpu", "mlp_seed000_step on /gpu:0", MlpSeed000StepGpu},
      {"gpu_matmul_math", "cuBLAS TFLOP/s of a 4096^3 GEMM: default, pedantic and TF32 math",
       GpuMatmulMath},
      {"gpu_copy_bandwidth", "GB/s host<->GPU (pinned, pageable) and device to device",
       GpuCopyBandwidth},
      {"grpc_recv_bandwidth", "GB/s of a 64 MiB variable pulled from another task (RecvTensor)",
       pf::bench::GrpcRecvBandwidth},
      {"allreduce_bandwidth", "GB/s of a 64 MiB all-reduce across 2 and 3 worker tasks",
       pf::bench::AllreduceBandwidth},
      {"dist_step_overhead", "us per step of a trivial graph spanning two tasks",
       pf::bench::DistStepOverhead},
      {"dist_mlp_seed000_step", "mlp_seed000's step, variables on ps:0, against one process",
       pf::bench::DistMlpSeed000Step},
      {"conv_lenet_step", "ms per lenet training step at batch 128, peak RSS",
       pf::bench::ConvLenetStep},
      {"mobilenet_small_step", "ms per mobilenet_v2_small training step at batch 128, peak RSS",
       pf::bench::MobilenetSmallStep},
      {"mobilenet_v2_step", "ms per MobileNetV2 training step, 224x224x3, batch 8, peak RSS",
       pf::bench::MobilenetV2Step},
      {"conv2d_gflops", "a 3x3 conv layer forward and backward next to oneDNN called directly",
       pf::bench::Conv2dGflops},
      {"summaries_overhead", "a mnist_mlp step with pf-train's --logdir summaries against none",
       pf::bench::SummariesOverhead},
      {"simd_targets", "ns per element of each CPU kernel family under each ISA cap",
       pf::bench::SimdTargets},
      {"lstm_gemm", "an LSTM step's products: oneDNN sgemm against the packed GEMM, per ISA cap",
       pf::bench::LstmGemm},
      {"crc32c", "GB/s of TFRecord's CRC32C: the library's (ISA-L) and the SSE4.2 fallback",
       pf::bench::Crc32cFigure}};
  return figures;
}

void PrintHelp(FILE* out) {
  std::fprintf(out,
               "usage: pf-bench [FIGURE...]\n"
               "Prints one line per figure, \"name key=value ...\", each a median over repeats; "
               "every figure when none is named.\nGPU figures print skipped=no_gpu without a GPU, "
               "cluster figures skipped=no_grpc without the cluster runtime.\n\nfigures:\n");
  for (const Figure& f : Figures()) std::fprintf(out, "  %-22s %s\n", f.name, f.what);
}

int Main(int argc, char** argv) {
  std::vector<std::string> wanted(argv + 1, argv + argc);
  for (const std::string& w : wanted) {
    if (w == "--help" || w == "-h") {
      PrintHelp(stdout);
      return 0;
    }
  }
  for (const std::string& w : wanted) {
    bool known = std::any_of(Figures().begin(), Figures().end(),
                             [&](const Figure& f) { return f.name == w; });
    if (!known) {
      std::fprintf(stderr, "pf-bench: unknown figure '%s'; figures:", w.c_str());
      for (const Figure& f : Figures()) std::fprintf(stderr, " %s", f.name);
      std::fprintf(stderr, " (pf-bench --help describes them)\n");
      return 2;
    }
  }
  for (const Figure& f : Figures()) {
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), f.name) != wanted.end()) {
      f.run();
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return pf::tools::RunMain("pf-bench", Main, argc, argv); }
