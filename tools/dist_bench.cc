#include "tools/dist_bench.h"

#include <cstdio>

#ifdef PF_WITH_GRPC

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "placeflow/models/models.h"
#include "tools/bench_util.h"
#include "tools/loopback.h"

namespace pf::bench {
namespace {

// The tasks of a loopback cluster, one pf-server process each (from pf-bench's folder).
class LocalCluster {
 public:
  explicit LocalCluster(const std::vector<std::pair<std::string, int>>& jobs) {
    std::vector<std::string> addresses;
    const std::string spec = LoopbackCluster(jobs, &addresses);
    const std::string server =
        (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "pf-server").string();
    size_t k = 0;
    for (const auto& [job, n] : jobs) {
      for (int i = 0; i < n; ++i, ++k) {
        targets_[job].push_back("grpc://" + addresses[k]);
        servers_.push_back(std::make_unique<ChildProcess>(
            server, std::vector<std::string>{"--cluster", spec, "--job", job, "--task",
                                             std::to_string(i)}));
      }
    }
  }
  std::string target(const std::string& job, int task) const { return targets_.at(job)[task]; }

 private:
  std::map<std::string, std::vector<std::string>> targets_;
  std::vector<std::unique_ptr<ChildProcess>> servers_;
};

SessionOptions ClusterSession(const std::string& target) {
  SessionOptions o;
  o.target = target;
  o.cluster.connect_timeout_s = 30;
  return o;
}

// Seconds per step of a trivial step spanning worker:0 and worker:1 (median of kRepeats).
double TrivialStepSeconds(Session& sess, const Output& y, int steps) {
  return TimeMedian([&] {
           for (int i = 0; i < steps; ++i) sess.Run({y});
         }) /
         steps;
}

Output TrivialStep(Graph& g) {
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithDevice("/job:worker/task:0"), 1.0f);
  return ops::Add(root.WithDevice("/job:worker/task:1"), a, ops::Const(root, 2.0f));
}

}  // namespace

