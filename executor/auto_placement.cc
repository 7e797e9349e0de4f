#include "placeflow/executor/auto_placement.h"

#include "placeflow/core/logging.h"

namespace pf {

StatusOr<std::unique_ptr<AutomaticPlacement>> MakeAutomaticPlacement(
    const PlacementOptions& options, const DeviceSet& devices, int cpu_threads,
    const std::map<std::string, int64_t>& device_memory) {
  auto a = std::make_unique<AutomaticPlacement>();
  PF_ASSIGN_OR_RETURN(a->options.algorithm, ParsePlacementAlgorithm(options.algorithm));
  if (options.memory_headroom < 0 || options.memory_headroom >= 1) {
    return errors::InvalidArgument("PlacementOptions::memory_headroom must be in [0, 1), not ",
                                   options.memory_headroom);
  }
  a->options.memory_headroom = options.memory_headroom;
  std::map<std::string, int64_t> memory;
  for (const auto& [name, bytes] : device_memory) memory[ShortDeviceName(name)] = bytes;
  const std::string path = options.device_rates.empty() ? DeviceRatesPath() : options.device_rates;
  PF_ASSIGN_OR_RETURN(MachineModel machine,
                      LocalMachine(devices, LoadDeviceRates(path), cpu_threads, memory));
  CostModelOptions cost;
  cost.unknown_dim = options.unknown_dim > 0 ? options.unknown_dim : 32;
  cost.profile = options.profile;
  a->cost = std::make_shared<CostModel>(std::move(machine), std::move(cost));
  return a;
}

void PlanWholeGraph(const Graph& graph, const DeviceSet& devices, PlacerOptions options,
                    AutomaticPlacement* automatic) {
  bool missing = false;
  for (const Node* n : graph.nodes()) missing = missing || !automatic->planned.count(n->name());
  if (!missing) return;
  options.automatic = automatic;
  StatusOr<Placement> p = Place(graph.nodes(), devices, options);
  if (!p.ok()) {
    PF_LOG_INFO(
        "Automatic placement plans each signature on its own: the whole graph cannot be "
        "placed ({})",
        p.status().message());
    return;
  }
  for (const auto& [n, d] : p->device) automatic->planned[n->name()] = d->name();
  automatic->planned_kept_rules = p->kept_rules;
}

void RecordProfile(const RunMetadata& metadata, Profile* profile) {
  for (const NodeExecStats& s : metadata.step_stats) {
    DeviceName d;
    if (!DeviceName::Parse(s.device, &d) || !d.has_type) continue;
    profile->Record(s.node, d.type, static_cast<double>(s.end_us - s.start_us));
    profile->RecordOutputBytes(s.node, s.output_bytes);
  }
}

Schedule ScheduleFromTrace(const CostGraph& graph, const MachineModel& machine,
                           const std::vector<int>& device_of, const RunMetadata& metadata) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    index[graph.nodes[i]->name()] = static_cast<int>(i);
  Schedule s;
  s.nodes.resize(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size() && i < device_of.size(); ++i)
    s.nodes[i].device = device_of[i];
  for (const NodeExecStats& st : metadata.step_stats) {
    auto it = index.find(st.node);
    if (it == index.end()) continue;
    s.nodes[it->second].start = static_cast<double>(st.start_us);
    s.nodes[it->second].end = static_cast<double>(st.end_us);
  }
  AccountMemory(graph, machine, &s);
  return s;
}

}  // namespace pf
