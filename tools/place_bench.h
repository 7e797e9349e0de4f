// pf-bench's placement figures (issue 37): the rule placer and automatic placement on a
// 100,000-node graph, the device rates the cost model reads, and automatic placement checked
// against measured steps on two logical CPU devices of one thread each.
#pragma once

#include <placeflow/placeflow.h>

#include <string>
#include <vector>

namespace pf::bench {

void PlacerFigure();         // placer: seconds for the rule placer on 100,000 nodes
void PlacerAutoFigure();     // placer_auto: the same graph, no requests, each algorithm
void DeviceRatesFigure();    // device_rates: measures one CPU thread, writes the rates file
void AutoPlacementFigure();  // auto_placement: predicted against measured steps, per placement

// The 8-branch model of auto_placement and pf-place: `branches` chains of `layers` (MatMul
// 256x256, Tanh) on a [batch, 256] input, summed; scopes branch_<i>/. Returns the sum.
Output WideModel(const Scope& root, int branches, int layers, int64_t batch);

}  // namespace pf::bench
