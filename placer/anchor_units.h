// m-sct's units (issue 37): anchors (variable groups, auto_place.cc's FindAnchors) that run one
// after the other join one unit, which m-sct places on one device whole.
//
// Each anchor is timed as its expensive nodes would run with unlimited devices (each as soon as
// its inputs are done; only the profiled step's nodes when there is a profile, else all but the
// initializers). An anchor joins the unit of the anchor it reads the most bytes from when their
// times overlap by less than a quarter of the smaller one's: a layer waits for the one before
// it, and splitting the two only adds crossings. Up to three quarters also joins, where the
// graph has parallelism enough for the devices elsewhere (its work over the time it takes) and
// the unit stays within a device's share of the work: a training step's layers overlap where a
// weight gradient runs beside the backward pass below it, and with independent branches to fill
// the devices that is not worth a crossing per layer; a pipeline stage grown past its share would
// hold the others up. An unrolled LSTM layer runs beside the next, one step behind: they stay
// apart and pipeline.
//
//   std::vector<int> unit = pf::SequentialUnits(graph, cost, problem, anchor_of);
//   unit[group]  // the group of its unit's first anchor (itself for a group that is no anchor)
#pragma once

#include <vector>

#include "placeflow/placer/auto_place.h"

namespace pf {

// The devices of the type the rules prefer for the graph's first node (the GPUs when there are
// any): the ones m-topo cuts the graph over, and the count units' parallelism is weighed against.
std::vector<int> PreferredDevices(const CostGraph& graph, const CostModel& cost,
                                  const PlacementProblem& problem);

// `anchor_of`: per CostGraph node, its anchor group, or -1.
std::vector<int> SequentialUnits(const CostGraph& graph, const CostModel& cost,
                                 const PlacementProblem& problem,
                                 const std::vector<int>& anchor_of);

}  // namespace pf
