#include "tools/tower_timing.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <random>
#include <utility>

namespace pf::towers {

std::vector<std::string> TowerDevices(const std::string& kind, int towers) {
  std::vector<std::string> out;
  for (int i = 0; i < towers; ++i) out.push_back("/" + kind + ":" + std::to_string(i));
  return out;
}

namespace {

// The length of the union of `spans` ([start, end) in µs), each clipped to [0, limit]:
// overlapping spans count once, so the total never exceeds `limit`.
int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>> spans, int64_t limit) {
  for (auto& [b, e] : spans) {
    b = std::clamp<int64_t>(b, 0, limit);
    e = std::clamp<int64_t>(e, 0, limit);
  }
  std::sort(spans.begin(), spans.end());
  int64_t total = 0, covered_to = 0;
  for (const auto& [b, e] : spans) {
    const int64_t from = std::max(b, covered_to);
    if (e > from) {
      total += e - from;
      covered_to = e;
    }
  }
  return total;
}

}  // namespace

void StepShares(const RunMetadata& md, double* transfer_ms, double* aggregation_ms,
                int* transfers) {
  std::map<std::string, const NodeExecStats*> sends;
  for (const NodeExecStats& s : md.step_stats) {
    if (s.op == "_Send") sends[s.node] = &s;
  }
  std::vector<std::pair<int64_t, int64_t>> transfer_spans, aggregation_spans;
  int64_t last_arrival = -1, collective_end = -1;
  *transfers = 0;
  for (const NodeExecStats& s : md.step_stats) {
    if (s.op == "_Recv") {
      ++*transfers;
      // "<tensor>/_recv_on_<device>" pairs with "<tensor>/_send_to_<device>".
      std::string send_name = s.node;
      const size_t pos = send_name.rfind("/_recv_on_");
      if (pos != std::string::npos) send_name.replace(pos, 10, "/_send_to_");
      auto it = sends.find(send_name);
      const int64_t sent =
          it == sends.end() ? s.start_us : std::max(s.start_us, it->second->start_us);
      transfer_spans.emplace_back(sent, s.end_us);
    } else if (s.op == "WeightedMean") {
      aggregation_spans.emplace_back(s.start_us, s.end_us);
    } else if (s.op == "CollectiveAllReduce") {
      last_arrival = std::max(last_arrival, s.start_us);
      collective_end = std::max(collective_end, s.end_us);
    }
  }
  if (last_arrival >= 0) aggregation_spans.emplace_back(last_arrival, collective_end);
  // Wall time of the step during which a transfer (an aggregation) was in flight: transfers
  // that overlap count once, so a share of the step never exceeds 100%.
  const int64_t limit = md.step_us > 0 ? md.step_us : std::numeric_limits<int64_t>::max();
  *transfer_ms = UnionLength(std::move(transfer_spans), limit) / 1e3;
  *aggregation_ms = UnionLength(std::move(aggregation_spans), limit) / 1e3;
}

namespace {

void SyntheticBatch(const std::string& model, int64_t batch, Tensor* x, Tensor* y) {
  if (model == "mlp_seed000") return models::SeedBatch(batch, 1, x, y);
  std::mt19937 rng(1);
  *x = Tensor(DT_FLOAT, {batch, 784});
  *y = Tensor(DT_INT32, {batch});
  for (float& v : x->flat<float>()) v = static_cast<float>(rng() % 256) / 255.f;
  for (int32_t& v : y->flat<int32_t>()) v = static_cast<int32_t>(rng() % 10);
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Timing TimeTowers(const TimingOptions& o) {
  Graph g;
  g.set_seed(1);
  Scope root = Scope::Root(&g);
  models::ModelOptions mo;
  mo.optimizer = o.optimizer;
  Timing t;
  if (o.towers > 0) {
    train::TowerOptions to;
    to.devices = TowerDevices(o.kind, o.towers);
    to.aggregation = o.aggregation;
    to.variable_device = o.variable_device;
    mo.towers = to;
    t.devices = to.devices;
  }
  models::Model m = models::BuildModel(o.model, root, mo);
  SessionOptions so;
  so.allow_soft_placement = true;  // /gpu:i falls back to the CPU without a GPU backend
  so.device_count["CPU"] = o.kind == "cpu" ? std::max(1, o.towers) : 1;
  so.num_threads = o.threads;
  Session sess(g, so);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  Tensor x, y;
  SyntheticBatch(o.model, o.batch, &x, &y);
  const FeedDict feeds = {{m.input, x}, {m.target, y}};
  for (int i = 0; i < 2; ++i) sess.Run(feeds, {}, {m.train_op});
  std::vector<double> steps;
  for (int64_t i = 0; i < o.steps; ++i) {
    auto start = std::chrono::steady_clock::now();
    sess.Run(feeds, {}, {m.train_op});
    steps.push_back(Since(start));
    t.seconds += steps.back();
  }
  std::sort(steps.begin(), steps.end());
  t.ms_per_step = steps.empty() ? 0 : 1e3 * steps[steps.size() / 2];
  t.examples_per_s = t.ms_per_step > 0 ? o.batch / (t.ms_per_step / 1e3) : 0;
  RunOptions ro;
  ro.trace = true;
  RunMetadata md;
  sess.Run(ro, feeds, {}, {m.train_op}, &md);
  StepShares(md, &t.transfer_ms, &t.aggregation_ms, &t.transfers);
  const double step_ms = md.step_us / 1e3;
  t.transfer_share = step_ms > 0 ? t.transfer_ms / step_ms : 0;
  t.aggregation_share = step_ms > 0 ? t.aggregation_ms / step_ms : 0;
  return t;
}

}  // namespace pf::towers
