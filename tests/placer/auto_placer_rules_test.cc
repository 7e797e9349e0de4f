// Automatic placement inside the placer: memory limits, and the rules (requests, reference
// edges, colocation, earlier plans) kept exactly as the rule placer keeps them. Fake devices.
#include "placeflow/ops/ops.h"
#include "placeflow/placer/placer.h"
#include "placeflow/placer/schedule.h"
#include "tests/testing/fake_devices.h"
#include "tests/testing/test_util.h"

namespace pf::auto_placer_rules_test {
namespace {

using Catch::Matchers::Contains;

MachineModel TwoCpus(int64_t memory0, int64_t memory1, double gbytes_per_s = 8) {
  MachineModel m;
  for (int i = 0; i < 2; ++i) {
    DeviceModel d = DefaultDeviceModel(kDeviceCpu);
    d.gbytes_per_s = gbytes_per_s;
    d.name = DeviceName::FullName("localhost", 0, 0, kDeviceCpu, i);
    d.memory_bytes = i == 0 ? memory0 : memory1;
    m.devices.push_back(d);
  }
  return m;
}

// A chain of `depth` Tanh on [1000] floats from a placeholder.
Output Chain(const Scope& root, int depth) {
  Output y = ops::Placeholder(root, DT_FLOAT, Shape({1000}));
  for (int k = 0; k < depth; ++k) y = ops::Tanh(root, y);
  return y;
}

StatusOr<AutoPlan> PlanAll(const Graph& g, const CostModel& cost, PlacementAlgorithm a,
                           bool keep_rules = false) {
  CostGraph cg = BuildCostGraph(g.nodes(), cost);
  PlacementProblem p;
  for (size_t i = 0; i < cg.nodes.size(); ++i) {
    p.group_of.push_back(static_cast<int>(i));
    p.candidates.push_back({0, 1});
  }
  return AutoPlace(cg, cost, p,
                   {.algorithm = a, .memory_headroom = 0, .keep_rules_unless_faster = keep_rules});
}

// `n` Tanh of one [1000]-float placeholder (4000 bytes each), all summed by one AddN: every
// output lives until the AddN has run.
Output Fan(const Scope& root, int n) {
  Output x = ops::Placeholder(root, DT_FLOAT, Shape({1000}));
  std::vector<Output> ys;
  for (int k = 0; k < n; ++k) ys.push_back(ops::Tanh(root, x));
  return ops::AddN(root, ys);
}

TEST_CASE("A plan never holds more than a device's memory; what does not fit moves",
          "[placer][auto]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Fan(root, 10);  // the 10 outputs and the sum are alive at once: 44000 bytes
  for (PlacementAlgorithm a :
       {PlacementAlgorithm::kTopo, PlacementAlgorithm::kEtf, PlacementAlgorithm::kSct}) {
    CAPTURE(PlacementAlgorithmName(a));
    CostModel roomy(TwoCpus(1 << 20, 1 << 20));
    auto free = PlanAll(g, roomy, a);
    REQUIRE(free.ok());
    CHECK(free->peak_bytes[0] + free->peak_bytes[1] >= 44000);
    CostModel tight(TwoCpus(1 << 20, 20000));  // CPU:1 holds at most 5 tensors at once
    auto plan = PlanAll(g, tight, a);
    REQUIRE(plan.ok());
    CHECK(plan->peak_bytes[1] <= 20000);
    CostGraph cg = BuildCostGraph(g.nodes(), tight);
    auto s = Simulate(cg, tight, plan->device_of);
    REQUIRE(s.ok());
    CHECK(s->peak_bytes[1] <= 20000);  // the simulated step agrees
  }
  CostModel none(TwoCpus(20000, 20000));  // the AddN alone needs its 10 inputs and its output
  auto fail = PlanAll(g, none, PlacementAlgorithm::kEtf);
  REQUIRE(!fail.ok());
  CHECK(fail.status().code() == Code::kResourceExhausted);
  CHECK_THAT(fail.status().message(), Contains("Automatic placement (m-etf)"));
}

TEST_CASE("A plan not 5% faster than the rules' own placement gives way to it", "[placer][auto]") {
  CostModel cost(TwoCpus(0, 0));
  Graph chain;
  Chain(Scope::Root(&chain), 12);                                    // nothing to run side by side
  auto one = PlanAll(chain, cost, PlacementAlgorithm::kTopo, true);  // m-topo cuts it in two
  REQUIRE(one.ok());
  CHECK(one->kept_rules);
  CHECK(std::count(one->device_of.begin(), one->device_of.end(), 0) ==
        static_cast<long>(one->device_of.size()));
  // Eight Tanh side by side at 0.01 GB/s (800 µs each, 2 µs a transfer): the split is faster
  // and stays, on both devices.
  Graph fan;
  Fan(Scope::Root(&fan), 8);
  CostModel slow(TwoCpus(0, 0, 0.01));
  for (PlacementAlgorithm a : {PlacementAlgorithm::kEtf, PlacementAlgorithm::kSct}) {
    auto split = PlanAll(fan, slow, a, true);
    REQUIRE(split.ok());
    CHECK(!split->kept_rules);
    CHECK(std::count(split->device_of.begin(), split->device_of.end(), 1) >= 3);
  }
  // Memory no plan of the algorithm can keep, but the rules' placement can: the rules' wins.
  CostModel tight(TwoCpus(1 << 20, 1000));
  auto kept = PlanAll(fan, tight, PlacementAlgorithm::kTopo, true);
  REQUIRE(kept.ok());
  CHECK(kept->kept_rules);
}

TEST_CASE("Automatic placement keeps requests, reference edges, colocation and earlier plans",
          "[placer][auto]") {
  DeviceSet devices = testing::FakeDeviceSet(2, 0);
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = Chain(root, 4);
  Output pinned = ops::Neg(root.WithDevice("/cpu:1"), x);
  Output v = ops::Variable(root.WithOpName("v"), Shape({1000}), DT_FLOAT);
  Output assign = ops::Assign(root.WithDevice("/cpu:0"), v, x);  // the variable's side wins
  Output near = ops::Neg(root.ColocateWith(pinned.node), x);
  AutomaticPlacement a;
  a.cost = std::make_shared<CostModel>(TwoCpus(0, 0));
  PlacerOptions opts;
  opts.automatic = &a;
  auto p = Place(g.nodes(), devices, opts);
  REQUIRE(p.ok());
  auto rules = Place(g.nodes(), devices, {});
  REQUIRE(rules.ok());
  CHECK(p->device.at(pinned.node) == rules->device.at(pinned.node));
  CHECK(p->device.at(near.node) == p->device.at(pinned.node));
  CHECK(p->device.at(assign.node) == p->device.at(v.node));
  CHECK(p->fixed.count(pinned.node) == 1);
  CHECK(p->algorithm == "m-sct");
  CHECK(p->predicted_step_us > 0);
  // Determinism: the same graph and model give the same plan.
  auto again = Place(g.nodes(), devices, opts);
  REQUIRE(again.ok());
  CHECK(again->device == p->device);
  // An earlier plan's choice is kept when the rules allow it.
  const Device* other =
      p->device.at(x.node) == devices.Find("/job:localhost/replica:0/task:0/device:CPU:0")
          ? devices.Find("/job:localhost/replica:0/task:0/device:CPU:1")
          : devices.Find("/job:localhost/replica:0/task:0/device:CPU:0");
  a.planned[x.node->name()] = other->name();
  a.planned[pinned.node->name()] = other->name();  // against its request: ignored
  auto kept = Place(g.nodes(), devices, opts);
  REQUIRE(kept.ok());
  CHECK(kept->device.at(x.node) == other);
  CHECK(kept->device.at(pinned.node) == rules->device.at(pinned.node));
}

}  // namespace
}  // namespace pf::auto_placer_rules_test
