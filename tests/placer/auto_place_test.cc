// Automatic placement (issue 37): the cost model's estimates against hand-computed values, the
// simulator against schedules worked out by hand, and m-topo / m-etf / m-sct on small graphs whose
// best placement is known. Fake CPU devices: nothing runs.
#include "placeflow/placer/auto_place.h"

#include <map>

#include "placeflow/ops/ops.h"
#include "placeflow/placer/placer.h"
#include "placeflow/placer/schedule.h"
#include "tests/testing/fake_devices.h"
#include "tests/testing/test_util.h"

namespace pf::auto_place_test {
namespace {

using Catch::Matchers::Contains;

// `n` logical CPUs of one thread each, at 1 GFLOP/s and 1 GB/s, 1 µs a node, linked at 1 GB/s
// with 1 µs latency: a float costs 4 ns to compute over, 4 ns to move.
MachineModel Cpus(int n, int64_t memory = 0) {
  MachineModel m;
  for (int i = 0; i < n; ++i) {
    DeviceModel d;
    d.name = DeviceName::FullName("localhost", 0, 0, kDeviceCpu, i);
    d.type = kDeviceCpu;
    d.gflops = 1;
    d.gbytes_per_s = 1;
    d.op_overhead_us = 1;
    d.memory_bytes = memory;
    m.devices.push_back(d);
  }
  m.host_host = {1, 1};
  return m;
}

// 8 chains of `depth` Tanh on [1000] floats from one placeholder, summed by AddN.
Output Wide(const Scope& root, int branches, int depth) {
  Output x = ops::Placeholder(root, DT_FLOAT, Shape({1000}));
  std::vector<Output> ends;
  for (int b = 0; b < branches; ++b) {
    Output y = x;
    for (int k = 0; k < depth; ++k) y = ops::Tanh(root, y);
    ends.push_back(y);
  }
  return ops::AddN(root, ends);
}

std::vector<int> Plan(const Graph& g, const CostModel& cost, PlacementAlgorithm a) {
  CostGraph cg = BuildCostGraph(g.nodes(), cost);
  PlacementProblem p;
  for (size_t i = 0; i < cg.nodes.size(); ++i) {
    p.group_of.push_back(static_cast<int>(i));
    std::vector<int> all;
    for (int d = 0; d < cost.num_devices(); ++d) all.push_back(d);
    p.candidates.push_back(all);
  }
  // The algorithm's own plan: the rules' placement is not kept in its stead.
  auto plan = AutoPlace(cg, cost, p, {.algorithm = a, .keep_rules_unless_faster = false});
  REQUIRE(plan.ok());
  return plan->device_of;
}

TEST_CASE("Cost model: FLOPs, bytes and transfers against hand-computed values", "[placer][auto]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Placeholder(root, DT_FLOAT, Shape({-1, 300}));
  Output w = ops::Const(root, Tensor(DT_FLOAT, {300, 20}));
  Output m = ops::MatMul(root, a, w);
  Output img = ops::Placeholder(root, DT_FLOAT, Shape({2, 8, 8, 3}));
  Output f = ops::Const(root, Tensor(DT_FLOAT, {3, 3, 3, 16}));
  Output conv = ops::Conv2D(root, img, f, {1, 1, 1, 1}, "SAME");
  CostModel cost(Cpus(2), {.unknown_dim = 10});
  // MatMul [10, 300] x [300, 20]: 2 * 10 * 20 * 300 FLOPs; Conv2D: 2 * (2*8*8*16) * 3*3*3.
  CHECK(cost.Estimate(*m.node).flops == 2.0 * 10 * 20 * 300);
  CHECK(cost.Estimate(*conv.node).flops == 2.0 * 2 * 8 * 8 * 16 * 27);
  CHECK(cost.OutputBytes(*m.node, 0) == 10 * 20 * 4);
  // Bytes read and written: 10*300 + 300*20 + 10*20 floats, at 1 GB/s = 1e3 bytes per µs;
  // the FLOPs at 1 GFLOP/s take 120 µs, the bytes 36.8: compute bound, plus 1 µs overhead.
  CHECK(cost.Estimate(*m.node).bytes == 4.0 * (3000 + 6000 + 200));
  CHECK(cost.ComputeUs(*m.node, 0) == Approx(1 + 120.0));
  CHECK(cost.TransferUs(4000, 0, 1) == Approx(1 + 4.0));
  CHECK(cost.TransferUs(4000, 1, 1) == 0);
  auto profile = std::make_shared<Profile>();
  profile->Record(m.node->name(), kDeviceCpu, 7);
  profile->Record(m.node->name(), kDeviceCpu, 9);
  profile->Record(m.node->name(), kDeviceCpu, 50);
  CostModel measured(Cpus(2), {.unknown_dim = 10, .profile = profile});
  CHECK(measured.ComputeUs(*m.node, 0) == 9);  // the median wins over the estimate
  // Sizes: a traced step knows the batch the graph leaves as `?` (the largest recorded wins);
  // a node's outputs share its measured total in their estimates' proportions.
  profile->RecordOutputBytes(m.node->name(), 128 * 20 * 4);
  profile->RecordOutputBytes(m.node->name(), 64 * 20 * 4);
  Output sum = ops::Add(root, m, m);
  Output labels = ops::Placeholder(root, DT_INT32, Shape({-1}));
  // Outputs [?] and [?, 20] floats.
  const Node* xent = ops::SparseSoftmaxCrossEntropyWithLogits(root, m, labels).first.node;
  profile->RecordOutputBytes(xent->name(), 128 * (1 + 20) * 4);
  CHECK(measured.OutputBytes(*m.node, 0) == 128 * 20 * 4);
  CHECK(measured.OutputBytes(*sum.node, 0) == 10 * 20 * 4);  // not measured: estimated
  CHECK(measured.OutputBytes(*xent, 0) == 128 * 4);
  CHECK(measured.OutputBytes(*xent, 1) == 128 * 20 * 4);
}

TEST_CASE("Machine descriptions and memory sizes parse, bad ones name the item", "[placer][auto]") {
  auto m = ParseMachine("gpu:8x16GB,nvlink=450GB/s");
  REQUIRE(m.ok());
  REQUIRE(m->devices.size() == 9);  // the host CPU and 8 GPUs
  CHECK(m->devices[0].type == kDeviceCpu);
  CHECK(m->devices[8].name == "/job:localhost/replica:0/task:0/device:GPU:7");
  CHECK(m->devices[3].memory_bytes == int64_t{16000000000});
  CHECK(m->gpu_gpu.gbytes_per_s == 450);
  CHECK(m->Link(1, 2).gbytes_per_s == 450);
  CHECK(m->Link(0, 2).gbytes_per_s == m->host_gpu.gbytes_per_s);
  auto two = ParseMachine("cpu:2x1GB,threads=4,network=100Gbit/s");
  REQUIRE(two.ok());
  CHECK(two->devices.size() == 2);
  CHECK(two->devices[1].threads == 4);
  CHECK(two->network.gbytes_per_s == 12.5);
  auto bad = ParseMachine("gpu:8x16GB,tpu:2");
  REQUIRE(!bad.ok());
  CHECK_THAT(bad.status().message(), Contains("item 'tpu:2'") && Contains("unknown device type"));
  CHECK(!ParseMachine("gpu:8,nvlink=fast").ok());
  for (const char* bad : {"gpu:1e4", "gpu:0", "gpu:2.5", "cpu:1,threads=4x", "gpu:1x1e30GB",
                          "gpu:1xnanGB", "gpu:1@inf", "gpu:5000", "threads=2000000000"}) {
    CAPTURE(bad);
    CHECK(!ParseMachine(bad).ok());
  }
  auto twice = ParseMachine("gpu:2, gpu:2x8GB");  // spaces trimmed; numbering goes on
  REQUIRE(twice.ok());
  REQUIRE(twice->devices.size() == 5);
  CHECK(twice->devices[4].name == "/job:localhost/replica:0/task:0/device:GPU:3");
  CHECK(twice->devices[4].memory_bytes == int64_t{8000000000});
  auto mem = ParseDeviceMemory("cpu:0=2GB,/cpu:1=512MiB");
  REQUIRE(mem.ok());
  CHECK(mem->at("cpu:0") == int64_t{2000000000});
  CHECK(mem->at("cpu:1") == int64_t{512} << 20);
  CHECK(!ParseDeviceMemory("cpu:0=lots").ok());
}

TEST_CASE("Simulator: a chain, two branches and the peak memory, worked out by hand",
          "[placer][auto]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, Shape({1000}));  // 4000 bytes
  Output a = ops::Tanh(root, x);
  Output b = ops::Tanh(root, a);
  Output c = ops::Neg(root, x);
  CostModel cost(Cpus(2));
  CostGraph cg = BuildCostGraph(g.nodes(), cost);
  // A Tanh reads and writes 8000 bytes: 8 µs at 1 GB/s, plus 1 µs: 9 µs. The placeholder (a
  // feed: no work) 1 µs.
  REQUIRE(cost.ComputeUs(*a.node, 0) == Approx(9));
  auto one = Simulate(cg, cost, {0, 0, 0, 0});
  REQUIRE(one.ok());
  CHECK(one->step_us == Approx(1 + 9 + 9 + 9));  // one thread: everything in a row
  // x, then a and c at once on two devices (x crosses to CPU:1 in 1 + 4 µs), then b.
  auto two = Simulate(cg, cost, {0, 0, 0, 1});
  REQUIRE(two.ok());
  CHECK(two->nodes[3].start == Approx(1 + 5));
  CHECK(two->step_us == Approx(1 + 9 + 9));
  REQUIRE(two->transfers.size() == 1);
  // On one device the executor's thread runs x's last expensive successor (c) next and queues
  // a: x, c, a, b. Memory: x and c, then x and a (c has no reader), then a and b: 8000 bytes
  // (12000, x, a and b together, in graph order).
  CHECK(one->nodes[3].start == Approx(1));
  CHECK(one->nodes[1].start == Approx(1 + 9));
  CHECK(one->peak_bytes[0] == 8000);
  // Two CPU devices of one task share memory: CPU:1 holds only c's output; x stays CPU:0's
  // until c ends (5 µs after a, which is read by b: x, a and b together on CPU:0).
  CHECK(two->peak_bytes[1] == 4000);
  CHECK(two->peak_bytes[0] == 12000);
  // Devices of two tasks: x is copied, and CPU:1 holds the copy and c's output.
  MachineModel tasks = Cpus(2);
  tasks.devices[1].task = 1;
  CostModel apart(tasks);
  auto remote = Simulate(cg, apart, {0, 0, 0, 1});
  REQUIRE(remote.ok());
  CHECK(remote->peak_bytes[1] == 8000);
}

TEST_CASE("Simulator: cheap roots run before the expensive nodes, as the executor seeds them",
          "[placer][auto]") {
  // x -> a -> b (Tanh on 1000 floats: 9 us each) and c -> n (a scalar Const and its Neg: about
  // 1 us each), all on one device. The executor's thread starts with every root in its inline
  // queue and runs the cheap nodes they make ready before any expensive one: x, c, n, a, b. (In
  // the order of the nodes' readiness alone, x's successor a would run first: x, a, b, c, n.)
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, Shape({1000}));
  Output a = ops::Tanh(root, x);
  Output b = ops::Tanh(root, a);
  Output c = ops::Const(root, 2.0f);
  Output n = ops::Neg(root, c);
  CostModel cost(Cpus(1));
  CostGraph cg = BuildCostGraph(g.nodes(), cost);
  REQUIRE(cg.nodes.size() == 5);
  auto s = Simulate(cg, cost, {0, 0, 0, 0, 0});
  REQUIRE(s.ok());
  const double cheap = cost.ComputeUs(*c.node, 0);
  REQUIRE(cheap < 1.1);
  CHECK(s->nodes[3].start == Approx(1));                // c after x
  CHECK(s->nodes[4].start == Approx(1 + cheap));        // n after c
  CHECK(s->nodes[1].start == Approx(s->nodes[4].end));  // a after n
  CHECK(s->nodes[2].start == Approx(s->nodes[1].end));  // b after a
  CHECK(s->step_us == Approx(s->nodes[2].end));
}

TEST_CASE("Each algorithm on graphs whose best placement is known", "[placer][auto]") {
  CostModel cost(Cpus(2));
  SECTION("a chain stays on one device (m-etf, m-sct)") {
    Graph g;
    Scope root = Scope::Root(&g);
    Wide(root, 1, 20);
    for (PlacementAlgorithm a : {PlacementAlgorithm::kEtf, PlacementAlgorithm::kSct}) {
      std::vector<int> d = Plan(g, cost, a);
      CHECK(std::count(d.begin(), d.end(), d[0]) == static_cast<long>(d.size()));
    }
  }
  SECTION("m-topo cuts the topological order into contiguous pieces of equal work") {
    Graph g;
    Scope root = Scope::Root(&g);
    Wide(root, 8, 20);
    std::vector<int> d = Plan(g, cost, PlacementAlgorithm::kTopo);
    CostGraph cg = BuildCostGraph(g.nodes(), cost);
    std::vector<int> in_order;
    for (int i : cg.topo) in_order.push_back(d[i]);
    CHECK(std::is_sorted(in_order.begin(), in_order.end()));
    CHECK(std::count(d.begin(), d.end(), 0) >= 70);  // 162 nodes: about half each
    CHECK(std::count(d.begin(), d.end(), 1) >= 70);
  }
  SECTION("independent heavy branches use both devices, and the step halves") {
    Graph g;
    Scope root = Scope::Root(&g);
    Wide(root, 8, 20);
    CostGraph cg = BuildCostGraph(g.nodes(), cost);
    auto alone = Simulate(cg, cost, std::vector<int>(cg.nodes.size(), 0));
    REQUIRE(alone.ok());
    for (PlacementAlgorithm a :
         {PlacementAlgorithm::kTopo, PlacementAlgorithm::kEtf, PlacementAlgorithm::kSct}) {
      CAPTURE(PlacementAlgorithmName(a));
      std::vector<int> d = Plan(g, cost, a);
      CHECK(std::count(d.begin(), d.end(), 1) > 0);
      auto split = Simulate(cg, cost, d);
      REQUIRE(split.ok());
      CHECK(split->step_us < 0.6 * alone->step_us);
    }
  }
}

TEST_CASE("m-sct keeps each branch's layers on one device, and an LSTM-like pipeline apart",
          "[placer][auto]") {
  CostModel cost(Cpus(2));
  // Four branches of six layers, Tanh(MatMul(h, w)) with a [64, 64] weight (16 KB) on a [32, 64]
  // input (8 KB): each layer's MatMul follows its own weight (its largest input), so each layer
  // is an anchor. A layer waits for the one before it: splitting a branch only adds crossings.
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, Shape({32, 64}));
  std::vector<Output> ends;
  for (int b = 0; b < 4; ++b) {
    Output h = x;
    for (int l = 0; l < 6; ++l) {
      const std::string name = "b" + std::to_string(b) + "/l" + std::to_string(l);
      Output w = ops::Variable(root.WithOpName(name + "/w"), Shape({64, 64}), DT_FLOAT);
      h = ops::Tanh(root.WithOpName(name + "/tanh"),
                    ops::MatMul(root.WithOpName(name + "/mm"), h, w));
    }
    ends.push_back(h);
  }
  ops::AddN(root.WithOpName("sum"), ends);
  CostGraph cg = BuildCostGraph(g.nodes(), cost);
  std::vector<int> d = Plan(g, cost, PlacementAlgorithm::kSct);
  std::map<std::string, int> where;
  for (size_t i = 0; i < cg.nodes.size(); ++i) where[cg.nodes[i]->name()] = d[i];
  std::vector<int> per_device(2, 0);
  for (int b = 0; b < 4; ++b) {
    const std::string branch = "b" + std::to_string(b);
    for (int l = 1; l < 6; ++l) {
      INFO(branch << " layer " << l);
      CHECK(where.at(branch + "/l" + std::to_string(l) + "/mm") == where.at(branch + "/l0/mm"));
    }
    ++per_device.at(where.at(branch + "/l0/mm"));
  }
  CHECK(per_device == std::vector<int>{2, 2});

