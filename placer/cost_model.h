// The cost model automatic placement plans with (issue 37; docs/placement.md): what each device
// can do (MachineModel), how long a node takes on a device (measured in a Profile, else estimated
// from its FLOPs and bytes against the device's rates), how long a tensor takes over the link
// between two devices, and how much memory a node's outputs and variables hold. No CUDA: a model
// of a machine can describe GPUs this process does not have.
//
//   PF_ASSIGN_OR_RETURN(pf::MachineModel m, pf::ParseMachine("gpu:8x16GB,nvlink=450GB/s"));
//   pf::CostModel cost(m, {.unknown_dim = 64});
//   cost.ComputeUs(*matmul, /*device=*/1);      // µs for one run of the node on GPU:0
//   cost.TransferUs(4 << 20, 1, 2);            // 4 MiB from GPU:0 to GPU:1
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/devices/device_set.h"
#include "placeflow/graph/graph.h"

namespace pf {

// One device as the planner sees it.
struct DeviceModel {
  std::string name;           // the full device name ("/job:localhost/.../device:GPU:0")
  std::string type;           // "CPU", "GPU": kernels and profiles are per type
  int task = 0;               // devices of different tasks talk over the network link
  double gflops = 0;          // dense math (MatMul, Conv2D and their gradients), GFLOP/s
  double gbytes_per_s = 0;    // memory-bound work (elementwise, reductions, copies)
  double op_overhead_us = 0;  // the cost of running any node (dispatch, kernel launch)
  int threads = 1;            // small nodes run this many at once; a large one takes them all
  int64_t memory_bytes = 0;   // what the plan may use; 0: no limit
};

struct LinkModel {
  double gbytes_per_s = 0;
  double latency_us = 0;
};

// A machine (or a cluster): its devices and the links between kinds of devices.
struct MachineModel {
  std::vector<DeviceModel> devices;
  LinkModel host_host{20, 2};    // two CPU devices of one task: shared memory
  LinkModel host_gpu{25, 10};    // PCIe
  LinkModel gpu_gpu{25, 10};     // through the host, or NVLink when given
  LinkModel network{1.25, 100};  // between tasks (gRPC): 10 Gbit/s
  bool cpus_given = false;       // ParseMachine: a cpu item replaced the default host

  const LinkModel& Link(int from, int to) const;
  // Two CPU devices of one task: a tensor crosses by reference (the copy registry hands the
  // receiver the sender's buffer), so the receiver allocates nothing.
  bool SharesMemory(int from, int to) const;
  int Find(const std::string& device_name) const;  // index, or -1
};

// Default rates for a device type when nothing measured them: a CPU core of the development
// machine (pf-bench device_rates: ~60 GFLOP/s in oneDNN's GEMMs, ~8 GB/s elementwise, ~1 µs a
// node) and an H100's float32 (issue 31's run: 51 TFLOP/s, HBM3, ~6 µs a node).
DeviceModel DefaultDeviceModel(const std::string& type);

// A node of `us` on `device` costs no more than its per-node overhead plus 1 µs: the executor's
// thread runs it inline (and the simulator with it), and the planners let it wait for its first
// consumer.
bool IsCheap(double us, const DeviceModel& device);

// "gpu:8x80GB,nvlink=450GB/s": a machine to simulate. Items, separated by commas:
//   cpu:N[xMEM][@GFLOPS]  N CPU devices (default: one, 1 thread, no memory limit)
//   gpu:N[xMEM][@GFLOPS]  N GPUs, each with MEM (e.g. 16GB, 512MB) and float32 GFLOP/s
//   (a type given again adds devices, numbered on; at most 4096 of a type)
//   nvlink=BW  pcie=BW  host=BW  network=BW   link bandwidths (GB/s or Gbit/s: "100Gbit/s")
//   threads=N  the CPU devices' threads (at most 1024)
// A CPU:0 is always there (the host). Errors name the item.
StatusOr<MachineModel> ParseMachine(const std::string& text);

// "cpu:0=2GB,cpu:1=512MB" -> short device name ("cpu:0", lower case) -> bytes.
StatusOr<std::map<std::string, int64_t>> ParseDeviceMemory(const std::string& text);
// "80GB", "512MB", "1.5GiB", "1000000" -> bytes.
StatusOr<int64_t> ParseBytes(const std::string& text);
// "cpu:0" for "/job:localhost/replica:0/task:0/device:CPU:0".
std::string ShortDeviceName(const std::string& full_name);

// The devices of a DeviceSet, in its order, with their rates: measured ones from `rates` (a
// device_rates file, see LoadDeviceRates), else the defaults; `cpu_threads` per CPU device;
// `memory` limits by short name.
struct DeviceRates {
  std::map<std::string, DeviceModel> by_type;  // "CPU" -> rates of one CPU thread
  // Two CPU devices of one process with threads of their own: a tensor's hop between them
  // (a _Send/_Recv pair and a thread's wake-up). Zero: the MachineModel's default.
  LinkModel host_host{};
};
// PF_DEVICE_RATES, else $XDG_CACHE_HOME/placeflow/device_rates (~/.cache/...): written by
// `pf-bench device_rates`. Absent: empty (defaults apply).
std::string DeviceRatesPath();
DeviceRates LoadDeviceRates(const std::string& path);
Status SaveDeviceRates(const DeviceRates& rates, const std::string& path);
StatusOr<MachineModel> LocalMachine(const DeviceSet& devices, const DeviceRates& rates,
                                    int cpu_threads, const std::map<std::string, int64_t>& memory);

// Measured node times: node name -> device type -> µs (the median of what was recorded), and
// the bytes of each node's outputs together (the largest recorded: shapes the graph leaves
// unknown, as a batch of `?`, are known in a trace).
class Profile {
 public:
  void Record(const std::string& node, const std::string& device_type, double us);
  void RecordOutputBytes(const std::string& node, int64_t bytes);
  // < 0 when the node was not measured on that type.
  double Us(const std::string& node, const std::string& device_type) const;
  // < 0 when the node's outputs were not measured.
  int64_t OutputBytes(const std::string& node) const;
  // Whether any traced step ran the node (on any device type).
  bool Has(const std::string& node) const {
    return samples_.count(node) > 0 || output_bytes_.count(node) > 0;
  }
  size_t size() const { return samples_.size(); }

