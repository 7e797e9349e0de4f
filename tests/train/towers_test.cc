// Tower replication: BatchSplit, the aggregation ops, and N towers over CPU devices against one
// tower over the whole batch, for both aggregation modes.
#include <atomic>
#include <filesystem>
#include <map>

#include "placeflow/models/models.h"
#include "placeflow/ops/grad_util.h"
#include "tests/testing/test_util.h"

namespace pf::towers_test {
namespace {

using Catch::Matchers::Contains;
using train::Aggregation;

// ---- BatchSplit ----
TEST_CASE("BatchSplit splits dimension 0 as evenly as possible, without copying",
          "[towers][array]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 2});
  std::vector<Output> parts = ops::BatchSplit(root, x, 3);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].shape() == Shape({-1, 2}));
  Session sess(g);
  Tensor in = testing::RandomTensor({7, 2}, 1);
  auto out = sess.Run({{x, in}}, parts);
  int64_t row = 0;
  const int64_t expected_rows[] = {3, 2, 2};  // numpy.array_split(7 rows, 3)
  for (int i = 0; i < 3; ++i) {
    REQUIRE(out[i].shape() == Shape({expected_rows[i], 2}));
    for (int64_t r = 0; r < out[i].dim(0); ++r, ++row) {
      CHECK(out[i].data<float>()[2 * r] == in.data<float>()[2 * row]);
      CHECK(out[i].data<float>()[2 * r + 1] == in.data<float>()[2 * row + 1]);
    }
  }
  // Static shapes are computed when the batch is known.
  auto fixed = ops::BatchSplit(root, ops::Const(root, in), 2);
  CHECK(fixed[0].shape() == Shape({4, 2}));
  CHECK(fixed[1].shape() == Shape({3, 2}));
  // The parts are views of the input's buffer.
  Tensor t = testing::RandomTensor({5, 3}, 2);
  Tensor v = t.SliceRows(2, 4).ValueOrThrow();
  CHECK(v.data<float>() == t.data<float>() + 6);
  CHECK_FALSE(t.SliceRows(4, 6).ok());
}

TEST_CASE("BatchSplit rejects a batch smaller than the number of parts and has a gradient",
          "[towers][array]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {-1, 3});
  auto parts = ops::BatchSplit(root.WithOpName("split"), x, 2);
  Session sess(g);
  try {
    sess.Run({{x, testing::RandomDoubleTensor({1, 3}, 3)}}, {parts[0]});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Contains("cannot be split across 2 towers"));
    CHECK_THAT(e.what(), Contains("split"));
  }
  CHECK_THROWS_WITH(ops::BatchSplit(root, ops::Const(root, Tensor(DT_FLOAT, {1, 3})), 2),
                    Contains("A batch of 1 examples"));
  // d/dx of sum(part0 * c0) + sum(part1 * c1), checked by finite differences.
  Output y = ops::AddN(root, {ops::Sum(root, ops::Square(root, parts[0])),
                              ops::Sum(root, ops::Exp(root, parts[1]))});
  Tensor x0 = testing::RandomDoubleTensor({5, 3}, 4);
  double err = ComputeGradientError(root, x, {5, 3}, y, Shape{}, &x0);
  CHECK(err < 1e-6);
}