  // Two recurrent layers unrolled over 8 steps: layer 2's step t reads layer 1's step t and its
  // own step t - 1. Layer 2 runs beside layer 1, a step behind: the layers stay apart and
  // pipeline (about 9 steps' time on two devices against 16 on one).
  Graph rnn;
  Scope r = Scope::Root(&rnn);
  Output w1 = ops::Variable(r.WithOpName("w1"), Shape({64, 64}), DT_FLOAT);
  Output w2 = ops::Variable(r.WithOpName("w2"), Shape({64, 64}), DT_FLOAT);
  Output s1 = ops::Placeholder(r.WithOpName("s0"), DT_FLOAT, Shape({32, 64})), s2 = s1;
  for (int t = 0; t < 8; ++t) {
    const std::string step = std::to_string(t);
    s1 = ops::Tanh(r, ops::MatMul(r.WithOpName("l1_mm" + step), s1, w1));
    s2 = ops::Tanh(r, ops::MatMul(r.WithOpName("l2_mm" + step), ops::AddN(r, {s1, s2}), w2));
  }
  CostGraph rg = BuildCostGraph(rnn.nodes(), cost);
  std::vector<int> rd = Plan(rnn, cost, PlacementAlgorithm::kSct);
  std::map<std::string, int> at;
  for (size_t i = 0; i < rg.nodes.size(); ++i) at[rg.nodes[i]->name()] = rd[i];
  CHECK(at.at("l1_mm0") != at.at("l2_mm0"));
  CHECK(at.at("l1_mm7") == at.at("l1_mm0"));
  CHECK(at.at("l2_mm7") == at.at("l2_mm0"));
}

