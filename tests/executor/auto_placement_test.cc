// SessionOptions::placement = "auto" (issue 37) on two logical CPU devices: training gives the
// rules' losses, every signature agrees on the variables' devices, the log says who placed what,
// a model over one device's memory trains with auto (and fails with the rules), the predicted peak
// memory agrees with the measured one (and, from a traced step's times, exactly), and bad settings
// are errors.
#include "placeflow/executor/auto_placement.h"

#include <set>

#include "placeflow/executor/subgraph.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/test_util.h"

namespace pf::auto_placement_test {
namespace {

using Catch::Matchers::Contains;

// Two branches of three 256-wide tanh layers on a [32, 64] input, summed into a squared loss,
// SGD. Variables: 2 * (64*256 + 2 * 256*256) floats, about 1.2 MB.
struct Net {
  Graph g;
  Output x, loss;
  Operation train, init;
  explicit Net(int64_t batch = 32) {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {batch, 64});
    std::vector<Output> ends;
    for (int b = 0; b < 2; ++b) {
      Scope s = root.WithVariableScope("branch" + std::to_string(b));
      Output h = x;
      for (int l = 0; l < 3; ++l) {
        Variable w = GetVariable(s, "w" + std::to_string(l), {l == 0 ? 64 : 256, 256},
                                 init::GlorotUniform(10 * b + l + 1));
        h = ops::Tanh(s, ops::MatMul(s, h, w.value()));
      }
      ends.push_back(h);
    }
    loss = ops::Mean(root, ops::Square(root, ops::AddN(root, ends)));
    train::GradientDescent sgd(0.05);
    train = sgd.Minimize(root, loss);
    init = GlobalVariablesInitializer(root);
  }
};

SessionOptions TwoCpus() {
  SessionOptions o;
  o.device_count["CPU"] = 2;
  o.cpu_device_threads = 1;
  return o;
}

Tensor Batch(int64_t batch = 32) {
  Tensor t(DT_FLOAT, {batch, 64});
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = 0.01f * (i % 97) - 0.4f;
  return t;
}

std::vector<float> Train(Net& net, const SessionOptions& o, int steps) {
  Session sess(net.g, o);
  sess.Run({}, {}, {net.init});
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i)
    losses.push_back(sess.Run({{net.x, Batch()}}, {net.loss}, {net.train})[0].scalar<float>());
  return losses;
}

TEST_CASE("Automatic placement trains to the rules' losses and logs its plan", "[auto_session]") {
  Net rules_net, auto_net;
  const std::vector<float> expected = Train(rules_net, TwoCpus(), 5);
  SessionOptions o = TwoCpus();
  o.placement = "auto";
  o.log_device_placement = true;
  testing::LogCapture logs;
  std::vector<float> got;
  {
    Session sess(auto_net.g, o);
    const std::string out = testing::CaptureStdout([&] {
      sess.Run({}, {}, {auto_net.init});  // the first Run plans the whole graph
      for (int i = 0; i < 5; ++i) {
        got.push_back(sess.Run({{auto_net.x, Batch()}}, {auto_net.loss}, {auto_net.train})[0]
                          .scalar<float>());
      }
    });
    CHECK_THAT(out, Contains("[m-sct]") || Contains("[rules]"));
    const std::vector<PlacementPrediction> predictions = sess.PlacementPredictions();
    REQUIRE(predictions.size() == 2);  // the initializer, then the step
    CHECK(predictions[1].algorithm == "m-sct");
    CHECK(predictions[1].step_us > 0);
    CHECK_THAT(predictions[1].signature, Contains("^" + auto_net.train.node->name()));
  }
  CHECK_THAT(logs.Text(), Contains("Automatic placement (m-sct"));
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(expected[i]).epsilon(1e-5));
}