// ---- WeightedMean and CollectiveAllReduce ----
TEST_CASE("WeightedMean is sum(w_i x_i) / sum(w_i)", "[towers][aggregate]") {
  Graph g;
  Scope root = Scope::Root(&g);
  std::vector<Tensor> xs = {testing::RandomTensor({4, 3}, 1), testing::RandomTensor({4, 3}, 2),
                            testing::RandomTensor({4, 3}, 3)};
  const std::vector<float> w = {3, 2, 2};
  std::vector<Output> values, weights;
  for (int i = 0; i < 3; ++i) {
    values.push_back(ops::Const(root, xs[i]));
    weights.push_back(ops::Const(root, w[i]));
  }
  Output mean = ops::WeightedMean(root, values, weights);
  Tensor got = testing::RunOne(g, mean);
  for (int64_t j = 0; j < 12; ++j) {
    double ref = 0;
    for (int i = 0; i < 3; ++i) ref += w[i] * xs[i].data<float>()[j];
    CHECK(got.data<float>()[j] == Approx(ref / 7).margin(1e-6));
  }
  Output zero = ops::WeightedMean(root, {values[0], values[1]},
                                  {ops::Const(root, 0.f), ops::Const(root, 0.f)});
  CHECK_THROWS_WITH(testing::RunOne(g, zero), Contains("Weights sum to 0"));
  CHECK_THROWS_WITH(
      ops::WeightedMean(root, {values[0], ops::Const(root, testing::RandomTensor({2, 3}, 4))},
                        {weights[0], weights[1]}),
      Contains("has shape [2,3] but value 0 has shape [4,3]"));
}

TEST_CASE("CollectiveAllReduce gives every device the same weighted mean", "[towers][aggregate]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor a0 = testing::RandomTensor({5, 4}, 1), a1 = testing::RandomTensor({5, 4}, 2);
  Tensor b0 = testing::RandomTensor({3}, 3), b1 = testing::RandomTensor({3}, 4);
  std::vector<std::vector<Output>> outs;
  for (int r = 0; r < 2; ++r) {
    Scope s =
        root.NewSubScope("tower_" + std::to_string(r)).WithDevice("/cpu:" + std::to_string(r));
    outs.push_back(
        ops::CollectiveAllReduce(s, {ops::Const(s, r ? a1 : a0), ops::Const(s, r ? b1 : b0)},
                                 ops::Const(s, r ? 1.f : 3.f), "grads", 2, r));
  }
  SessionOptions so;
  so.device_count["CPU"] = 2;
  Session sess(g, so);
  auto got = sess.Run({outs[0][0], outs[0][1], outs[1][0], outs[1][1]});
  for (int64_t j = 0; j < 20; ++j) {
    CHECK(got[0].data<float>()[j] ==
          Approx(0.75 * a0.data<float>()[j] + 0.25 * a1.data<float>()[j]).margin(1e-6));
  }
  for (int64_t j = 0; j < 3; ++j) {
    CHECK(got[1].data<float>()[j] ==
          Approx(0.75 * b0.data<float>()[j] + 0.25 * b1.data<float>()[j]).margin(1e-6));
  }
  CHECK(got[2].BitwiseEqual(got[0]));
  CHECK(got[3].BitwiseEqual(got[1]));
  CHECK(sess.DevicePlacement().at(outs[1][0].node->name()) ==
        "/job:localhost/replica:0/task:0/device:CPU:1");
  // Running one participant alone would wait forever: the session refuses.
  CHECK_THROWS_WITH(sess.Run({outs[0][0]}), Contains("needs 2 participants but this call runs 1"));
}

// ---- the models with towers ----
struct ModelRun {
  Graph g;
  models::Model m;
  std::unique_ptr<Session> sess;
  ModelRun(const std::string& name, models::ModelOptions o, int cpus) {
    g.set_seed(o.seed);
    Scope root = Scope::Root(&g);
    m = models::BuildModel(name, root, o);
    SessionOptions so;
    so.device_count["CPU"] = cpus;
    sess = std::make_unique<Session>(g, so);
    sess->Run({}, {}, {GlobalVariablesInitializer(root)});
  }
  std::map<std::string, Tensor> Trainable() {
    std::map<std::string, Tensor> out;
    for (const Variable& v : TrainableVariables(&g)) out[v.name()] = sess->Run({v.value()})[0];
    return out;
  }
  float Step(const Tensor& x, const Tensor& y) {
    return sess->Run({{m.input, x}, {m.target, y}}, {m.loss}, {m.train_op})[0].scalar<float>();
  }
};

