// pf-bench auto_placement: on two logical CPU devices of one thread each, every model's step
// placed four ways (all on /cpu:0, the experts' split by --place rules, and each automatic
// algorithm with a profile of the first), measured, and predicted by the simulator with the same
// profile. Rounds interleave the placements so that they see the same machine.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "placeflow/executor/auto_placement.h"
#include "placeflow/executor/subgraph.h"
#include "placeflow/models/models.h"
#include "placeflow/placer/schedule.h"
#include "tools/bench_util.h"
#include "tools/place_bench.h"
#include "tools/placement_rules.h"

namespace pf::bench {

namespace {

struct Case {
  const char* model;
  const char* expert;  // --place rules of the hand-made split
  int64_t batch;
};

constexpr Case kCases[] = {
    {"mlp_seed000", "affine[01]/=/cpu:0,affine2/=/cpu:1,affine_last/=/cpu:1", 500},
    {"mnist_mlp", "layer1/=/cpu:0,layer2/=/cpu:1", 100},
    {"lenet", "conv=/cpu:0,fc=/cpu:1", 32},
    {"wide", "branch_[0-3]/=/cpu:0,branch_[4-7]/=/cpu:1", 64},
};

struct Built {
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  FeedDict feeds;
  std::vector<Output> fed;
  std::vector<Operation> targets;
  Operation init;
};

Built Build(const Case& c, const std::string& rules) {
  Built b;
  Scope root = Scope::Root(b.graph.get());
  if (std::string(c.model) == "wide") {
    b.targets = {WideModel(root, 8, 20, c.batch).node};
    Node* input = b.graph->FindNode("input");
    b.fed = {Output(input, 0)};
    b.feeds = {{b.fed[0], Tensor(DT_FLOAT, {c.batch, 256})}};
  } else {
    models::Model m = models::BuildModel(c.model, root, {});
    b.targets = {m.train_op};
    b.fed = {m.input, m.target};
    b.feeds = {{m.input, Tensor(DT_FLOAT, {c.batch, m.input.shape().dim(1)})}};
    b.feeds.push_back(m.target.dtype() == DT_INT32
                          ? std::make_pair(m.target, Tensor(DT_INT32, {c.batch}))
                          : std::make_pair(m.target, Tensor(DT_FLOAT, {c.batch, 600})));
  }
  for (auto& [o, t] : b.feeds) std::memset(t.raw_data(), 0, t.TotalBytes());
  b.init = GlobalVariablesInitializer(root);
  if (!rules.empty()) app::ApplyPlacementRules(*b.graph, app::ParsePlacementRules(rules));
  return b;
}

SessionOptions TwoDevices() {
  SessionOptions o = OnDevice(false);
  o.device_count["CPU"] = 2;
  o.cpu_device_threads = 1;
  o.rewrite_options.remapping = false;  // the profile and the simulated graph name the same nodes
  for (const char* d : {"cpu:0", "cpu:1"}) o.device_memory[d] = int64_t{1} << 40;  // counted
  return o;
}

struct Measured {
  double step_ms = 0, predicted_ms = 0, auto_predicted_ms = 0;
  std::vector<int64_t> peak, predicted_peak;  // per device (/cpu:0, /cpu:1): bytes
  // One traced step's peak, and the simulator's count of it from its measured times.
  std::vector<int64_t> step_peak, replayed_peak;
};

// Runs `b` under `o`: the median step of 10 after 3 warm-up steps, and the simulator's step for
// the placement the session chose, with `profile`'s times.
Measured Run(Built& b, const SessionOptions& o, const std::shared_ptr<Profile>& profile,
             bool record) {
  Session sess(*b.graph, o);
  sess.Run({}, {}, {b.init});
  for (int i = 0; i < 3; ++i) sess.Run(b.feeds, {}, b.targets);
  std::vector<double> t;
  for (int i = 0; i < 10; ++i) {
    RunOptions ro;
    ro.trace = record;
    RunMetadata md;
    auto start = std::chrono::steady_clock::now();
    sess.Run(ro, b.feeds, {}, b.targets, &md);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count());
    if (record) RecordProfile(md, profile.get());
  }
  Measured m;
  m.step_ms = Median(t);
  // The peak over 10 more steps: the variables and the most a step held at once (which varies
  // with how the devices' threads interleave).
  sess.ResetPeakMemory();
  for (int i = 0; i < 10; ++i) sess.Run(b.feeds, {}, b.targets);
  for (const auto& [device, stats] : sess.DeviceMemoryStats())
    m.peak.push_back(stats.peak_bytes_in_use);
  for (const PlacementPrediction& p : sess.PlacementPredictions())
    m.auto_predicted_ms = p.step_us / 1e3;  // the step's signature was placed last
  if (record) return m;
  // One more step, traced: its own peak, and the peak the simulator counts from its times.
  sess.ResetPeakMemory();
  RunOptions ro;
  ro.trace = true;
  RunMetadata md;
  sess.Run(ro, b.feeds, {}, b.targets, &md);
  for (const auto& [device, stats] : sess.DeviceMemoryStats())
    m.step_peak.push_back(stats.peak_bytes_in_use);
  CostModel cost(
      LocalMachine(sess.devices(), LoadDeviceRates(DeviceRatesPath()), 1, {}).ValueOrThrow(),
      {.unknown_dim = 32, .profile = profile});
  std::vector<Node*> nodes = Prune(b.fed, {}, b.targets);
  CostGraph g = BuildCostGraph(nodes, cost);
  const auto where = sess.DevicePlacement();
  std::vector<int> device_of;
  for (const Node* n : g.nodes) device_of.push_back(cost.machine().Find(where.at(n->name())));
  m.replayed_peak = ScheduleFromTrace(g, cost.machine(), device_of, md).peak_bytes;
  const Schedule s = Simulate(g, cost, device_of).ValueOrThrow();
  m.predicted_ms = s.step_us / 1e3;
  m.predicted_peak = s.peak_bytes;
  return m;
}

// "cpu:0/cpu:1" in kB.
std::string Kilobytes(const std::vector<int64_t>& bytes) {
  std::string out;
  for (int64_t b : bytes) out += (out.empty() ? "" : "/") + std::to_string(b / 1024);
  return out;
}

}  // namespace