void GrpcRecvBandwidth() {
  LocalCluster cluster({{"worker", 2}});
  Graph g;
  Scope root = Scope::Root(&g);
  constexpr int64_t kElements = int64_t{16} << 20;  // 64 MiB of float
  Variable v =
      GetVariable(root.WithDevice("/job:worker/task:0"), "big", {kElements}, init::Constant(1.5));
  // Shape on worker:1 needs the whole tensor there (one RecvTensor) but computes nothing.
  Output shape = ops::Shape(root.WithDevice("/job:worker/task:1"), v.value());
  Output trivial = TrivialStep(g);
  Session sess(g, ClusterSession(cluster.target("worker", 0)));
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  for (int i = 0; i < 3; ++i) sess.Run({shape});
  std::vector<double> t;
  for (int r = 0; r < 15; ++r) {
    auto start = std::chrono::steady_clock::now();
    sess.Run({shape});
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  const double step = Median(t);
  const double overhead = TrivialStepSeconds(sess, trivial, 100);
  const double bytes = kElements * 4.0;
  std::printf(
      "grpc_recv_bandwidth gbps=%.2f net_gbps=%.2f ms_per_step=%.2f trivial_step_ms=%.3f "
      "mib=64 runs=15\n",
      bytes / step / 1e9, bytes / (step - overhead) / 1e9, step * 1e3, overhead * 1e3);
}

void AllreduceBandwidth() {
  constexpr int64_t kElements = int64_t{16} << 20;  // 64 MiB of float per task
  for (int n : {2, 3}) {
    LocalCluster cluster({{"worker", n}});
    Graph g;
    Scope root = Scope::Root(&g);
    std::vector<Operation> reduce;
    Output pull;  // the loopback copy reference: worker:0's buffer pulled by worker:1
    for (int i = 0; i < n; ++i) {
      Scope on = root.WithDevice("/job:worker/task:" + std::to_string(i));
      Variable v =
          GetVariable(on, "buffer" + std::to_string(i), {kElements}, init::Constant(1.0 + i));
      reduce.push_back(
          ops::CollectiveAllReduce(on, {v.value()}, ops::Const(on, 1.0f), "bandwidth", n, i)[0]);
      if (i == 0) pull = ops::Shape(root.WithDevice("/job:worker/task:1"), v.value());
    }
    Session sess(g, ClusterSession(cluster.target("worker", 0)));
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    auto seconds = [&](const std::vector<Output>& fetches, const std::vector<Operation>& targets) {
      for (int i = 0; i < 2; ++i) sess.Run({}, fetches, targets);
      std::vector<double> t;
      for (int r = 0; r < 9; ++r) {
        auto start = std::chrono::steady_clock::now();
        sess.Run({}, fetches, targets);
        t.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      return Median(t);
    };
    const double step = seconds({}, reduce), copy = seconds({pull}, {});
    const double bytes = kElements * 4.0;
    std::printf(
        "allreduce_bandwidth workers=%d gbps=%.2f ms=%.1f loopback_copy_gbps=%.2f mib=64 "
        "algorithm=reduce_scatter_all_gather runs=9\n",
        n, bytes / step / 1e9, step * 1e3, bytes / copy / 1e9);
  }
}

void DistStepOverhead() {
  LocalCluster cluster({{"worker", 2}});
  Graph g;
  Output y = TrivialStep(g);
  Session sess(g, ClusterSession(cluster.target("worker", 0)));
  for (int i = 0; i < 50; ++i) sess.Run({y});
  const double s = TrivialStepSeconds(sess, y, 500);
  std::printf("dist_step_overhead us=%.1f tasks=2 steps=500 repeats=%d\n", s * 1e6, kRepeats);
}

void DistMlpSeed000Step() {
  LocalCluster cluster({{"ps", 1}, {"worker", 1}});
  Tensor x, t;
  models::SeedBatch(2000, 1, &x, &t);
  // The same model twice: in this process, and with its variables on ps:0 (a custom getter,
  // as replica_device_setter does) and everything else on worker:0, the session's task.
  Graph local_graph, dist_graph;
  Scope local_root = Scope::Root(&local_graph);
  models::Model local = models::BuildMlpSeed000(local_root, {});
  Scope dist_root =
      Scope::Root(&dist_graph)
          .WithCustomGetter([](const VariableRequest& r, const VariableGetterFn& next) {
            VariableRequest on_ps = r;
            on_ps.scope = r.scope.WithDevice("/job:ps/task:0");
            return next(on_ps);
          });
  models::Model dist = models::BuildMlpSeed000(dist_root, {});
  Session local_sess(local_graph, OnDevice(false));
  Session dist_sess(dist_graph, ClusterSession(cluster.target("worker", 0)));
  local_sess.Run({}, {}, {GlobalVariablesInitializer(local_root)});
  dist_sess.Run({}, {}, {GlobalVariablesInitializer(dist_root)});
  auto steps = [&](Session& s, const models::Model& m, int n) {
    for (int i = 0; i < n; ++i) s.Run({{m.input, x}, {m.target, t}}, {}, {m.train_op});
  };
  steps(local_sess, local, 3);
  steps(dist_sess, dist, 3);
  std::vector<double> lt, dt;
  for (int r = 0; r < kRepeats; ++r) {  // interleaved: both see the same machine noise
    auto t0 = std::chrono::steady_clock::now();
    steps(local_sess, local, 5);
    auto t1 = std::chrono::steady_clock::now();
    steps(dist_sess, dist, 5);
    auto t2 = std::chrono::steady_clock::now();
    lt.push_back(std::chrono::duration<double>(t1 - t0).count() / 5);
    dt.push_back(std::chrono::duration<double>(t2 - t1).count() / 5);
  }
  const double l = Median(lt), d = Median(dt);
  std::printf(
      "dist_mlp_seed000_step ms_per_step=%.2f one_process_ms=%.2f overhead_pct=%.1f batch=2000 "
      "repeats=%d\n",
      d * 1e3, l * 1e3, (d / l - 1) * 100, kRepeats);
}

}  // namespace pf::bench

#else  // no gRPC: the figures say so

namespace pf::bench {
void GrpcRecvBandwidth() { std::printf("grpc_recv_bandwidth skipped=no_grpc\n"); }
void DistStepOverhead() { std::printf("dist_step_overhead skipped=no_grpc\n"); }
void AllreduceBandwidth() { std::printf("allreduce_bandwidth skipped=no_grpc\n"); }
void DistMlpSeed000Step() { std::printf("dist_mlp_seed000_step skipped=no_grpc\n"); }
}  // namespace pf::bench

#endif
