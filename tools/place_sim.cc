#include "tools/place_sim.h"

#include <set>

namespace pf::app {

namespace {

// A device of a simulated machine: it has a name, a type and a priority; nothing runs on it.
class SimulatedDevice : public Device {
 public:
  SimulatedDevice(std::string type, int id) : Device(type, id), gpu_(type != kDeviceCpu) {}
  Allocator* GetAllocator() override { return CpuAllocator(); }
  int priority() const override { return gpu_ ? 200 : 100; }
  bool uses_host_memory() const override { return !gpu_; }

 private:
  bool gpu_;
};

KernelDef CopyFor(const KernelDef& k, const std::string& type) {
  KernelDef copy(k.op(), type);
  for (const auto& [attr, allowed] : k.constraints()) copy.TypeConstraint(attr, allowed);
  for (const std::string& arg : k.host_memory_args()) copy.HostMemory(arg);
  copy.Priority(k.priority());
  copy.factory = k.factory;
  return copy;
}

}  // namespace

DeviceSet SimulatedDevices(const MachineModel& machine) {
  DeviceSet devices;
  std::map<std::string, int> next;
  for (const DeviceModel& d : machine.devices)
    devices.Add(std::make_unique<SimulatedDevice>(d.type, next[d.type]++));
  return devices;
}

std::unique_ptr<KernelRegistry> SimulatedKernels(const Graph& g) {
  auto registry = std::make_unique<KernelRegistry>();
  std::set<std::string> ops;
  for (const Node* n : g.nodes()) ops.insert(n->op());
  for (const std::string& op : ops) {
    for (const KernelDef* k : KernelRegistry::Global()->KernelsForOp(op)) {
      if (k->device_type() != kDeviceCpu) continue;
      registry->Register(CopyFor(*k, kDeviceCpu));
      registry->Register(CopyFor(*k, kDeviceGpu));
    }
  }
  return registry;
}

RunMetadata SimulatedTrace(const CostGraph& graph, const Schedule& schedule,
                           const MachineModel& machine) {
  RunMetadata md;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Schedule::NodeRun& r = schedule.nodes[i];
    NodeExecStats s;
    s.node = graph.nodes[i]->name();
    s.op = graph.nodes[i]->op();
    s.device = machine.devices[r.device].name;
    s.thread = static_cast<uint64_t>(r.slot);
    s.start_us = static_cast<int64_t>(r.start);
    s.end_us = static_cast<int64_t>(r.end);
    s.output_bytes = graph.output_bytes[i];
    md.step_stats.push_back(std::move(s));
  }
  for (const Schedule::Transfer& t : schedule.transfers) {
    NodeExecStats s;
    s.node = graph.nodes[t.src]->name() + ":" + std::to_string(t.output);
    s.op = "transfer";
    s.device = "link " + ShortDeviceName(machine.devices[t.from].name) + " -> " +
               ShortDeviceName(machine.devices[t.to].name);
    s.start_us = static_cast<int64_t>(t.start);
    s.end_us = static_cast<int64_t>(t.end);
    s.output_bytes = t.bytes;
    md.step_stats.push_back(std::move(s));
  }
  md.step_us = static_cast<int64_t>(schedule.step_us);
  return md;
}

Operation LstmLm(const Scope& root, const LstmLmOptions& o) {
  Scope embed_scope = root.WithVariableScope("embedding");
  Variable embedding =
      GetVariable(embed_scope, "table", {o.vocab, o.hidden}, init::RandomUniform(-0.05, 0.05, 1));
  std::vector<std::unique_ptr<layers::LSTMCell>> cells;
  std::vector<Scope> layer_scopes;
  for (int64_t l = 0; l < o.layers; ++l) {
    layer_scopes.push_back(root.NewSubScope("lstm_" + std::to_string(l)));
    cells.push_back(
        std::make_unique<layers::LSTMCell>("lstm_" + std::to_string(l), o.hidden, 1.f, l + 1));
    cells.back()->Build(layer_scopes.back(), o.hidden, DT_FLOAT);
  }
  Scope soft = root.WithVariableScope("softmax");
  Variable w = GetVariable(soft, "w", {o.hidden, o.vocab}, init::RandomUniform(-0.05, 0.05, 2));
  std::vector<std::vector<Output>> state(o.layers);
  for (int64_t l = 0; l < o.layers; ++l) {
    Output zeros = ops::Const(layer_scopes[l], Tensor(DT_FLOAT, {o.batch, o.hidden}));
    state[l] = {zeros, zeros};
  }
  std::vector<Output> losses;
  for (int64_t t = 0; t < o.steps; ++t) {
    Output words =
        ops::Placeholder(embed_scope.WithOpName("words_" + std::to_string(t)), DT_INT32, {o.batch});
    Output labels =
        ops::Placeholder(soft.WithOpName("labels_" + std::to_string(t)), DT_INT32, {o.batch});
    Output x = ops::Gather(embed_scope, embedding.value(), words);
    for (int64_t l = 0; l < o.layers; ++l) {
      Output h;
      state[l] = cells[l]->Step(layer_scopes[l], x, state[l], &h);
      x = h;
    }
    Output logits = ops::MatMul(soft, x, w.value());
    losses.push_back(ops::SparseSoftmaxCrossEntropyWithLogits(soft, logits, labels).first);
  }
  Output loss = ops::Mean(soft, ops::AddN(soft, losses));
  train::GradientDescent sgd(0.1);
  return sgd.Minimize(root, loss);
}

std::string LstmLmExpertRules(const LstmLmOptions& o, int gpus) {
  std::string rules = "embedding/=/gpu:0";
  for (int64_t l = 0; l < o.layers; ++l)
    rules += fmt::format(",lstm_{}/=/gpu:{}", l, l * gpus / o.layers);
  return rules + fmt::format(",softmax/=/gpu:{}", gpus - 1);
}

}  // namespace pf::app
