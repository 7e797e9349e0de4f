#include "placeflow/placer/cost_model.h"

#include <algorithm>
#include <queue>
#include <unordered_map>

#include "placeflow/core/device_name.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/placer/schedule.h"

namespace pf {

namespace {

// A node alone on one thread taking longer than this splits over the device's threads (the
// executor's ParallelFor shards work of about this size) and takes them all.
constexpr double kLargeNodeUs = 10;
// An unknown dimension other than the first (the batch's, CostModelOptions::unknown_dim).
constexpr int64_t kUnknownInnerDim = 32;

bool IsOp(const Node& n, std::initializer_list<std::string_view> ops) {
  return std::find(ops.begin(), ops.end(), n.op()) != ops.end();
}

int64_t Dim(const Shape& s, int i, int64_t unknown) {
  if (s.unknown_rank() || i < 0 || i >= s.rank()) return unknown;
  return s.dim(i) < 0 ? unknown : s.dim(i);
}

}  // namespace

bool ForwardsInput(const Node& node) {
  if (!node.op_def().forwards_input()) return false;
  // Cast forwards only when it casts to its own type.
  return node.op() != "Cast" || node.attr<DType>("SrcT") == node.attr<DType>("DstT");
}

bool MachineModel::SharesMemory(int from, int to) const {
  const DeviceModel& a = devices[from];
  const DeviceModel& b = devices[to];
  return a.task == b.task && a.type == kDeviceCpu && b.type == kDeviceCpu;
}

const LinkModel& MachineModel::Link(int from, int to) const {
  const DeviceModel& a = devices[from];
  const DeviceModel& b = devices[to];
  if (a.task != b.task) return network;
  const bool gpu_a = a.type != kDeviceCpu, gpu_b = b.type != kDeviceCpu;
  if (gpu_a && gpu_b) return gpu_gpu;
  if (gpu_a || gpu_b) return host_gpu;
  return host_host;
}

int MachineModel::Find(const std::string& device_name) const {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].name == device_name) return static_cast<int>(i);
  return -1;
}

DeviceModel DefaultDeviceModel(const std::string& type) {
  DeviceModel d;
  d.type = type;
  if (type == kDeviceCpu) {
    d.gflops = 60;
    d.gbytes_per_s = 8;
    d.op_overhead_us = 0.3;
  } else {
    d.gflops = 51000;
    d.gbytes_per_s = 2000;
    d.op_overhead_us = 6;
  }
  return d;
}

void Profile::Record(const std::string& node, const std::string& device_type, double us) {
  samples_[node][device_type].push_back(us);
}

void Profile::RecordOutputBytes(const std::string& node, int64_t bytes) {
  int64_t& b = output_bytes_[node];
  b = std::max(b, bytes);
}

int64_t Profile::OutputBytes(const std::string& node) const {
  auto it = output_bytes_.find(node);
  return it == output_bytes_.end() ? -1 : it->second;
}

