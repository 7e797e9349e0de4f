// pf-place's simulated machines and its models (issue 37): devices named as ParseMachine names
// them, a kernel registry in which a simulated GPU runs every op the CPU runs (a plan for a
// machine this process does not have only asks where each node may go), the Chrome trace of a
// simulated step, and the LSTM language model of the 4- and 8-GPU goal.
#pragma once

#include <placeflow/placeflow.h>

#include <memory>
#include <string>
#include <vector>

#include "placeflow/graph/kernel.h"
#include "placeflow/placer/schedule.h"

namespace pf::app {

DeviceSet SimulatedDevices(const MachineModel& machine);
// The global registry's kernels for the ops of `g`, and a copy of each CPU kernel for "GPU".
std::unique_ptr<KernelRegistry> SimulatedKernels(const Graph& g);

// The simulated step as a RunMetadata (one track per device and thread, transfers on a track per
// link), for WriteChromeTrace.
RunMetadata SimulatedTrace(const CostGraph& graph, const Schedule& schedule,
                           const MachineModel& machine);

// An LSTM language model unrolled over `steps`: word ids [batch] per step, embedded, `layers`
// LSTMCells of `hidden` units (scopes lstm_<l>/), a softmax over `vocab` words per step (scope
// softmax/), the mean cross-entropy, plain SGD.
struct LstmLmOptions {
  int64_t vocab = 10000, hidden = 1024, layers = 8, steps = 64, batch = 256;
};
Operation LstmLm(const Scope& root, const LstmLmOptions& options);
// The experts' split of seed 003 as --place rules: layer l on /gpu:(l * gpus / layers), the
// embedding on /gpu:0 and the softmax on the last GPU (each with its gradients and their sums).
std::string LstmLmExpertRules(const LstmLmOptions& options, int gpus);

}  // namespace pf::app
