// SessionOptions::placement = "auto" (issue 37) on two logical CPU devices: training gives the
// rules' losses, every signature agrees on the variables' devices, the log says who placed what,
// a model over one device's memory trains with auto (and fails with the rules), the predicted peak
// memory agrees with the measured one, and bad settings are errors.
#include "placeflow/executor/auto_placement.h"

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
  Net() {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {32, 64});
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

Tensor Batch() {
  Tensor t(DT_FLOAT, {32, 64});
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
// copy between CPU devices of one task) against the devices' allocators over 10 steps.
TEST_CASE("An automatically placed step's measured peak memory is within 20% of the prediction",
          "[auto_session][interleaving]") {
  Net net;
  SessionOptions o = TwoCpus();
  o.placement = "auto";
  for (const char* d : {"cpu:0", "cpu:1"}) o.device_memory[d] = int64_t{1} << 30;  // counted
  Session sess(net.g, o);
  sess.Run({}, {}, {net.init});
  sess.Run({{net.x, Batch()}}, {}, {net.train});
  // The run's peak over 10 steps: what a step holds at once depends on how the two devices'
  // threads interleave (cpu:1 held 0.97-1.25 MiB in single steps here).
  sess.ResetPeakMemory();
  for (int i = 0; i < 10; ++i) sess.Run({{net.x, Batch()}}, {}, {net.train});
  const std::vector<PlacementPrediction> predictions = sess.PlacementPredictions();
  REQUIRE(predictions.size() == 2);
  const std::map<std::string, AllocatorStats> stats = sess.DeviceMemoryStats();
  REQUIRE(predictions[1].peak_bytes.size() == 2);  // both devices hold part of the step
  for (const auto& [device, predicted] : predictions[1].peak_bytes) {
    REQUIRE(stats.count(device) == 1);
    const int64_t measured = stats.at(device).peak_bytes_in_use;
    INFO(device << ": predicted " << predicted << ", measured " << measured);
    CHECK(std::abs(measured - predicted) <= 0.2 * measured);
  }
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