TEST_CASE("Without a profile, m-sct keeps each branch's layers on one device", "[auto_session]") {
  // The first Run plans the whole graph, initializers included (all ready at once): m-sct's units
  // leave them out, so each branch's three layers, which run one after the other, form one unit.
  Net net;
  SessionOptions o = TwoCpus();
  o.placement = "auto";
  Session sess(net.g, o);
  sess.Run({}, {}, {net.init});
  sess.Run({{net.x, Batch()}}, {net.loss}, {net.train});
  const auto where = sess.DevicePlacement();
  std::set<std::string> first_layer;
  for (int b = 0; b < 2; ++b) {
    const std::string branch = "branch" + std::to_string(b) + "/";
    for (const char* mm : {"MatMul_1", "MatMul_2"}) {
      INFO(branch << mm);
      CHECK(where.at(branch + mm) == where.at(branch + "MatMul"));
    }
    first_layer.insert(where.at(branch + "MatMul"));
  }
  CHECK(first_layer.size() == 2);  // the branches run side by side
}

TEST_CASE("A model over one device's memory trains with auto and gives the same losses",
          "[auto_session]") {
  Net unconstrained_net, rules_net, auto_net;
  const std::vector<float> expected = Train(unconstrained_net, TwoCpus(), 4);
  SessionOptions tight = TwoCpus();
  tight.device_memory["cpu:0"] = 900'000;  // less than the 1.2 MB of variables
  // The rules put everything on /cpu:0: out of memory.
  try {
    Train(rules_net, tight, 1);
    FAIL("the rules' placement fit in 900 kB");
  } catch (const Error& e) {
    CHECK(e.status().code() == Code::kResourceExhausted);
  }
  tight.placement = "auto";
  const std::vector<float> got = Train(auto_net, tight, 4);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(expected[i]).epsilon(1e-5));
}

// The simulator's memory (outputs from their producer's start to their last reader's end, no
// copy between CPU devices of one task, the executor's order) against the devices' allocators:
// the median of 10 steps' peaks. At batch 512 the activations outweigh what the two devices'
// threads' interleaving changes (it passes under TSan and beside CPU hogs); at the other tests'
// 32, cpu:1 held one 256 KiB gradient more (1.19 MiB, against 0.94) in most steps when a CPU
// hog shared the machine.
constexpr int64_t kBatch = 512;
TEST_CASE("An automatically placed step's measured peak memory is within 20% of the prediction",
          "[auto_session]") {
  Net net(kBatch);
  SessionOptions o = TwoCpus();
  o.placement = "auto";
  for (const char* d : {"cpu:0", "cpu:1"}) o.device_memory[d] = int64_t{1} << 30;  // counted
  Session sess(net.g, o);
  sess.Run({}, {}, {net.init});
  sess.Run({{net.x, Batch(kBatch)}}, {}, {net.train});
  std::map<std::string, std::vector<int64_t>> peaks;  // per device, per step
  for (int i = 0; i < 10; ++i) {
    sess.ResetPeakMemory();
    sess.Run({{net.x, Batch(kBatch)}}, {}, {net.train});
    for (const auto& [device, stats] : sess.DeviceMemoryStats())
      peaks[device].push_back(stats.peak_bytes_in_use);
  }
  const std::vector<PlacementPrediction> predictions = sess.PlacementPredictions();
  REQUIRE(predictions.size() == 2);
  REQUIRE(predictions[1].peak_bytes.size() == 2);  // both devices hold part of the step
  for (const auto& [device, predicted] : predictions[1].peak_bytes) {
    REQUIRE(peaks.count(device) == 1);
    std::vector<int64_t>& p = peaks[device];
    std::nth_element(p.begin(), p.begin() + p.size() / 2, p.end());
    const int64_t measured = p[p.size() / 2];
    INFO(device << ": predicted " << predicted << ", measured (median step) " << measured);
    CHECK(std::abs(measured - predicted) <= 0.2 * measured);
  }
}

