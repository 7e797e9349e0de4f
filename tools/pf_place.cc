// pf-place: plans a model's training step for a machine, real or not, and predicts its step time
// and memory per device (issue 37, docs/placement.md).
//
//   pf-place --model lstm_lm --devices "gpu:8x16GB,nvlink=450GB/s"
//   pf-place --model mnist_mlp --devices cpu:2 --place "layer1=/cpu:0,layer2=/cpu:1" \
//       --algorithm m-sct --trace plan.json
//
// Rows: the rule placer with no requests ("rules": everything on the highest-priority device),
// the experts' split (--place, or lstm_lm's layer-per-GPU split), and each algorithm. A plan whose
// predicted peak exceeds a device's memory says so.
#include <placeflow/placeflow.h>

#include <cstdio>
#include <string>

#include "placeflow/executor/subgraph.h"
#include "placeflow/models/models.h"
#include "placeflow/placer/schedule.h"
#include "tools/flags.h"
#include "tools/place_bench.h"
#include "tools/place_sim.h"
#include "tools/placement_rules.h"
#include "tools/run_main.h"

namespace {

struct Args {
  std::string model = "mnist_mlp", devices = "cpu:2", algorithm = "all", place, trace;
  std::string device_memory;
  int64_t batch = 0, layers = 8, steps = 64, hidden = 1024, vocab = 10000, unknown_dim = 32;
  bool print_plan = false;
};

pf::flags::FlagSet Flags(Args* a) {
  pf::flags::FlagSet f("pf-place", "plans a model's training step on a machine and predicts it");
  f.String("--model", &a->model, "a pf-train model, wide (8 branches) or lstm_lm");
  f.String("--devices", &a->devices,
           "the machine: cpu:N[xMEM], gpu:N[xMEM][@GFLOPS], "
           "nvlink=BW, pcie=BW, network=BW, threads=N");
  f.String("--device-memory", &a->device_memory, "memory per device, e.g. cpu:0=2GB,cpu:1=2GB");
  f.String("--algorithm", &a->algorithm, "which automatic placements to show",
           {"all", "m-sct", "m-etf", "m-topo"});
  f.String("--place", &a->place, "the experts' split to compare: regex=device,...");
  f.String("--trace", &a->trace, "Chrome trace of the simulated step of --algorithm's plan");
  f.Switch("--print-plan", &a->print_plan, "one line per node: its device in each plan");
  f.Int("--batch", &a->batch, "examples per step (0: the model's)", 0, 1 << 20);
  f.Int("--layers", &a->layers, "lstm_lm: LSTM layers", 1, 64);
  f.Int("--steps", &a->steps, "lstm_lm: unrolled steps", 1, 1024);
  f.Int("--hidden", &a->hidden, "lstm_lm: units per layer", 1, 1 << 16);
  f.Int("--vocab", &a->vocab, "lstm_lm: words", 2, 1 << 22);
  return f;
}

struct Built {
  pf::Graph graph;
  std::vector<pf::Output> fed;
  std::vector<pf::Operation> targets;
};

void Build(const Args& a, int gpus, bool experts, Built* b) {
  pf::Scope root = pf::Scope::Root(&b->graph);
  if (a.model == "lstm_lm") {
    pf::app::LstmLmOptions o{a.vocab, a.hidden, a.layers, a.steps, a.batch > 0 ? a.batch : 256};
    b->targets = {pf::app::LstmLm(root, o)};
    if (experts && a.place.empty() && gpus > 0) {
      pf::app::ApplyPlacementRules(
          b->graph, pf::app::ParsePlacementRules(pf::app::LstmLmExpertRules(o, gpus)));
    }
  } else if (a.model == "wide") {
    b->targets = {pf::bench::WideModel(root, 8, 20, a.batch > 0 ? a.batch : 64).node};
  } else {
    pf::models::Model m = pf::models::BuildModel(a.model, root, {});
    b->targets = {m.train_op};
  }
  if (experts && !a.place.empty())
    pf::app::ApplyPlacementRules(b->graph, pf::app::ParsePlacementRules(a.place));
}

std::string Bytes(int64_t b) {
  return b >= (int64_t{1} << 30) ? fmt::format("{:.2f} GB", b / 1e9)
                                 : fmt::format("{:.1f} MB", b / 1e6);
}

// Places `b` (automatically with `algorithm`, else by the rules) and prints the prediction.
pf::Status Row(const std::string& label, Built& b, const pf::MachineModel& machine,
               const pf::CostModelOptions& cost_options, const char* algorithm, const Args& a) {
  pf::DeviceSet devices = pf::app::SimulatedDevices(machine);
  auto kernels = pf::app::SimulatedKernels(b.graph);
  std::vector<pf::Node*> nodes = pf::Prune({}, {}, b.targets);
  std::sort(nodes.begin(), nodes.end(), [](auto* x, auto* y) { return x->id() < y->id(); });
  auto cost = std::make_shared<pf::CostModel>(machine, cost_options);
  pf::AutomaticPlacement automatic;
  automatic.cost = cost;
  pf::PlacerOptions options;
  options.allow_soft_placement = true;
  if (algorithm != nullptr) {
    PF_ASSIGN_OR_RETURN(automatic.options.algorithm, pf::ParsePlacementAlgorithm(algorithm));
    options.automatic = &automatic;
  }
  pf::StatusOr<pf::Placement> p = pf::Place(nodes, devices, options, *kernels);
  if (!p.ok()) {
    std::printf("%-8s no plan: %s\n", label.c_str(), p.status().message().c_str());
    return pf::Status::OK();
  }
  pf::CostGraph g = pf::BuildCostGraph(nodes, *cost);
  std::vector<int> device_of;
  for (const pf::Node* n : g.nodes) device_of.push_back(machine.Find(p->device.at(n)->name()));
  PF_ASSIGN_OR_RETURN(pf::Schedule s, pf::Simulate(g, *cost, device_of));
  std::string per_device, over;
  for (int d = 0; d < cost->num_devices(); ++d) {
    const int count = static_cast<int>(std::count(device_of.begin(), device_of.end(), d));
    if (count == 0) continue;
    per_device +=
        fmt::format("  {}: {} nodes, peak {}", pf::ShortDeviceName(machine.devices[d].name), count,
                    Bytes(s.peak_bytes[d]));
    const int64_t limit = machine.devices[d].memory_bytes;
    if (limit > 0 && s.peak_bytes[d] > limit)
      over += fmt::format(" EXCEEDS {} ({} of {})", pf::ShortDeviceName(machine.devices[d].name),
                          Bytes(s.peak_bytes[d]), Bytes(limit));
  }
  std::printf("%-8s step %10.3f ms  planned in %7.1f ms%s\n        %s\n", label.c_str(),
              s.step_us / 1e3, p->planning_ms, over.c_str(), per_device.c_str());
  if (a.print_plan) {
    for (const pf::Node* n : g.nodes)
      std::printf("  %s %s (%s): %s\n", label.c_str(), n->name().c_str(), n->op().c_str(),
                  p->device.at(n)->name().c_str());
  }
  if (!a.trace.empty() && algorithm != nullptr &&
      (a.algorithm == algorithm || (a.algorithm == "all" && std::string(algorithm) == "m-sct"))) {
    PF_RETURN_IF_ERROR(pf::WriteChromeTrace(pf::app::SimulatedTrace(g, s, machine), a.trace));
    std::printf("        trace: %s\n", a.trace.c_str());
  }
  return pf::Status::OK();
}

int Main(int argc, const char* const* argv) {
  Args a;
  pf::flags::FlagSet flags = Flags(&a);
  pf::Status parsed = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "pf-place: %s\n", parsed.message().c_str());
    return 2;
  }
  pf::MachineModel machine = pf::ParseMachine(a.devices).ValueOrThrow();
  for (const auto& [name, bytes] : pf::ParseDeviceMemory(a.device_memory).ValueOrThrow()) {
    bool found = false;
    for (pf::DeviceModel& d : machine.devices) {
      if (pf::ShortDeviceName(d.name) == name) d.memory_bytes = bytes, found = true;
    }
    if (!found) throw pf::Error(pf::errors::InvalidArgument("--device-memory: no device ", name));
  }
  int gpus = 0;
  for (const pf::DeviceModel& d : machine.devices) gpus += d.type == pf::kDeviceGpu;
  pf::CostModelOptions cost_options;
  cost_options.unknown_dim = a.batch > 0 ? a.batch : a.unknown_dim;
  std::printf("machine: %s (%zu devices)\n", a.devices.c_str(), machine.devices.size());
  Built plain;
  Build(a, 0, false, &plain);
  std::printf("model: %s, %d nodes\n", a.model.c_str(), plain.graph.num_nodes());
  pf::ThrowIfError(Row("rules", plain, machine, cost_options, nullptr, a));
  if (!a.place.empty() || (a.model == "lstm_lm" && gpus > 0)) {
    Built experts;
    Build(a, a.model == "lstm_lm" && a.place.empty() ? gpus : 0, true, &experts);
    pf::ThrowIfError(Row("experts", experts, machine, cost_options, nullptr, a));
  }
  for (const char* algorithm : {"m-sct", "m-etf", "m-topo"}) {
    if (a.algorithm == "all" || a.algorithm == algorithm)
      pf::ThrowIfError(Row(algorithm, plain, machine, cost_options, algorithm, a));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return pf::tools::RunMain("pf-place", Main, argc, argv); }
