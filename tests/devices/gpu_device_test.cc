// The CUDA device on a real GPU: device mapping text, copies (host<->GPU, GPU<->GPU across
// logical devices), the caching allocator over cudaMalloc and the out-of-memory path, and
// training runs whose loss curves must match the CPU's. Skipped (ctest code 4) without a GPU.
#include <regex>

#include "placeflow/core/bfc_allocator.h"
#include "placeflow/devices/copy_registry.h"
#include "placeflow/devices/device_set.h"
#include "placeflow/models/models.h"
#include "tests/testing/bfc_checks.h"
#include "tests/testing/test_util.h"

namespace pf::gpu_device_test {
namespace {

std::vector<std::unique_ptr<Device>> MakeGpus(const GpuOptions& o) {
  auto plan = PlanGpuDevices(CudaDeviceCount(), o).ValueOrThrow();
  return CreateGpuDevices(plan, o).ValueOrThrow();
}

TEST_CASE("Without a GPU no GPU device is created and GPU tests skip", "[devices]") {
  if (CudaDeviceCount() > 0) return;  // the [gpu] tests below cover this machine
  CHECK(CreateGpuDevices({}, GpuOptions()).ValueOrThrow().empty());
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Neg(root.WithDevice("/gpu:0").WithOpName("x"), ops::Const(root, 1.f));
  SessionOptions strict;
  Session sess(g, strict);
  std::vector<Tensor> out;
  Status s = sess.TryRun({}, {x}, {}, &out);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.message(), Catch::Contains("x"));
  CHECK_THAT(s.message(), Catch::Contains("GPU:0"));
}

TEST_CASE("GPU devices describe themselves the way TensorFlow's device mapping does", "[gpu]") {
  PF_REQUIRE_GPU();
  auto gpus = MakeGpus({});
  REQUIRE(gpus.size() == static_cast<size_t>(CudaDeviceCount()));
  CHECK(gpus[0]->name() == "/job:localhost/replica:0/task:0/device:GPU:0");
  const std::regex form(
      R"(device: \d+, name: .+, pci bus id: [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.0, compute capability: \d+\.\d+)");
  CHECK(std::regex_match(gpus[0]->Description(), form));
  WARN(gpus[0]->name() << " -> " << gpus[0]->Description());
}

TEST_CASE("Copies: host to GPU to host, and between logical GPUs, keep every byte", "[gpu]") {
  PF_REQUIRE_GPU();
  GpuOptions o;
  o.visible_device_list = "0";
  o.logical_devices_memory_mb = {{512, 512}};
  auto gpus = MakeGpus(o);
  REQUIRE(gpus.size() == 2);
  std::unique_ptr<Device> cpu = NewCpuDevice(0);
  for (int64_t n : {0, 1, 1000, 1 << 20}) {
    Tensor host = testing::RandomTensor({n}, static_cast<uint32_t>(n));
    CopyRegistry* r = CopyRegistry::Global();
    Tensor on0 = r->Copy(host, cpu.get(), gpus[0].get()).ValueOrThrow();
    CHECK_FALSE(on0.InHostMemory());
    Tensor on1 = r->Copy(on0, gpus[0].get(), gpus[1].get()).ValueOrThrow();
    Tensor back = r->Copy(on1, gpus[1].get(), cpu.get()).ValueOrThrow();
    CHECK(back.InHostMemory());
    CHECK(back.BitwiseEqual(host));
  }
}

TEST_CASE("GPU caching allocator: stress, statistics and reuse on the device", "[gpu][allocator]") {
  PF_REQUIRE_GPU();
  GpuOptions o;
  o.visible_device_list = "0";
  o.logical_devices_memory_mb = {{256}};
  auto gpus = MakeGpus(o);
  auto* a = static_cast<BfcAllocator*>(gpus[0]->GetAllocator());
  std::mt19937 rng(3);
  std::vector<std::pair<void*, size_t>> live;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 2) {
      size_t bytes = 1 + rng() % (4 << 20);
      void* p = a->Allocate(bytes);
      if (p != nullptr) live.emplace_back(p, bytes);
    } else {
      size_t k = rng() % live.size();
      a->Free(live[k].first, live[k].second);
      live.erase(live.begin() + static_cast<long>(k));
    }
  }
  for (auto& [p, b] : live) a->Free(p, b);
  AllocatorStats s = a->Stats();
  CHECK(s.bytes_in_use == 0);
  CHECK(s.peak_bytes_in_use <= s.bytes_limit);
  CHECK(s.bytes_limit == 256 << 20);
  WARN("device allocator after stress: " << s.DebugString());
  // Regions are separate cudaMallocs and never merge: each ends as one free chunk of its size
  // (with growth, 2, 4, ... MiB regions, so LargestFreeChunk() is less than bytes_reserved).
  testing::CheckEveryRegionOneFreeChunk(*a);
  // Reuse: the whole limit in one request (the free regions go back for one that holds it).
  void* all = a->Allocate(256 << 20);
  REQUIRE(all != nullptr);
  CHECK(a->Stats().num_regions == 1);
  a->Free(all, 256 << 20);
}

