// Timing a model trained on N towers: seed article 000's 1-vs-2 experiment (pf-train
// --towers-table) and pf-bench's tower figures share it.
//
//   pf::towers::TimingOptions o;  o.towers = 2;  o.steps = 1000;
//   pf::towers::Timing t = pf::towers::TimeTowers(o);   // t.seconds, t.examples_per_s, shares
//
// Shares come from one traced step (after the timed ones), as parts of the step's wall time:
//   transfer: the wall time during which some tensor was between its _Send starting and its
//     _Recv finishing (overlapping transfers count once), over the step's wall time;
//   aggregation: the wall time during which a WeightedMean kernel ran or, for all-reduce, the
//     span from the last participant's arrival to the end of the collective, over the step's.
// Each is at most 100%.
#pragma once

#include <string>
#include <vector>

#include "placeflow/models/models.h"

namespace pf::towers {

struct TimingOptions {
  std::string model = "mlp_seed000";
  int towers = 1;            // 0: the plain graph, no replication
  std::string kind = "cpu";  // towers on /cpu:i (logical CPU devices) or /gpu:i
  train::Aggregation aggregation = train::Aggregation::kParameterDevice;
  std::string variable_device = train::kAutoVariableDevice;
  std::string optimizer;  // "": the model's default
  int64_t steps = 100;
  int64_t batch = 2000;
  int threads = 0;  // the session's pool (0: the process default)
};

struct Timing {
  std::vector<std::string> devices;
  double seconds = 0;         // the timed steps together, after two warm-up steps
  double ms_per_step = 0;     // the median step
  double examples_per_s = 0;  // at the median step
  double transfer_ms = 0, transfer_share = 0;
  double aggregation_ms = 0, aggregation_share = 0;
  int transfers = 0;  // _Recv nodes in the traced step
};

// The devices of `towers` towers of `kind` ("cpu" or "gpu").
std::vector<std::string> TowerDevices(const std::string& kind, int towers);
// Builds, initialises and times the model on a fixed synthetic batch.
Timing TimeTowers(const TimingOptions& options);
// The transfer and aggregation wall time of one traced step (see above), in ms: each at most
// the step's wall time.
void StepShares(const RunMetadata& md, double* transfer_ms, double* aggregation_ms, int* transfers);

}  // namespace pf::towers
