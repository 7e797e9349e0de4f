// Session: runs a graph. Each distinct (feeds, fetches, targets) signature is pruned, placed
// and turned into an executor once; later calls with the same signature reuse it. Variables
// live in the devices' resource managers and persist across calls and signatures.
//
//   pf::SessionOptions opts;
//   opts.log_device_placement = true;
//   pf::Session sess(g, opts);
//   sess.Run({}, {}, {pf::GlobalVariablesInitializer(root)});
//   std::vector<pf::Tensor> out = sess.Run({{x, batch}}, {loss});
//   auto where = sess.DevicePlacement();   // node name -> full device name
//
// Run throws pf::Error; TryRun returns the Status instead. Run is thread-safe.
// The session keeps a reference to `graph`: the graph must outlive the session (as a
// tf.Session's graph does).
#pragma once

#include <atomic>
#include <functional>
#include <initializer_list>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "placeflow/core/tracking_allocator.h"
#include "placeflow/devices/device_manager.h"
#include "placeflow/devices/device_set.h"
#include "placeflow/executor/signature_cache.h"
#include "placeflow/executor/trace.h"
#include "placeflow/graph/graph.h"

namespace pf {

class OpKernel;
class StepGroup;
class ThreadPool;

// How a process reaches a cluster's tasks (client sessions and servers alike); see
// docs/distributed.md for the threat model.
struct ClusterOptions {
  // A shared secret sent with every RPC; a server with a token rejects requests without it.
  std::string token;
  // TLS with mutual authentication when all three are set: the certificate authority that signed
  // every task's certificate, and this process's certificate and private key (PEM files).
  std::string tls_ca_file, tls_cert_file, tls_key_file;
  // How long to keep retrying a task that does not answer (not started yet) before failing
  // with Unavailable naming it.
  double connect_timeout_s = 30;
};

// Prepare-time graph rewrites (TensorFlow's RewriterConfig, graph_options.rewrite_options).
struct RewriterOptions {
  // The remapper: MatMul -> BiasAdd [-> Relu] on a CPU becomes one _FusedMatMul (oneDNN matmul
  // with bias and relu post-ops) when the intermediates have no other use (executor/remapper.h).
  // The environment variable PF_FUSE=0 turns it off for the whole process.
  bool remapping = true;
  // Automatic mixed precision (TF's auto_mixed_precision, executor/mixed_precision.h): "float16"
  // or "bfloat16" runs matmuls and convolutions (and the ops between them) in that type, with
  // variables, losses and updates in float32; "" (the default) or "off" does not rewrite.
  // PF_AUTO_MIXED_PRECISION=float16|bfloat16|0 overrides it for the whole process.
  std::string auto_mixed_precision;
};

class Profile;  // placer/cost_model.h
struct AutomaticPlacement;

// Automatic placement's settings (SessionOptions::placement = "auto"; docs/placement.md).
struct PlacementOptions {
  std::string algorithm = "m-sct";  // m-topo | m-etf | m-sct
  double memory_headroom = 0.1;     // the fraction of each device_memory limit left free
  // Measured node times (RecordProfile over traced steps of an earlier session,
  // executor/auto_placement.h); nodes it lacks are estimated from their FLOPs and bytes.
  std::shared_ptr<const Profile> profile;
  int64_t unknown_dim = 32;  // an unknown dimension (the batch) counts as this many
  std::string device_rates;  // the rates file; "": PF_DEVICE_RATES or ~/.cache/placeflow/...
};

// What automatic placement predicted for a signature it placed.
struct PlacementPrediction {
  std::string signature;  // the fetches and targets, by name: "loss:0,^train_op"
  std::string algorithm;
  double step_us = 0;
  std::map<std::string, int64_t> peak_bytes;  // device name -> bytes
  double planning_ms = 0;
};

struct SessionOptions {
  // Where steps run: "" (this process) or "grpc://host:port", a server of a cluster
  // (distributed/server.h), whose master lists every task's devices.
  std::string target;
  ClusterOptions cluster;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  // Soft-placement fallbacks become errors (as without allow_soft_placement).
  bool strict_placement = false;
  // Device counts by type: {"CPU": 2} creates /cpu:0 and /cpu:1; {"GPU": 0} hides every GPU.
  std::map<std::string, int> device_count;
  // Which GPUs and how they are split (devices/device_manager.h).
  std::string visible_device_list;
  std::vector<std::vector<double>> gpu_logical_devices;  // MiB per logical device, per visible GPU
  // GPU memory and math: allow_growth, per_process_gpu_memory_fraction, allow_tf32 (the
  // visible/logical fields above take precedence over the same ones in here).
  GpuOptions gpu_options;
  // Threads that work on a step, the calling thread included (inter- and intra-op share
  // them). 0: the process-wide pool (PF_NUM_THREADS or one per core) plus the caller.
  int num_threads = 0;
  // > 0: each CPU device gets a pool of this many threads of its own. The nodes placed on the
  // device and its kernels' parallel loops run on those threads and no others (the calling
  // thread stages feeds, waits and collects fetches; it runs no CPU device's node). So with
  // device_count {"CPU": 2} and 1 here, a graph on /cpu:0 runs on one thread and a graph split
  // over /cpu:0 and /cpu:1 on two. 0: every CPU device shares the threads of num_threads.
  int cpu_device_threads = 0;
  // Byte limits of CPU devices' memory, by device ("cpu:1", "/device:CPU:1" or a full name; the
  // type in either case); 0: no limit, only measured. With any entry, every CPU device counts
  // what its allocator holds (kernel outputs, variables; see DeviceMemoryStats()), and one with a
  // limit refuses more: the kernel fails with ResourceExhausted naming the device. An entry that
  // names no CPU device of the session is an InvalidArgument error.
  std::map<std::string, int64_t> device_memory;
  // Prepared (pruned, placed, partitioned) signatures kept for reuse, by this session or, with a
  // cluster target, its master; the least recently used beyond this are dropped (and rebuilt
  // if called again). 0: no limit.
  int max_cached_signatures = 256;
  // Rewrites applied to each prepared signature's partitions (in process and in a cluster).
  RewriterOptions rewrite_options;
  // "rules": TensorFlow's placer (the default). "auto": the rules say which devices each node may
  // use (requests, colocation, kernels), a cost model and placement_options.algorithm choose
  // among them for the whole graph, and the placement log gives the predicted step.
  std::string placement = "rules";
  PlacementOptions placement_options;
};

using FeedDict = std::vector<std::pair<Output, Tensor>>;

// One entry of a mixed fetch list (TensorFlow's sess.run([train_op, loss])): a tensor to fetch,
// or an operation to run as a target.
struct Fetch {
  Fetch(const Output& o) : output(o) {}       // NOLINT: a tensor fetches its value
  Fetch(const Operation& op) : target(op) {}  // NOLINT: an operation runs, giving no value
  Fetch(Node* n) : output(n) {}               // NOLINT: as Output does
  Output output;
  Operation target;
};

// A session whose steps run somewhere else. The cluster runtime registers one for "grpc://"
// targets; Session checks each request, then hands it to the backend.
class SessionBackend {
 public:
  virtual ~SessionBackend() = default;
  virtual Status Run(const FeedDict& feeds, const std::vector<Output>& fetches,
                     const std::vector<Operation>& targets, std::vector<Tensor>* outputs,
                     const RunOptions& run_options, RunMetadata* metadata) = 0;
  virtual std::map<std::string, std::string> DevicePlacement() const = 0;
  virtual const DeviceSet& devices() const = 0;
  virtual size_t num_cached_signatures() const = 0;
};
using SessionBackendFactory = std::function<StatusOr<std::unique_ptr<SessionBackend>>(
    Graph& graph, const SessionOptions& options)>;
// Makes targets that start with `scheme` ("grpc://") open a backend session.
void RegisterSessionBackend(const std::string& scheme, SessionBackendFactory factory);

class KernelCache;

class Session {
 public:
  // `graph` must outlive the session.
  explicit Session(Graph& graph, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  std::vector<Tensor> Run(const FeedDict& feeds, const std::vector<Output>& fetches,
                          const std::vector<Operation>& targets = {});
  std::vector<Tensor> Run(const std::vector<Output>& fetches) { return Run({}, fetches, {}); }
  // A mixed list, as TensorFlow's sess.run([train_op, loss], feed_dict): tensors are fetched,
  // operations run as targets and give an empty Tensor at their place (TF's None).
  //   auto r = sess.Run({{x, batch}}, {train_op, loss});   // r[1] is the loss
  std::vector<Tensor> Run(const FeedDict& feeds, std::initializer_list<Fetch> fetches);
  std::vector<Tensor> Run(std::initializer_list<Fetch> fetches) { return Run({}, fetches); }
  Status TryRun(const FeedDict& feeds, const std::vector<Output>& fetches,
                const std::vector<Operation>& targets, std::vector<Tensor>* outputs,
                const RunOptions& run_options = {}, RunMetadata* metadata = nullptr);
  // With options: `trace` fills metadata->step_stats (see executor/trace.h).
  std::vector<Tensor> Run(const RunOptions& run_options, const FeedDict& feeds,
                          const std::vector<Output>& fetches, const std::vector<Operation>& targets,
                          RunMetadata* metadata);
  // By name: "x:0" or "x" (output 0) for feeds and fetches, "train_op" for targets.
  std::vector<Tensor> RunNamed(const std::vector<std::pair<std::string, Tensor>>& feeds,
                               const std::vector<std::string>& fetches,
                               const std::vector<std::string>& targets = {});

  // Node name -> full device name, for every node placed so far.
  std::map<std::string, std::string> DevicePlacement() const;
  const DeviceSet& devices() const { return backend_ ? backend_->devices() : devices_; }
  Graph& graph() const { return graph_; }
  // Number of prepared (cached) signatures, and how many were dropped as least recently used.
  size_t num_cached_signatures() const;
  int64_t num_evicted_signatures() const;
  // placement = "auto": the prediction for each signature placed so far, in order.
  std::vector<PlacementPrediction> PlacementPredictions() const;
  // Per CPU device (full name) when SessionOptions::device_memory has an entry (else empty): the
  // bytes its tensors hold now (bytes_in_use), the most they held at once since the session began
  // or ResetPeakMemory() (peak_bytes_in_use), its limit (bytes_limit, 0: none), num_allocs,
  // num_ooms and largest_alloc_size. Bytes as asked for, before the host allocator's rounding.
  std::map<std::string, AllocatorStats> DeviceMemoryStats() const;
  // Every device's peak starts again from its bytes in use now.
  void ResetPeakMemory();

 private:
  struct Prepared;
  StatusOr<std::shared_ptr<const Prepared>> Prepare(const FeedDict& feeds,
                                                    const std::vector<Output>& fetches,
                                                    const std::vector<Operation>& targets);

  // The steps of TryRun: check the request, prepare (or find) its signature, stage the
  // feeds on their devices, run every partition, sync the devices, collect the fetches.
  using PartTensors = std::vector<std::vector<Tensor>>;  // per partition, in its executor's order
  Status CheckFeeds(const FeedDict& feeds) const;
  Status CheckFetchesAndTargets(const std::vector<Output>& fetches,
                                const std::vector<Operation>& targets) const;
  StatusOr<PartTensors> StageFeeds(const Prepared& prepared, const FeedDict& feeds);
  void RunPartitions(const Prepared& prepared, const PartTensors& feeds, PartTensors* fetches,
                     StepGroup* group);
  static Status SyncDevices(const Prepared& prepared);
  // Fetched GPU tensors come back to host memory; fetches that may view a variable are copied.
  Status CollectFetches(const Prepared& prepared, const FeedDict& feeds, PartTensors* part_fetches,
                        std::vector<Tensor>* outputs);
  StatusOr<Output> ResolveTensorName(const std::string& name) const;
  // The local devices, with their own pools and tracking allocators when the options ask.
  void CreateDevices();
  Status ApplyMemoryLimits();
  // The inter-op pool of `device`'s partitions, and whether it is the device's own.
  std::pair<ThreadPool*, bool> PoolFor(const Device* device) const;

  Graph& graph_;
  SessionOptions options_;
  std::unique_ptr<ThreadPool> own_pool_;  // when options.num_threads > 0
  ThreadPool* pool_;
  // Per CPU device, by id (options.device_memory). Before devices_: variables free into them.
  std::vector<TrackingAllocator::Ptr> cpu_memory_;
  DeviceSet devices_;
  mutable std::mutex mu_;
  SignatureCache<Prepared> cache_;        // bounded by options.max_cached_signatures
  std::unique_ptr<KernelCache> kernels_;  // every signature's kernels (prepared_step.h)
  std::map<std::string, std::string> placement_;
  std::atomic<int64_t> next_step_id_{1};
  std::unique_ptr<SessionBackend> backend_;        // when options.target names a cluster
  std::unique_ptr<AutomaticPlacement> automatic_;  // placement = "auto"
  std::vector<PlacementPrediction> predictions_;
  // Per CPU device (options.cpu_device_threads). Last: joined before anything they run is gone.
  std::vector<std::unique_ptr<ThreadPool>> cpu_pools_;  // by CPU device id
};

}  // namespace pf