models::ModelOptions WithTowers(models::ModelOptions o, int n, Aggregation a) {
  train::TowerOptions t;
  t.devices = {};
  for (int i = 0; i < n; ++i) t.devices.push_back("/cpu:" + std::to_string(i));
  t.aggregation = a;
  o.towers = t;
  return o;
}

void Batch(const std::string& model, int64_t b, uint32_t seed, Tensor* x, Tensor* y) {
  if (model == "mlp_seed000") return models::SeedBatch(b, seed, x, y);
  *x = testing::RandomTensor({b, 784}, seed, 0, 1);
  *y = Tensor(DT_INT32, {b});
  for (int64_t i = 0; i < b; ++i) y->data<int32_t>()[i] = static_cast<int32_t>((i * 7 + seed) % 10);
}

TEST_CASE("N towers take the same step as one tower over the whole batch",
          "[towers][equivalence]") {
  const std::string model = GENERATE(as<std::string>{}, "mlp_seed000", "mnist_mlp");
  const int64_t batch = GENERATE(12, 13);  // 13 splits unevenly across 2, 3 and 4 towers
  models::ModelOptions o;
  o.steps_per_epoch = 10;
  Tensor x, y;
  Batch(model, batch, 5, &x, &y);
  ModelRun single(model, o, 1);
  const auto before = single.Trainable();
  const float loss1 = single.Step(x, y);
  const auto after = single.Trainable();
  for (Aggregation a : {Aggregation::kParameterDevice, Aggregation::kAllReduce}) {
    for (int n : {2, 3, 4}) {
      INFO(model << " batch " << batch << " towers " << n
                 << (a == Aggregation::kAllReduce ? " all-reduce" : " parameter device"));
      ModelRun towers(model, WithTowers(o, n, a), n);
      CHECK(towers.m.tower_devices.size() == static_cast<size_t>(n));
      const auto start = towers.Trainable();
      const float loss_n = towers.Step(x, y);
      CHECK(loss_n == Approx(loss1).epsilon(1e-5));
      const auto end = towers.Trainable();
      REQUIRE(end.size() == after.size());
      for (const auto& [name, t1] : after) {
        INFO(name);
        REQUIRE(start.at(name).BitwiseEqual(before.at(name)));  // same initial values
        // The update of N towers equals the single tower's up to float rounding: compared
        // relative to the size of the update itself.
        double max_update = 0, max_diff = 0;
        for (int64_t j = 0; j < t1.num_elements(); ++j) {
          const double u1 = t1.data<float>()[j] - before.at(name).data<float>()[j];
          const double un = end.at(name).data<float>()[j] - before.at(name).data<float>()[j];
          max_update = std::max(max_update, std::abs(u1));
          max_diff = std::max(max_diff, std::abs(un - u1));
        }
        CHECK(max_update > 0);
        CHECK(max_diff <= 1e-4 * max_update + 1e-8);
      }
    }
  }
}

TEST_CASE("All-reduce replicas stay bit-identical over 50 steps", "[towers][allreduce]") {
  models::ModelOptions o = WithTowers({}, 3, Aggregation::kAllReduce);
  o.optimizer = "adam";  // slots and beta powers too
  o.steps_per_epoch = 10;
  ModelRun r("mnist_mlp", o, 3);
  for (int step = 0; step < 50; ++step) {
    Tensor x, y;
    Batch("mnist_mlp", 16 + step % 3, 100 + step, &x, &y);
    r.Step(x, y);
  }
  int replicas = 0;
  for (const Variable& v : GlobalVariables(&r.g)) {
    const auto pos = v.name().find("/replica_");
    if (pos == std::string::npos) continue;
    const std::string primary =
        v.name().substr(0, pos) + v.name().substr(v.name().find('/', pos + 1) == std::string::npos
                                                      ? v.name().size()
                                                      : v.name().find('/', pos + 1));
    INFO(v.name() << " vs " << primary);
    Variable p = FindVariable(&r.g, primary);
    REQUIRE(p.valid());
    CHECK(r.sess->Run({v.value()})[0].BitwiseEqual(r.sess->Run({p.value()})[0]));
    ++replicas;
  }
  // 4 variables x 2 replicas, each with Adam's two slots.
  CHECK(replicas == 4 * 2 * 3);
  auto where = r.sess->DevicePlacement();
  CHECK(where.at("layer1/w/replica_2") == "/job:localhost/replica:0/task:0/device:CPU:2");
  CHECK(where.at("tower_2/layer1/MatMul") == "/job:localhost/replica:0/task:0/device:CPU:2");
  CHECK(where.at("layer1/w") == "/job:localhost/replica:0/task:0/device:CPU:0");
}