// A tensor sent to another device is freed with its last reader there, as on its own device, and
// the simulator's accounting of the step's measured times gives the devices' measured peaks. A
// chain, so that the one-thread devices take turns: x*2 on cpu:0, read on cpu:1, whose sum scales
// x on cpu:0 again.
TEST_CASE("A traced step's peak memory replays exactly, cross-device tensors freed with readers",
          "[auto_session]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Scope cpu0 = root.WithDevice("/cpu:0"), cpu1 = root.WithDevice("/cpu:1");
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {256, 256});
  Output a = ops::Mul(cpu0.WithOpName("a"), x, ops::Const(cpu0, 2.f));
  Output sum_b =
      ops::Sum(cpu1.WithOpName("sum_b"), ops::Add(cpu1, a, ops::Const(cpu1, 1.f)), {0, 1});
  Output d = ops::Mul(cpu0.WithOpName("d"), x, sum_b);
  Output sum_d = ops::Sum(cpu0, d, {0, 1});
  SessionOptions o = TwoCpus();
  for (const char* dev : {"cpu:0", "cpu:1"}) o.device_memory[dev] = int64_t{1} << 30;  // counted
  Session sess(g, o);
  Tensor feed(DT_FLOAT, {256, 256});
  for (int64_t i = 0; i < feed.num_elements(); ++i) feed.data<float>()[i] = 0.001f * (i % 13);
  sess.Run({{x, feed}}, {sum_d}, {});  // warm-up: constants and kernels made
  sess.ResetPeakMemory();
  RunOptions trace;
  trace.trace = true;
  RunMetadata md;
  sess.Run(trace, {{x, feed}}, {sum_d}, {}, &md);
  const std::map<std::string, AllocatorStats> stats = sess.DeviceMemoryStats();
  constexpr int64_t kTensor = 256 * 256 * 4;
  // `a` (cpu:0) is freed when cpu:1's Add has read it, before `d` is allocated: one tensor at a
  // time on each device, not two (the rendezvous held `a` until the step's end before).
  const std::string dev0 = "/job:localhost/replica:0/task:0/device:CPU:0";
  const std::string dev1 = "/job:localhost/replica:0/task:0/device:CPU:1";
  REQUIRE(stats.count(dev0) == 1);
  REQUIRE(stats.count(dev1) == 1);
  CHECK(stats.at(dev0).peak_bytes_in_use >= kTensor);
  CHECK(stats.at(dev0).peak_bytes_in_use < kTensor + kTensor / 2);
  CHECK(stats.at(dev1).peak_bytes_in_use >= kTensor);
  CHECK(stats.at(dev1).peak_bytes_in_use < kTensor + kTensor / 2);
  // The simulator's memory accounting of the measured times gives the same peaks.
  std::unique_ptr<AutomaticPlacement> automatic =
      MakeAutomaticPlacement({}, sess.devices(), 1, {}).ValueOrThrow();
  CostGraph cost_graph = BuildCostGraph(Prune({x}, {sum_d}, {}), *automatic->cost);
  std::vector<int> device_of;
  for (const Node* n : cost_graph.nodes)
    device_of.push_back(automatic->cost->machine().Find(sess.DevicePlacement().at(n->name())));
  const Schedule replayed =
      ScheduleFromTrace(cost_graph, automatic->cost->machine(), device_of, md);
  REQUIRE(replayed.peak_bytes.size() == 2);
  const std::vector<std::string> names = {dev0, dev1};
  for (int k = 0; k < 2; ++k) {
    const int64_t measured = stats.at(names[k]).peak_bytes_in_use;
    INFO(names[k] << ": measured " << measured << ", replayed " << replayed.peak_bytes[k]);
    CHECK(std::abs(measured - replayed.peak_bytes[k]) <= 1024);  // scalars' rounding
  }
  CHECK(replayed.step_us > 0);
}

TEST_CASE("Bad automatic placement settings are errors", "[auto_session]") {
  Net net;
  SessionOptions o = TwoCpus();
  o.placement = "fastest";
  CHECK_THROWS_WITH(Session(net.g, o), Contains("must be \"rules\" or \"auto\""));
  o.placement = "auto";
  o.placement_options.algorithm = "m-best";
  CHECK_THROWS_WITH(Session(net.g, o), Contains("Unknown placement algorithm 'm-best'"));
  o.placement_options.algorithm = "m-etf";
  o.placement_options.memory_headroom = 1.5;
  CHECK_THROWS_WITH(Session(net.g, o), Contains("memory_headroom"));
}

}  // namespace
}  // namespace pf::auto_placement_test