double Profile::Us(const std::string& node, const std::string& device_type) const {
  auto n = samples_.find(node);
  if (n == samples_.end()) return -1;
  auto t = n->second.find(device_type);
  if (t == n->second.end() || t->second.empty()) return -1;
  std::vector<double> v = t->second;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

CostModel::CostModel(MachineModel machine, CostModelOptions options)
    : machine_(std::move(machine)), options_(std::move(options)) {}

int64_t CostModel::Elements(const Shape& shape) const {
  if (shape.unknown_rank()) return options_.unknown_dim;
  double n = 1;  // in double: unknown dimensions must not overflow
  for (int i = 0; i < shape.rank(); ++i)
    n *= static_cast<double>(Dim(shape, i, i == 0 ? options_.unknown_dim : kUnknownInnerDim));
  return static_cast<int64_t>(std::min(n, 1e15));
}

int64_t CostModel::EstimatedOutputBytes(const Node& node, int i) const {
  const DType t = node.output_dtype(i);
  const int64_t size = t == DT_STRING ? 64 : static_cast<int64_t>(DTypeSize(t));
  return Elements(node.output_shape(i)) * size;
}

bool IsCheap(double us, const DeviceModel& device) { return us <= device.op_overhead_us + 1.0; }

bool CostModel::InProfiledStep(const Node& node) const {
  return !options_.only_profiled_step || !options_.profile || options_.profile->size() == 0 ||
         options_.profile->Has(node.name());
}

int64_t CostModel::OutputBytes(const Node& node, int i) const {
  if (!InProfiledStep(node)) return 0;
  const int64_t estimate = EstimatedOutputBytes(node, i);
  const int64_t measured = options_.profile ? options_.profile->OutputBytes(node.name()) : -1;
  if (measured < 0) return estimate;
  if (node.num_outputs() == 1) return measured;
  double total = 0;
  for (int k = 0; k < node.num_outputs(); ++k) total += EstimatedOutputBytes(node, k);
  if (total <= 0) return measured / node.num_outputs();
  return static_cast<int64_t>(static_cast<double>(measured) * estimate / total);
}

int64_t CostModel::InputBytes(const Node& node, int i) const {
  const Output& in = node.input(i);
  return OutputBytes(*in.node, in.index);
}

int64_t CostModel::PersistentBytes(const Node& node) const {
  return node.op_def().is_variable() && node.num_outputs() > 0 ? OutputBytes(node, 0) : 0;
}

CostModel::Work CostModel::Estimate(const Node& node) const {
  Work w;
  // Forwarding an input, holding a variable, handing out a constant or a feed: no work.
  if (ForwardsInput(node) || node.op_def().is_variable() || node.num_inputs() == 0) return w;
  for (int i = 0; i < node.num_inputs(); ++i) w.bytes += InputBytes(node, i);
  for (int i = 0; i < node.num_outputs(); ++i) w.bytes += OutputBytes(node, i);
  const int64_t u = options_.unknown_dim;
  auto in_shape = [&](int i) -> const Shape& {
    return node.input(i).node->output_shape(node.input(i).index);
  };
  if (IsOp(node, {"MatMul", "_FusedMatMul"}) && node.num_inputs() >= 2) {
    const bool ta = node.HasAttr("transpose_a") && node.attr<bool>("transpose_a");
    const int64_t k = Dim(in_shape(0), ta ? 0 : 1, u);
    w.flops = 2.0 * static_cast<double>(Elements(node.output_shape(0))) * k;
  } else if (IsOp(node, {"Conv2D", "_FusedConv2D"}) && node.num_inputs() >= 2) {
    const Shape& f = in_shape(1);  // [kh, kw, in, out]
    w.flops = 2.0 * Elements(node.output_shape(0)) * Dim(f, 0, u) * Dim(f, 1, u) * Dim(f, 2, u);
  } else if (IsOp(node, {"Conv2DBackpropInput", "Conv2DBackpropFilter"}) &&
             node.num_inputs() == 3) {
    const Shape& f = node.op() == "Conv2DBackpropInput" ? in_shape(1) : node.output_shape(0);
    w.flops = 2.0 * Elements(in_shape(2)) * Dim(f, 0, u) * Dim(f, 1, u) * Dim(f, 2, u);
  } else if (node.op().rfind("DepthwiseConv2dNative", 0) == 0 && node.num_inputs() >= 2) {
    const Shape& f =
        node.op() == "DepthwiseConv2dNativeBackpropFilter" ? node.output_shape(0) : in_shape(1);
    const Shape& big = node.op() == "DepthwiseConv2dNative" ? node.output_shape(0) : in_shape(2);
    w.flops = 2.0 * Elements(big) * Dim(f, 0, u) * Dim(f, 1, u);
  }
  return w;
}

double CostModel::OneThreadUs(const Node& node, int device) const {
  const DeviceModel& d = machine_.devices[device];
  if (options_.profile && options_.profile->Us(node.name(), d.type) >= 0) return -1;
  const Work w = Estimate(node);
  const double share = 1.0 / std::max(1, d.threads);  // the rates are the device's
  return std::max(w.flops / (d.gflops * 1e3 * share), w.bytes / (d.gbytes_per_s * 1e3 * share));
}

int CostModel::Threads(const Node& node, int device) const {
  const DeviceModel& d = machine_.devices[device];
  if (d.threads <= 1 || !InProfiledStep(node)) return 1;
  double alone = OneThreadUs(node, device);
  if (alone < 0) alone = options_.profile->Us(node.name(), d.type) - d.op_overhead_us;
  return alone > kLargeNodeUs ? d.threads : 1;
}

double CostModel::ComputeUs(const Node& node, int device) const {
  const DeviceModel& d = machine_.devices[device];
  if (!InProfiledStep(node)) return 0;
  const double alone = OneThreadUs(node, device);
  // A trace counts whole microseconds: a node never takes less than the device's overhead.
  if (alone < 0) return std::max(options_.profile->Us(node.name(), d.type), d.op_overhead_us);
  const double threads = alone > kLargeNodeUs ? std::max(1, d.threads) : 1;
  return d.op_overhead_us + alone / threads;
}

double CostModel::TransferUs(int64_t bytes, int from, int to) const {
  if (from == to) return 0;
  const LinkModel& link = machine_.Link(from, to);
  return link.latency_us + static_cast<double>(bytes) / (link.gbytes_per_s * 1e3);
}

CostGraph BuildCostGraph(const std::vector<Node*>& nodes, const CostModel& cost) {
  CostGraph g;
  const int n = static_cast<int>(nodes.size());
  g.nodes.assign(nodes.begin(), nodes.end());
  g.in_edges.resize(n);
  g.out_edges.resize(n);
  g.output_bytes.assign(n, 0);
  g.persistent_bytes.assign(n, 0);
  g.forwards_from.assign(n, -1);
  std::unordered_map<const Node*, int> index;
  for (int i = 0; i < n; ++i) index[nodes[i]] = i;
  auto add = [&](int src, int dst, int output, int64_t bytes) {
    g.in_edges[dst].push_back(static_cast<int>(g.edges.size()));
    g.out_edges[src].push_back(static_cast<int>(g.edges.size()));
    g.edges.push_back({src, dst, output, bytes});
  };
  for (int i = 0; i < n; ++i) {
    const Node& node = *nodes[i];
    g.persistent_bytes[i] = cost.PersistentBytes(node);
    // Variables are held for the step; forwarders and updates (which return their variable's
    // reference) allocate nothing.
    const bool update = node.num_inputs() > 0 && node.IsRefInput(0);
    if (!node.op_def().is_variable() && !ForwardsInput(node) && !update) {
      for (int k = 0; k < node.num_outputs(); ++k) g.output_bytes[i] += cost.OutputBytes(node, k);
    }
    for (int k = 0; k < node.num_inputs(); ++k) {
      const Output& in = node.input(k);
      auto it = index.find(in.node);
      if (it == index.end()) continue;
      add(it->second, i, in.index, cost.OutputBytes(*in.node, in.index));
      if (k == 0 && ForwardsInput(node)) g.forwards_from[i] = it->second;
    }
    for (const Node* c : node.control_inputs()) {
      auto it = index.find(c);
      if (it != index.end()) add(it->second, i, -1, 0);
    }
  }
  // Kahn's order, smallest index first among the ready (graph order where it can).
  std::vector<int> pending(n, 0);
  for (const CostGraph::Edge& e : g.edges)
    if (!IsLoopBackEdge(g, e)) ++pending[e.dst];
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<bool> done(n, false);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    g.topo.push_back(i);
    done[i] = true;
    for (int e : g.out_edges[i]) {
      if (!IsLoopBackEdge(g, g.edges[e]) && --pending[g.edges[e].dst] == 0)
        ready.push(g.edges[e].dst);
    }
  }
  for (int i = 0; i < n; ++i)
    if (!done[i]) g.topo.push_back(i);  // a cycle the loops do not explain: keep every node
  return g;
}

}  // namespace pf