TEST_CASE("A checkpoint saved without towers restores into all-reduce replicas",
          "[towers][saver]") {
  const std::string dir =
      (std::filesystem::temp_directory_path() / fmt::format("pf_towers_{}", getpid())).string();
  models::ModelOptions o;
  o.optimizer = "momentum";
  ModelRun plain("mlp_seed000", o, 1);
  Tensor x, y;
  Batch("mlp_seed000", 8, 1, &x, &y);
  plain.Step(x, y);
  const std::string path = Saver(&plain.g).Save(*plain.sess, dir + "/model", 1);
  ModelRun mirrored("mlp_seed000", WithTowers(o, 2, Aggregation::kAllReduce), 2);
  Saver(&mirrored.g).Restore(*mirrored.sess, path);
  for (const char* name : {"affine0/w", "affine0/w/Momentum"}) {
    INFO(name);
    Tensor saved = plain.sess->Run({FindVariable(&plain.g, name).value()})[0];
    CHECK(mirrored.sess->Run({FindVariable(&mirrored.g, name).value()})[0].BitwiseEqual(saved));
  }
  CHECK(mirrored.sess->Run({FindVariable(&mirrored.g, "affine0/w/replica_1").value()})[0]
            .BitwiseEqual(plain.sess->Run({FindVariable(&plain.g, "affine0/w").value()})[0]));
  CHECK(mirrored.sess->Run({FindVariable(&mirrored.g, "affine0/w/replica_1/Momentum").value()})[0]
            .BitwiseEqual(
                plain.sess->Run({FindVariable(&plain.g, "affine0/w/Momentum").value()})[0]));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Parameter-device towers: one set of variables, towers on their devices",
          "[towers][placement]") {
  models::ModelOptions o = WithTowers({}, 2, Aggregation::kParameterDevice);
  o.towers->variable_device = "/cpu:1";
  ModelRun r("mlp_seed000", o, 2);
  CHECK(GlobalVariables(&r.g).size() == 9);  // 8 weights and biases plus the global step
  Tensor x, y;
  Batch("mlp_seed000", 8, 1, &x, &y);
  r.Step(x, y);
  auto where = r.sess->DevicePlacement();
  CHECK(where.at("affine0/w") == "/job:localhost/replica:0/task:0/device:CPU:1");
  CHECK(where.at("tower_0/affine0/MatMul") == "/job:localhost/replica:0/task:0/device:CPU:0");
  CHECK(where.at("tower_1/affine0/MatMul") == "/job:localhost/replica:0/task:0/device:CPU:1");
  CHECK(where.at("average_gradients/affine0/w") == "/job:localhost/replica:0/task:0/device:CPU:1");
}

// ---- configuration errors ----
train::TowerOutputs Linear(const Scope& s, const std::vector<Output>& in) {
  Variable w = GetVariable(s.WithVariableScope("linear"), "w", {3, 1}, init::Ones());
  Output y = ops::MatMul(s, in[0], w.value());
  return {ops::Mean(s, ops::Square(s, y)), {y}};
}

