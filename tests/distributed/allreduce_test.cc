// In-graph replication across the tasks of a cluster: all-reduce towers on 2 and 3 worker tasks
// give the same bits as one process with towers on as many CPU devices.
#include "placeflow/distributed/cluster_spec.h"
#include "placeflow/distributed/server.h"
#include "placeflow/models/models.h"
#include "tests/distributed/cluster_util.h"
#include "tests/testing/test_util.h"

namespace pf::allreduce_test {
namespace {

using Catch::Matchers::Contains;

void MnistBatch(int64_t b, uint32_t seed, Tensor* x, Tensor* y) {
  *x = testing::RandomTensor({b, 784}, seed, 0, 1);
  *y = Tensor(DT_INT32, {b});
  for (int64_t i = 0; i < b; ++i) y->data<int32_t>()[i] = static_cast<int32_t>((i * 7 + seed) % 10);
}

// mnist_mlp with all-reduce towers on `devices`, trained for `steps` steps; returns every
// variable's value by name.
std::map<std::string, Tensor> Train(const std::vector<std::string>& devices,
                                    const SessionOptions& options, int steps) {
  Graph g;
  Scope root = Scope::Root(&g);
  models::ModelOptions o;
  o.steps_per_epoch = 10;
  o.optimizer = "momentum";
  train::TowerOptions towers;
  towers.devices = devices;
  towers.aggregation = train::Aggregation::kAllReduce;
  towers.num_cpus = static_cast<int>(devices.size());
  o.towers = towers;
  models::Model m = models::BuildModel("mnist_mlp", root, o);
  Operation init = GlobalVariablesInitializer(root);
  Session sess(g, options);
  sess.Run({}, {}, {init});
  for (int step = 0; step < steps; ++step) {
    Tensor x, y;
    MnistBatch(13 + step, 100 + step, &x, &y);  // uneven splits too
    sess.Run({{m.input, x}, {m.target, y}}, {}, {m.train_op});
  }
  std::map<std::string, Tensor> values;
  for (const Variable& v : GlobalVariables(&g)) values[v.name()] = sess.Run({v.value()})[0];
  if (!options.target.empty()) {
    // The replicas really live on the other tasks.
    auto where = sess.DevicePlacement();
    CHECK(where.at("layer1/w/replica_1") == "/job:worker/replica:0/task:1/device:CPU:0");
    CHECK(where.at("tower_1/layer1/MatMul") == "/job:worker/replica:0/task:1/device:CPU:0");
  }
  return values;
}

TEST_CASE("All-reduce towers across 2 and 3 worker tasks match one process bit for bit",
          "[distributed][allreduce]") {
  const int workers = GENERATE(2, 3);
  INFO(workers << " workers");
  std::vector<std::string> addr;
  auto spec =
      ClusterSpec::Parse(testing::LoopbackCluster({{"worker", workers}}, &addr)).ValueOrThrow();
  std::vector<std::unique_ptr<Server>> servers;
  for (int i = 0; i < workers; ++i) servers.push_back(std::make_unique<Server>(spec, "worker", i));

  std::vector<std::string> task_devices, local_devices;
  for (int i = 0; i < workers; ++i) {
    task_devices.push_back("/job:worker/task:" + std::to_string(i) + "/cpu:0");
    local_devices.push_back("/cpu:" + std::to_string(i));
  }
  SessionOptions cluster;
  cluster.target = servers[0]->target();
  SessionOptions local;
  local.device_count["CPU"] = workers;
  // Both sides remap the same way (the master plans as the Session does): the same kernels.
  constexpr int kSteps = 3;
  const auto across = Train(task_devices, cluster, kSteps);
  const auto one = Train(local_devices, local, kSteps);
  REQUIRE(across.size() == one.size());
  int replicas = 0;
  for (const auto& [name, value] : one) {
    INFO(name);
    CHECK(across.at(name).BitwiseEqual(value));
    if (name.find("/replica_") == std::string::npos) continue;
    // Every replica equals its primary on task 0.
    const std::string primary =
        name.substr(0, name.find("/replica_")) +
        name.substr(name.find('/', name.find("/replica_") + 1) == std::string::npos
                        ? name.size()
                        : name.find('/', name.find("/replica_") + 1));
    CHECK(across.at(name).BitwiseEqual(across.at(primary)));
    ++replicas;
  }
  CHECK(replicas > 0);
}

TEST_CASE("All-reduce across 3 tasks of tensors with fewer elements than ranks",
          "[distributed][allreduce]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(testing::LoopbackCluster({{"worker", 3}}, &addr)).ValueOrThrow();
  std::vector<std::unique_ptr<Server>> servers;
  for (int i = 0; i < 3; ++i) servers.push_back(std::make_unique<Server>(spec, "worker", i));
  Graph g;
  Scope root = Scope::Root(&g);
  std::vector<std::vector<Output>> outs;
  for (int i = 0; i < 3; ++i) {
    Scope on = root.WithDevice("/job:worker/task:" + std::to_string(i));
    Output scalar = ops::Const(on, float(i + 1));
    Output pair = ops::Const(on, std::vector<float>{float(i), float(10 * i)}, {2});
    outs.push_back(
        ops::CollectiveAllReduce(on, {scalar, pair}, ops::Const(on, float(i + 1)), "small", 3, i));
  }
  SessionOptions o;
  o.target = servers[0]->target();
  Session sess(g, o);
  auto got = sess.Run({outs[0][0], outs[0][1], outs[1][0], outs[1][1], outs[2][0], outs[2][1]});
  // Weights 1, 2, 3: sum_i w_i x_i / 6.
  CHECK(got[0].scalar<float>() == Approx((1 * 1 + 2 * 2 + 3 * 3) / 6.0));
  CHECK(got[1].ToVector<float>()[0] == Approx((0 * 1 + 1 * 2 + 2 * 3) / 6.0));
  CHECK(got[1].ToVector<float>()[1] == Approx((0 * 1 + 10 * 2 + 20 * 3) / 6.0));
  for (int r = 1; r < 3; ++r) {
    CHECK(got[2 * r].BitwiseEqual(got[0]));
    CHECK(got[2 * r + 1].BitwiseEqual(got[1]));
  }
}

}  // namespace
}  // namespace pf::allreduce_test