void AutoPlacementFigure() {
  const std::vector<std::string> configs = {"one", "expert", "m-sct", "m-etf", "m-topo"};
  // PF_BENCH_ROUNDS: more rounds where the machine is noisy (3 by default).
  const char* env = std::getenv("PF_BENCH_ROUNDS");
  const int rounds = env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 3;
  for (const Case& c : kCases) {
    auto profile = std::make_shared<Profile>();
    {
      Built b = Build(c, "");
      Run(b, TwoDevices(), profile, true);  // all on /cpu:0, traced
    }
    std::map<std::string, std::vector<Measured>> runs;
    for (int r = 0; r < rounds; ++r) {
      for (const std::string& config : configs) {
        SessionOptions o = TwoDevices();
        if (config.rfind("m-", 0) == 0) {
          o.placement = "auto";
          o.placement_options.algorithm = config;
          o.placement_options.profile = profile;
        }
        Built b = Build(c, config == "expert" ? c.expert : "");
        runs[config].push_back(Run(b, o, profile, false));
      }
    }
    std::map<std::string, double> step;
    for (const std::string& config : configs) {
      std::vector<double> measured, predicted, auto_predicted;
      for (const Measured& m : runs[config]) {
        measured.push_back(m.step_ms);
        predicted.push_back(m.predicted_ms);
        auto_predicted.push_back(m.auto_predicted_ms);
      }
      step[config] = Median(measured);
      const double p = Median(predicted);
      const Measured& last = runs[config].back();  // peaks: the same in every round
      std::printf(
          "auto_placement model=%s placement=%s measured_ms=%.3f predicted_ms=%.3f "
          "error_pct=%+.1f planner_predicted_ms=%.3f peak_kb=%s predicted_peak_kb=%s "
          "step_peak_kb=%s replayed_peak_kb=%s batch=%lld "
          "rounds=%d\n",
          c.model, config.c_str(), step[config], p, 100 * (p - step[config]) / step[config],
          Median(auto_predicted), Kilobytes(last.peak).c_str(),
          Kilobytes(last.predicted_peak).c_str(), Kilobytes(last.step_peak).c_str(),
          Kilobytes(last.replayed_peak).c_str(), static_cast<long long>(c.batch), rounds);
    }
    const double best_rules = std::min(step["one"], step["expert"]);
    std::printf(
        "auto_placement model=%s m_sct_vs_best_rules=%.3f m_sct_speedup_vs_one=%.3f "
        "(ratios of measured steps; < 1 is faster)\n",
        c.model, step["m-sct"] / best_rules, step["one"] / step["m-sct"]);
  }
}

}  // namespace pf::bench