 private:
  std::map<std::string, std::map<std::string, std::vector<double>>> samples_;
  std::map<std::string, int64_t> output_bytes_;
};

struct CostModelOptions {
  // An unknown first dimension (a batch of `?`) counts as this many; other unknown ones as 32.
  int64_t unknown_dim = 32;
  std::shared_ptr<const Profile> profile;  // measured times and sizes win over estimates
  // Count only the nodes a non-empty profile saw run (InProfiledStep): the step it measured.
  bool only_profiled_step = false;
};

class CostModel {
 public:
  CostModel(MachineModel machine, CostModelOptions options = {});

  const MachineModel& machine() const { return machine_; }
  int num_devices() const { return static_cast<int>(machine_.devices.size()); }
  const CostModelOptions& options() const { return options_; }
  // With options().only_profiled_step, false for a node a non-empty profile never saw run: it
  // is outside the profiled step (a variable's initializer, an evaluation branch) and costs no
  // time and no memory. True for every node otherwise.
  bool InProfiledStep(const Node& node) const;
  // One run of `node` on device `device` (an index into machine().devices).
  double ComputeUs(const Node& node, int device) const;
  double TransferUs(int64_t bytes, int from, int to) const;
  // 1 for a node that runs on one of the device's threads; all of them for one that splits.
  int Threads(const Node& node, int device) const;
  // Output `i`'s bytes: the profile's where it measured the node (a node's outputs share its
  // measured total in the proportions of their estimates), else estimated with unknown
  // dimensions counted as options.unknown_dim (strings: 64 bytes).
  int64_t OutputBytes(const Node& node, int i) const;
  // Memory a node holds for the whole run: a variable's value.
  int64_t PersistentBytes(const Node& node) const;
  // The analytic estimate: dense FLOPs (MatMul, Conv2D, ...) and bytes read and written.
  struct Work {
    double flops = 0;
    double bytes = 0;
  };
  Work Estimate(const Node& node) const;

 private:
  int64_t EstimatedOutputBytes(const Node& node, int i) const;
  int64_t Elements(const Shape& shape) const;
  // The node's work on one thread of the device (no overhead); < 0 when measured instead.
  double OneThreadUs(const Node& node, int device) const;
  int64_t InputBytes(const Node& node, int i) const;

  MachineModel machine_;
  CostModelOptions options_;
};

// The graph the planner and the simulator walk: node indices, data edges with their bytes,
// control edges, and a topological order (a loop's NextIteration -> Merge back edges left out:
// a loop counts as one iteration).
struct CostGraph {
  struct Edge {
    int src = 0, dst = 0;
    int output = -1;  // -1: a control edge
    int64_t bytes = 0;
  };
  std::vector<const Node*> nodes;
  std::vector<Edge> edges;
  std::vector<std::vector<int>> in_edges, out_edges;  // edge indices per node
  std::vector<int> topo;                              // node indices, producers first
  std::vector<int64_t> output_bytes;                  // per node: what running it allocates
  std::vector<int64_t> persistent_bytes;  // per node: held for the whole run (variables)
  std::vector<int> forwards_from;         // per node: whose buffer its output is, or -1
};
CostGraph BuildCostGraph(const std::vector<Node*>& nodes, const CostModel& cost);
// Whether the node's output 0 is its input's buffer (OpDef::forwards_input; a Cast only to its
// own type).
bool ForwardsInput(const Node& node);

}  // namespace pf