TEST_CASE("Tower configuration errors are clear", "[towers][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 3});
  train::TowerOptions o;
  SECTION("a tower device that does not exist, without soft placement") {
    o.devices = {"/cpu:0", "/cpu:5"};
    auto t = train::ReplicateTowers(root, o, {x}, Linear);
    SessionOptions so;
    so.device_count["CPU"] = 2;
    Session sess(g, so);
    try {
      sess.Run({{x, Tensor(DT_FLOAT, {4, 3})}}, {t.loss});
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Contains("tower_1/"));
      CHECK_THAT(e.what(), Contains("was explicitly assigned to /device:CPU:5 but available "
                                    "devices are [ "));
    }
  }
  SECTION("a batch smaller than the number of towers") {
    o.devices = {"/cpu:0", "/cpu:1", "/cpu:2"};
    auto t = train::ReplicateTowers(root, o, {x}, Linear);
    SessionOptions so;
    so.device_count["CPU"] = 3;
    Session sess(g, so);
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    CHECK_THROWS_WITH(
        sess.Run({{x, Tensor(DT_FLOAT, {2, 3})}}, {t.loss}),
        Contains("A batch of 2 examples (shape [2,3]) cannot be split across 3 towers"));
    CHECK(sess.Run({{x, Tensor(DT_FLOAT, {3, 3})}}, {t.loss})[0].scalar<float>() == 0.f);
  }
  SECTION("a variable created outside the towers") {
    Variable outside = GetVariable(root, "scale", {}, init::Ones());
    o.devices = {"/cpu:0", "/cpu:1"};
    auto fn = [&](const Scope& s, const std::vector<Output>& in) {
      train::TowerOutputs out = Linear(s, in);
      out.loss = ops::Mul(s, out.loss, outside.value());
      return out;
    };
    CHECK_THROWS_WITH(
        train::ReplicateTowers(root, o, {x}, fn),
        Contains("depends on variable scale, which was created outside ReplicateTowers"));
  }
  SECTION("towers that build different models") {
    o.devices = {"/cpu:0", "/cpu:1"};
    o.aggregation = Aggregation::kAllReduce;
    int calls = 0;
    auto fn = [&](const Scope& s, const std::vector<Output>& in) {
      if (calls++ == 0) return Linear(s, in);
      Variable v = GetVariable(s.WithVariableScope("other"), "v", {3, 1});
      Output y = ops::MatMul(s, in[0], v.value());
      return train::TowerOutputs{ops::Mean(s, y), {y}};
    };
    CHECK_THROWS_WITH(train::ReplicateTowers(root, o, {x}, fn),
                      Contains("tower_1 asked for variable other/v"));
  }
  SECTION("device shortcuts") {
    o.devices = {"all_gpus"};
    o.num_gpus = 0;
    CHECK_THROWS_WITH(train::ResolveTowerDevices(o), Contains("no GPU is visible"));
    o.devices = {"all_cpus"};
    // Unset, "all_cpus" used to mean one tower whatever the session had.
    CHECK_THROWS_WITH(train::ResolveTowerDevices(o),
                      Contains("Tower devices 'all_cpus': TowerOptions::num_cpus is not set; it "
                               "must equal the session's device_count[\"CPU\"]"));
    o.num_cpus = 3;
    CHECK(train::ResolveTowerDevices(o) == std::vector<std::string>{"/cpu:0", "/cpu:1", "/cpu:2"});
    SessionOptions so;
    CHECK(train::TowerOptions::ForSession(so).num_cpus == 1);
    so.device_count["CPU"] = 4;
    train::TowerOptions from_session = train::TowerOptions::ForSession(so);
    from_session.devices = {"all_cpus"};
    CHECK(train::ResolveTowerDevices(from_session).size() == 4);
    o.devices = {"/gpu:zero"};
    CHECK_THROWS(train::ResolveTowerDevices(o));
  }
}