TEST_CASE("Out of GPU memory is a ResourceExhausted error naming the node, and nothing is lost",
          "[gpu][allocator]") {
  PF_REQUIRE_GPU();
  Graph g;
  Scope root = Scope::Root(&g);
  Scope gpu = root.WithDevice("/gpu:0");
  Output a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT, {-1, 1024});
  Output b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT, {1024, -1});
  Output big = ops::MatMul(gpu.WithOpName("big_product"), a, b);
  Output sum = ops::Sum(gpu.WithOpName("total"), big);
  SessionOptions opts;
  opts.visible_device_list = "0";
  opts.gpu_logical_devices = {{64}};  // a 64 MiB GPU
  Session sess(g, opts);
  std::vector<Tensor> out;
  // [4096, 1024] x [1024, 8192] -> 128 MiB of output: cannot fit.
  Status s = sess.TryRun({{a, Tensor(DT_FLOAT, {4096, 1024})}, {b, Tensor(DT_FLOAT, {1024, 8192})}},
                         {sum}, {}, &out);
  REQUIRE(s.code() == Code::kResourceExhausted);
  CHECK_THAT(s.message(), Catch::Contains("big_product"));
  CHECK_THAT(s.message(), Catch::Contains("[4096,8192]"));
  CHECK_THAT(s.message(), Catch::Contains("GPU:0"));
  CHECK_THAT(s.message(), Catch::Contains("bytes free"));
  // The session still works for what fits.
  Tensor x = testing::RandomTensor({8, 1024}, 1), y = testing::RandomTensor({1024, 4}, 2);
  out = sess.Run({{a, x}, {b, y}}, {sum});
  Session cpu(g, [] {
    SessionOptions c;
    c.allow_soft_placement = true;
    c.device_count["GPU"] = 0;
    return c;
  }());
  Tensor want = cpu.Run({{a, x}, {b, y}}, {sum})[0];
  CHECK(out[0].scalar<float>() == Approx(want.scalar<float>()).epsilon(1e-4));
}

