#include "tools/place_bench.h"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "placeflow/executor/auto_placement.h"
#include "placeflow/executor/subgraph.h"
#include "placeflow/placer/schedule.h"
#include "tools/bench_util.h"
#include "tools/placement_rules.h"

namespace pf::bench {

namespace {

// 100,000 nodes: layers of (variable, read, MatMul, Add, Relu, ...); `pinned`: each layer asks
// for /cpu:(layer % 4).
std::vector<Node*> BigGraph(Graph* g, bool pinned) {
  Scope root = Scope::Root(g);
  Output h = ops::Placeholder(root, DT_FLOAT, {-1, 8});
  int layer = 0;
  while (g->num_nodes() < 100000) {
    Scope s = root.WithVariableScope("layer" + std::to_string(layer));
    if (pinned) s = s.WithDevice("/cpu:" + std::to_string(layer % 4));
    Variable w = GetVariable(s, "w", {8, 8}, init::Zeros());
    h = ops::Relu(s, ops::Add(s, ops::MatMul(s, h, w.value()), ops::Const(s, 0.f)));
    ++layer;
  }
  return {g->nodes().begin(), g->nodes().begin() + 100000};
}

DeviceSet Cpus(int n) {
  DeviceSet devices;
  for (int i = 0; i < n; ++i) devices.Add(NewCpuDevice(i));
  return devices;
}

double RunUs(Session& sess, const FeedDict& feeds, const std::vector<Operation>& targets,
             int runs) {
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    sess.Run(feeds, {}, targets);
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                    .count());
  }
  return Median(t);
}

// One hop of a scalar between two CPU devices with a thread each (cpu_device_threads = 1): a
// chain of 200 Neg alternating between /cpu:0 and /cpu:1, per node.
double HopUs() {
  constexpr int kHops = 200;
  SessionOptions o = OnDevice(false);
  o.device_count["CPU"] = 2;
  o.cpu_device_threads = 1;
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {});
  Output y = x;
  for (int i = 0; i < kHops; ++i) y = ops::Neg(root.WithDevice("/cpu:" + std::to_string(i % 2)), y);
  Session sess(g, o);
  Tensor t(DT_FLOAT, {});
  t.data<float>()[0] = 1;
  return RunUs(sess, {{x, t}}, {y.node}, 21) / kHops;
}

}  // namespace

void PlacerFigure() {
  Graph g;
  std::vector<Node*> nodes = BigGraph(&g, true);
  DeviceSet devices = Cpus(4);
  double s = TimeMedian([&] {
    if (!Place(nodes, devices, {}).ok()) std::abort();
  });
  std::printf("placer seconds_100k=%.3f nodes=%zu devices=4 repeats=%d\n", s, nodes.size(),
              kRepeats);
}

void PlacerAutoFigure() {
  Graph g;
  std::vector<Node*> nodes = BigGraph(&g, false);
  DeviceSet devices = Cpus(4);
  for (PlacementAlgorithm a :
       {PlacementAlgorithm::kTopo, PlacementAlgorithm::kEtf, PlacementAlgorithm::kSct}) {
    AutomaticPlacement automatic;
    automatic.cost = std::make_shared<CostModel>(LocalMachine(devices, {}, 1, {}).ValueOrThrow());
    automatic.options.algorithm = a;
    PlacerOptions options;
    options.automatic = &automatic;
    double planning_ms = 0;
    double s = TimeMedian([&] {
      auto p = Place(nodes, devices, options);
      if (!p.ok()) std::abort();
      planning_ms = p->planning_ms;
    });
    std::printf(
        "placer_auto algorithm=%s seconds_100k=%.3f planning_seconds=%.3f nodes=%zu devices=4 "
        "repeats=%d\n",
        PlacementAlgorithmName(a), s, planning_ms / 1e3, nodes.size(), kRepeats);
  }
}

void DeviceRatesFigure() {
  SessionOptions o = OnDevice(false);
  o.num_threads = 1;
  Graph g;
  Scope root = Scope::Root(&g);
  constexpr int64_t kN = 512, kElements = 1 << 20, kChain = 1000;
  Output a = ops::Placeholder(root, DT_FLOAT, {kN, kN});
  Output mm = ops::MatMul(root, a, a);
  Output v = ops::Placeholder(root, DT_FLOAT, {kElements});
  Output add = ops::Tanh(root, v);  // elementwise math, as the models' activations
  Output scalar = ops::Placeholder(root, DT_FLOAT, {});
  Output s = scalar;
  for (int i = 0; i < kChain; ++i) s = ops::Neg(root, s);
  Session sess(g, o);
  Tensor ta(DT_FLOAT, {kN, kN}), tv(DT_FLOAT, {kElements}), ts(DT_FLOAT, {});
  std::fill_n(ta.data<float>(), kN * kN, 1.f);
  std::fill_n(tv.data<float>(), kElements, 1.f);
  ts.data<float>()[0] = 1;
  const double mm_us = RunUs(sess, {{a, ta}}, {mm.node}, 21);
  const double add_us = RunUs(sess, {{v, tv}}, {add.node}, 21);
  const double chain_us = RunUs(sess, {{scalar, ts}}, {s.node}, 21);
  DeviceModel cpu = DefaultDeviceModel(kDeviceCpu);
  cpu.gflops = 2.0 * kN * kN * kN / mm_us / 1e3;
  cpu.gbytes_per_s = 2.0 * 4 * kElements / add_us / 1e3;  // read and written
  cpu.op_overhead_us = chain_us / kChain;
  DeviceRates rates = LoadDeviceRates(DeviceRatesPath());
  rates.by_type[kDeviceCpu] = cpu;
  rates.host_host = {20, std::max(0.1, HopUs() - cpu.op_overhead_us)};
  const std::string path = DeviceRatesPath();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  Status saved = SaveDeviceRates(rates, path);
  std::printf(
      "device_rates cpu_gflops=%.1f cpu_gbytes_per_s=%.2f cpu_op_overhead_us=%.3f "
      "cpu_hop_latency_us=%.2f file=%s saved=%s\n",
      cpu.gflops, cpu.gbytes_per_s, cpu.op_overhead_us, rates.host_host.latency_us, path.c_str(),
      saved.ok() ? "yes" : "no");
}

Output WideModel(const Scope& root, int branches, int layers, int64_t batch) {
  Output x = ops::Placeholder(root.WithOpName("input"), DT_FLOAT, {batch, 256});
  std::vector<Output> ends;
  for (int b = 0; b < branches; ++b) {
    Scope s = root.WithVariableScope("branch_" + std::to_string(b));
    Output h = x;
    for (int l = 0; l < layers; ++l) {
      Variable w = GetVariable(s, "w" + std::to_string(l), {256, 256},
                               init::RandomUniform(-0.06, 0.06, b * 100 + l + 1));
      h = ops::Tanh(s, ops::MatMul(s, h, w.value()));
    }
    ends.push_back(h);
  }
  return ops::AddN(root.WithOpName("sum"), ends);
}

}  // namespace pf::bench
