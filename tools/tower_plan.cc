#include "tools/tower_plan.h"

#include <fmt/format.h>

#include <cstdio>
#include <utility>
#include <vector>

#include "placeflow/devices/gpu_probe.h"
#include "tools/tower_timing.h"

namespace pf::app {

TowerPlan PlanTowers(const TrainArgs& a) {
  const int gpus = CudaDeviceCount();
  TowerPlan p;
  p.kind = a.devices == "all" ? (gpus > 0 ? "gpu" : "cpu") : a.devices;
  p.count = a.towers == "auto" ? (p.kind == "gpu" ? std::max(1, gpus) : 2)
                               : ParseCount(a.towers, "--towers");
  if (p.kind == "gpu" && gpus == 0) {
    if (a.no_soft_placement)
      throw Error(errors::InvalidArgument(
          "--devices gpu: no GPU found, and soft placement is off (--no-soft-placement)"));
    p.kind = "cpu";
    std::string devices;
    for (int i = 0; i < p.count; ++i) devices += (i ? "," : "") + fmt::format("/cpu:{}", i);
    p.note =
        fmt::format("no GPU found: {} tower{} on {}", p.count, p.count == 1 ? "" : "s", devices);
  }
  return p;
}

std::string VariableLayout(const TrainArgs& a, const std::string& device) {
  if (a.variable_device != train::kAutoVariableDevice) return ", variables on " + device;
  return fmt::format(", variables on {} (auto: {}; --variable-device to choose)", device,
                     device == "/cpu:0" ? "towers on CPU devices" : "every tower on a GPU");
}

train::Aggregation AggregationOf(const TrainArgs& a) {
  return a.aggregation == "allreduce" ? train::Aggregation::kAllReduce
                                      : train::Aggregation::kParameterDevice;
}

namespace {

// The table's header: the run's settings, then the column names.
void PrintTableHeader(const TrainArgs& a, const towers::TimingOptions& o) {
  train::TowerOptions resolve;
  resolve.variable_device = a.variable_device;
  const std::string layout = a.aggregation == "param"
                                 ? VariableLayout(a, train::ResolveVariableDevice(
                                                         resolve, towers::TowerDevices(o.kind, 1)))
                                 : "";
  std::printf("%s, batch %lld, %lld steps, %s, aggregation %s%s\n", a.model.c_str(),
              static_cast<long long>(o.batch), static_cast<long long>(o.steps),
              a.optimizer.empty() ? "default optimizer" : a.optimizer.c_str(),
              a.aggregation.c_str(), layout.c_str());
  std::printf("%-7s %-24s %9s %9s %11s %10s %12s\n", "towers", "devices", "total_s", "ms/step",
              "examples/s", "send_recv", "aggregation");
}

}  // namespace

// Seed article 000's experiment: the same model and batch, timed with each tower count.
int TowersTable(const TrainArgs& a) {
  towers::TimingOptions o;
  o.model = a.model;
  const TowerPlan plan = PlanTowers(a);
  if (!plan.note.empty()) std::printf("pf-train: %s\n", plan.note.c_str());
  o.kind = plan.kind;
  o.aggregation = AggregationOf(a);
  o.variable_device = a.variable_device;
  o.optimizer = a.optimizer;
  o.steps = a.steps;
  o.batch = a.batch;
  o.threads = a.threads;
  PrintTableHeader(a, o);
  std::vector<std::pair<int, double>> totals;
  size_t start = 0;
  while (start <= a.towers_table.size()) {
    size_t end = a.towers_table.find(',', start);
    if (end == std::string::npos) end = a.towers_table.size();
    o.towers = ParseCount(a.towers_table.substr(start, end - start), "--towers-table");
    start = end + 1;
    towers::Timing t = towers::TimeTowers(o);
    std::string devices;
    for (const std::string& d : t.devices) devices += (devices.empty() ? "" : ",") + d;
    std::printf("%-7d %-24s %9.2f %9.3f %11.0f %9.1f%% %11.1f%%\n", o.towers, devices.c_str(),
                t.seconds, t.ms_per_step, t.examples_per_s, 100 * t.transfer_share,
                100 * t.aggregation_share);
    std::fflush(stdout);
    totals.emplace_back(o.towers, t.seconds);
  }
  std::printf(
      "(send_recv, aggregation: the share of one traced step's wall time during which a transfer, "
      "an aggregation, was in flight)\n");
  // The article's own lines ("N块GPU用时: X.XXs": N GPUs took X.XX s).
  for (const auto& [n, seconds] : totals)
    std::printf("%d tower(s) on %s: %.2fs\n", n, o.kind.c_str(), seconds);
  return 0;
}

}  // namespace pf::app
