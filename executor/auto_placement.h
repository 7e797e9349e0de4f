// SessionOptions::placement = "auto" (issue 37, docs/placement.md): the machine model of a
// session's devices, the plan of its whole graph (so that every signature agrees on where a
// variable lives), and profiles from traced steps.
//
//   auto profile = std::make_shared<pf::Profile>();
//   pf::RecordProfile(metadata, profile.get());   // a traced step of an earlier session
//   options.placement = "auto";  options.placement_options.profile = profile;
#pragma once

#include <map>
#include <memory>
#include <string>

#include "placeflow/executor/session.h"
#include "placeflow/placer/placer.h"
#include "placeflow/placer/schedule.h"

namespace pf {

// The machine model (LocalMachine with the rates file's figures, each CPU device's threads and
// the memory limits) and the algorithm. Errors: an unknown algorithm or device name.
StatusOr<std::unique_ptr<AutomaticPlacement>> MakeAutomaticPlacement(
    const PlacementOptions& options, const DeviceSet& devices, int cpu_threads,
    const std::map<std::string, int64_t>& device_memory);

// Plans every node of `graph` not planned yet, keeping the earlier decisions. A graph that cannot
// be placed whole (a node no device has a kernel for, left out of every step) is planned one
// signature at a time instead.
void PlanWholeGraph(const Graph& graph, const DeviceSet& devices, PlacerOptions options,
                    AutomaticPlacement* automatic);

// Adds each traced node's time (RunOptions::trace) to `profile`, under its device's type, and the
// bytes of its outputs.
void RecordProfile(const RunMetadata& metadata, Profile* profile);

// The schedule a traced step ran: each node of `graph` on `device_of`'s device (an index into
// `machine`'s) at its measured start and end (0 for a node the trace lacks), with the step time
// and the per-device peak memory that AccountMemory counts from those times. Set beside the
// measured peak of the same step, it checks the simulator's memory accounting apart from its
// scheduling (pf-bench auto_placement's replayed_peak_kb).
Schedule ScheduleFromTrace(const CostGraph& graph, const MachineModel& machine,
                           const std::vector<int>& device_of, const RunMetadata& metadata);

}  // namespace pf