TEST_CASE("Automatic placement of nothing, and of a 20,000-node chain of forwarders",
          "[placer][auto]") {
  CostModel cost(Cpus(2));
  Graph empty;
  for (PlacementAlgorithm a :
       {PlacementAlgorithm::kTopo, PlacementAlgorithm::kEtf, PlacementAlgorithm::kSct}) {
    auto plan = AutoPlace(BuildCostGraph({}, cost), cost, {}, {.algorithm = a});
    REQUIRE(plan.ok());
    CHECK(plan->device_of.empty());
  }
  // A variable read through 20,000 Identity nodes (each free, so each waits for its consumer):
  // they are placed when the Tanh at the end is, without recursing once per node.
  Graph g;
  Scope root = Scope::Root(&g);
  Output y = ops::Variable(root, Shape({1000}), DT_FLOAT);
  for (int i = 0; i < 20000; ++i) y = ops::Identity(root, y);
  Output end = ops::Tanh(root, y);
  std::vector<int> d = Plan(g, cost, PlacementAlgorithm::kSct);
  CHECK(std::count(d.begin(), d.end(), d.back()) == static_cast<long>(d.size()));
  // The variable's 4000 bytes, forwarded all the way: held once, plus the Tanh's output.
  CostGraph cg = BuildCostGraph(g.nodes(), cost);
  auto s = Simulate(cg, cost, d);
  REQUIRE(s.ok());
  CHECK(s->peak_bytes[d.back()] == 8000);
  (void)end;
}

}  // namespace
}  // namespace pf::auto_place_test