TEST_CASE("Update ops from the towers run once", "[towers]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 3});
  Variable count = GetVariable(root, "count", {}, init::Zeros(), DT_FLOAT, /*trainable=*/false);
  train::TowerOptions o;
  o.devices = {"/cpu:0", "/cpu:1"};
  auto fn = [&](const Scope& s, const std::vector<Output>& in) {
    g.AddToCollection(kUpdateOps, ops::AssignAdd(s, count.ref(), ops::Const(s, 1.f)));
    return Linear(s, in);
  };
  auto t = train::ReplicateTowers(root, o, {x}, fn);
  REQUIRE(t.update_ops.size() == 1);
  REQUIRE(g.GetCollection(kUpdateOps).size() == 1);
  CHECK(t.update_ops[0].node->name().rfind("tower_0/", 0) == 0);
}

// ---- a failing tower ----
std::atomic<bool> g_fail_tower_1{false};

class FailInTower1Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    if (g_fail_tower_1 && name().rfind("tower_1/", 0) == 0)
      return errors::InvalidArgument("injected failure");
    return ctx->ForwardInput(0, 0);
  }
};
PF_REGISTER_OP(OpDef("TestFailInTower1")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", {DT_FLOAT})
                   .SetNotDifferentiable()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("TestFailInTower1", kDeviceCpu), FailInTower1Op);

TEST_CASE("A failing tower aborts the step everywhere and the next step works",
          "[towers][errors]") {
  for (Aggregation a : {Aggregation::kParameterDevice, Aggregation::kAllReduce}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 3});
    train::TowerOptions o;
    o.devices = {"/cpu:0", "/cpu:1"};
    o.aggregation = a;
    auto fn = [](const Scope& s, const std::vector<Output>& in) {
      return Linear(
          s, {NodeBuilder(s.WithOpName("check"), "TestFailInTower1").Input(in[0]).Finalize()});
    };
    auto t = train::ReplicateTowers(root, o, {x}, fn);
    train::GradientDescent opt(0.1);
    Operation step = opt.ApplyGradients(root, t.grads_and_vars);
    SessionOptions so;
    so.device_count["CPU"] = 2;
    Session sess(g, so);
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    Tensor batch = testing::RandomTensor({4, 3}, 9);
    g_fail_tower_1 = true;
    try {
      sess.Run({{x, batch}}, {t.loss}, {step});
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Contains("injected failure"));
      CHECK_THAT(e.what(), Contains("tower_1/check"));
    }
    // Nothing was applied: the weights still hold their initial ones.
    CHECK(sess.Run({t.variables[0].value()})[0].BitwiseEqual(
        Tensor::FromVector<float>({1, 1, 1}, {3, 1})));
    g_fail_tower_1 = false;
    sess.Run({{x, batch}}, {t.loss}, {step});
    CHECK_FALSE(sess.Run({t.variables[0].value()})[0].BitwiseEqual(
        Tensor::FromVector<float>({1, 1, 1}, {3, 1})));
  }
}

TEST_CASE("Towers' variables default to the first GPU when every tower is on one", "[towers]") {
  auto resolve = [](std::vector<std::string> devices, std::string variable_device = "auto") {
    train::TowerOptions o;
    o.variable_device = std::move(variable_device);
    return train::ResolveVariableDevice(o, devices);
  };
  CHECK(resolve({"/gpu:0"}) == "/gpu:0");
  CHECK(resolve({"/gpu:1", "/gpu:0"}) == "/gpu:1");
  CHECK(resolve({"/device:FAKE_GPU:0"}) == "/device:FAKE_GPU:0");
  CHECK(resolve({"/cpu:0", "/gpu:0"}) == "/cpu:0");
  CHECK(resolve({"/cpu:1"}) == "/cpu:0");
  CHECK(resolve({"/device:cpu:1", "/gpu:0"}) == "/cpu:0");     // any spelling of CPU
  CHECK(resolve({"/job:worker/task:1"}) == "/cpu:0");          // no type: the host
  CHECK(resolve({"/gpu:0", "/gpu:1"}, "/cpu:0") == "/cpu:0");  // asked for
  CHECK(resolve({"/gpu:0"}, "").empty());                      // left to the placer
}

}  // namespace
}  // namespace pf::towers_test