// Trains `name` for `steps` steps with the CPU and with the GPU (same seeds, same batches) and
// returns both loss curves.
void LossCurves(const std::string& name, int steps, std::vector<float>* cpu,
                std::vector<float>* gpu) {
  for (int k = 0; k < 2; ++k) {
    Graph g;
    g.set_seed(5);
    Scope root = Scope::Root(&g);
    models::ModelOptions mo;
    mo.optimizer = "momentum";
    models::Model m = models::BuildModel(name, root, mo);
    SessionOptions o;
    o.allow_soft_placement = true;
    if (k == 0) o.device_count["GPU"] = 0;
    Session sess(g, o);
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    for (int step = 0; step < steps; ++step) {
      Tensor x, y;
      if (name == "mlp_seed000") {
        models::SeedBatch(256, static_cast<uint32_t>(step), &x, &y);
      } else {
        x = testing::RandomTensor({128, 784}, static_cast<uint32_t>(step), 0, 1);
        y = Tensor(DT_INT32, {128});
        for (int64_t i = 0; i < 128; ++i)
          y.data<int32_t>()[i] = static_cast<int32_t>((i * 7 + step) % 10);
      }
      float loss =
          sess.Run({{m.input, x}, {m.target, y}}, {m.loss}, {m.train_op})[0].scalar<float>();
      (k == 0 ? cpu : gpu)->push_back(loss);
    }
    if (k == 1) {
      int on_gpu = 0;
      for (const auto& [node, dev] : sess.DevicePlacement()) {
        if (g.FindNode(node)->op() == "MatMul" && dev.find("GPU") != std::string::npos) ++on_gpu;
      }
      CHECK(on_gpu >= 2);
    }
  }
}

TEST_CASE("Training on /gpu:0 follows the CPU loss curve (mlp_seed000, mnist_mlp)",
          "[gpu][training]") {
  PF_REQUIRE_GPU();
  for (const std::string name : {"mlp_seed000", "mnist_mlp"}) {
    INFO(name);
    std::vector<float> cpu, gpu;
    LossCurves(name, 30, &cpu, &gpu);
    REQUIRE(cpu.size() == gpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      INFO("step " << i << ": cpu " << cpu[i] << " gpu " << gpu[i]);
      CHECK(std::abs(cpu[i] - gpu[i]) <= 1e-3 * std::max(1.f, std::abs(cpu[i])));
    }
    CHECK(gpu.back() < gpu.front());  // and it learns
  }
}

}  // namespace
}  // namespace pf::gpu_device_test

namespace pf::gpu_device_test {
namespace {

// Two towers' worth of all-reduce on GPU devices: NCCL between physical GPUs when there are
// two, otherwise two logical devices of GPU 0 (reduced on the first and copied back).
TEST_CASE("CollectiveAllReduce on GPUs matches a weighted sum on the host", "[gpu][towers]") {
  PF_REQUIRE_GPU();
  const bool two_physical = CudaDeviceCount() >= 2;
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor a = testing::RandomTensor({300, 7}, 1), b = testing::RandomTensor({300, 7}, 2);
  Tensor c = testing::RandomTensor({11}, 3), d = testing::RandomTensor({11}, 4);
  std::vector<Output> outs;
  const float weights[2] = {3.f, 1.f};
  const Tensor* ins[2][2] = {{&a, &c}, {&b, &d}};
  for (int r = 0; r < 2; ++r) {
    Scope s = root.WithDevice(fmt::format("/gpu:{}", r));
    auto reduced =
        ops::CollectiveAllReduce(s, {ops::Const(s, *ins[r][0]), ops::Const(s, *ins[r][1])},
                                 ops::Const(s, weights[r]), "grads", 2, r);
    outs.insert(outs.end(), reduced.begin(), reduced.end());
  }
  SessionOptions o;
  if (!two_physical) {
    o.visible_device_list = "0";
    o.gpu_logical_devices = {{1024, 1024}};
  }
  Session sess(g, o);
  std::vector<Tensor> got = sess.Run(outs);
  auto expect = [&](const Tensor& x, const Tensor& y, const Tensor& out) {
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      CHECK(out.data<float>()[i] ==
            Approx(0.75 * x.data<float>()[i] + 0.25 * y.data<float>()[i]).margin(1e-6));
    }
  };
  for (int r = 0; r < 2; ++r) {
    expect(a, b, got[2 * r]);
    expect(c, d, got[2 * r + 1]);
  }
  CHECK(got[0].BitwiseEqual(got[2]));  // every rank has the same bits
}

}  // namespace
}  // namespace pf::gpu_device_test
