// Keras-style layers: variable names and sharing, batch-norm moving averages (once per step,
// with towers too), inference mode, checkpoints of the moving statistics.
#include <cmath>
#include <filesystem>

#include "tests/testing/test_util.h"

namespace pf::layers_test {
namespace {

using testing::RandomTensor;

// Per-channel mean and Bessel-corrected variance of an NHWC tensor's first `rows` rows, in double.
void ChannelStats(const Tensor& x, int64_t rows, std::vector<double>* mean,
                  std::vector<double>* var) {
  const int64_t c = x.dim(3), per_row = x.num_elements() / x.dim(0);
  const int64_t n = rows * per_row / c;
  mean->assign(c, 0);
  var->assign(c, 0);
  const float* p = x.data<float>();
  for (int64_t i = 0; i < n * c; ++i) (*mean)[i % c] += p[i] / static_cast<double>(n);
  for (int64_t i = 0; i < n * c; ++i) {
    const double d = p[i] - (*mean)[i % c];
    (*var)[i % c] += d * d / static_cast<double>(n - 1);
  }
}

TEST_CASE("Layers name their variables by the layer and share them on reuse", "[layers]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {-1, 8, 8, 3});
  Output h = layers::Conv2D(root, "conv1", x, {.filters = 4, .kernel_size = {3, 3}});
  CHECK(h.shape() == Shape({-1, 8, 8, 4}));
  CHECK(FindVariable(&g, "conv1/kernel").shape() == Shape({3, 3, 3, 4}));
  CHECK(FindVariable(&g, "conv1/bias").shape() == Shape({4}));
  Output d = layers::DepthwiseConv2D(root, "dw", h, {.strides = {2, 2}, .depth_multiplier = 2});
  CHECK(d.shape() == Shape({-1, 4, 4, 8}));
  CHECK(FindVariable(&g, "dw/depthwise_kernel").shape() == Shape({3, 3, 4, 2}));
  Output f = layers::Flatten(root, d);
  CHECK(f.shape() == Shape({-1, 128}));
  layers::Dense(root, "fc", f, {.units = 10});
  CHECK(FindVariable(&g, "fc/kernel").shape() == Shape({128, 10}));
  const size_t n = GlobalVariables(&g).size();
  layers::Conv2D(root.WithReuse(Reuse::kReuse), "conv1", x, {.filters = 4});
  CHECK(GlobalVariables(&g).size() == n);
  CHECK_THROWS_WITH(layers::Conv2D(root, "conv1", x, {.filters = 4}),
                    Catch::Contains("conv1/kernel already exists"));
  CHECK_THROWS_WITH(layers::Conv2D(root, "c2", x, {.filters = 4, .padding = "full"}),
                    Catch::Contains("padding must be 'same' or 'valid'"));
  CHECK_THROWS_WITH(layers::Dense(root, "fc2", x, {.units = 3}),
                    Catch::Contains("expected a [N, features] input"));
  CHECK_THROWS_WITH(layers::Activation(root, x, "gelu"), Catch::Contains("Unknown activation"));
}

TEST_CASE("BatchNormalization: batch statistics in training, moving averages once per step",
          "[layers][batchnorm]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {6, 3, 2, 4});
  Output y = layers::BatchNormalization(root, "bn", x, /*training=*/true, {.momentum = 0.9f});
  Output y_inf = layers::BatchNormalization(root.WithReuse(Reuse::kReuse), "bn", x, false);
  const std::vector<Output>& updates = g.GetCollection(kUpdateOps);
  REQUIRE(updates.size() == 2);
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  Tensor xv = RandomTensor({6, 3, 2, 4}, 7, -2.f, 3.f);
  std::vector<double> mean, var;
  ChannelStats(xv, 6, &mean, &var);
  Tensor yv = sess.Run({{x, xv}}, {y})[0];
  // Training output: (x - mean) / sqrt(biased var + 1e-3) per channel (gamma 1, beta 0).
  double worst = 0;
  for (int64_t i = 0; i < xv.num_elements(); ++i) {
    const int64_t c = i % 4;
    const double biased = var[c] * 35.0 / 36.0;
    const double want = (xv.data<float>()[i] - mean[c]) / std::sqrt(biased + 1e-3);
    worst = std::max(worst, std::abs(want - yv.data<float>()[i]));
  }
  CHECK(worst < 1e-4);
  // Two steps of the updates: moving = 0.9 * moving + 0.1 * batch, from 0 and 1.
  for (int step = 0; step < 2; ++step)
    sess.Run({{x, xv}}, {}, {Operation(updates[0].node), Operation(updates[1].node)});
  Tensor mm = sess.Run({FindVariable(&g, "bn/moving_mean").value()})[0];
  Tensor mv = sess.Run({FindVariable(&g, "bn/moving_variance").value()})[0];
  for (int c = 0; c < 4; ++c) {
    CHECK(mm.data<float>()[c] == Approx(0.19 * mean[c]).margin(1e-5));
    CHECK(mv.data<float>()[c] == Approx(0.81 + 0.19 * var[c]).margin(1e-5));
  }
  // Inference normalises with the moving statistics.
  Tensor yi = sess.Run({{x, xv}}, {y_inf})[0];
  worst = 0;
  for (int64_t i = 0; i < xv.num_elements(); ++i) {
    const int64_t c = i % 4;
    const double want = (xv.data<float>()[i] - mm.data<float>()[c]) /
                        std::sqrt(static_cast<double>(mv.data<float>()[c]) + 1e-3);
    worst = std::max(worst, std::abs(want - yi.data<float>()[i]));
  }
  CHECK(worst < 1e-4);
}

TEST_CASE("BatchNormalization under towers updates the moving statistics once per step",
          "[layers][batchnorm][towers]") {
  for (auto aggregation : {train::Aggregation::kParameterDevice, train::Aggregation::kAllReduce}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Placeholder(root, DT_FLOAT, {8, 2, 2, 3});
    train::TowerOptions to;
    to.devices = {"/cpu:0", "/cpu:1"};
    to.aggregation = aggregation;
    train::Towers t =
        train::ReplicateTowers(root, to, {x}, [](const Scope& s, const std::vector<Output>& in) {
          Output h = layers::BatchNormalization(s, "bn", in[0], true);
          return train::TowerOutputs{ops::Mean(s, ops::Square(s, h)), {h}};
        });
    REQUIRE(t.update_ops.size() == 2);
    REQUIRE(g.GetCollection(kUpdateOps).size() == 2);  // tower 1's left the collection
    train::GradientDescent opt(0.1);
    Operation step = opt.ApplyGradients(root, t.grads_and_vars);
    std::vector<Operation> targets = t.update_ops;
    targets.push_back(step);
    SessionOptions so;
    so.device_count["CPU"] = 2;
    Session sess(g, so);
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    Tensor xv = RandomTensor({8, 2, 2, 3}, 11, 0.f, 4.f);
    sess.Run({{x, xv}}, {}, targets);
    // Tower 0 saw the first 4 examples; one update of 0.01 * its batch mean.
    std::vector<double> mean, var;
    ChannelStats(xv, 4, &mean, &var);
    Tensor mm = sess.Run({FindVariable(&g, "bn/moving_mean").value()})[0];
    for (int c = 0; c < 3; ++c) CHECK(mm.data<float>()[c] == Approx(0.01 * mean[c]).margin(1e-6));
  }
}

TEST_CASE("Checkpoints save and restore the batch-norm moving statistics", "[layers][saver]") {
  const std::string dir = (std::filesystem::temp_directory_path() / "pf_layers_ckpt").string();
  std::filesystem::remove_all(dir);
  Tensor xv = RandomTensor({4, 3, 3, 2}, 3, 1.f, 5.f);
  Tensor before, saved_mean;
  std::string path;
  {
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Placeholder(root, DT_FLOAT, {4, 3, 3, 2});
    layers::BatchNormalization(root, "bn", x, true);
    Output inf = layers::BatchNormalization(root.WithReuse(Reuse::kReuse), "bn", x, false);
    Session sess(g);
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    std::vector<Operation> updates;
    for (const Output& u : g.GetCollection(kUpdateOps)) updates.emplace_back(u.node);
    for (int i = 0; i < 3; ++i) sess.Run({{x, xv}}, {}, updates);
    saved_mean = sess.Run({FindVariable(&g, "bn/moving_mean").value()})[0];
    before = sess.Run({{x, xv}}, {inf})[0];
    path = Saver(&g).Save(sess, dir + "/model", 3);
  }
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {4, 3, 3, 2});
  Output inf = layers::BatchNormalization(root, "bn", x, false);
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  CHECK(testing::MaxAbsDiff(sess.Run({{x, xv}}, {inf})[0], before) > 0.1);  // not yet restored
  Saver(&g).Restore(sess, path);
  CHECK(sess.Run({FindVariable(&g, "bn/moving_mean").value()})[0].BitwiseEqual(saved_mean));
  CHECK(sess.Run({{x, xv}}, {inf})[0].BitwiseEqual(before));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pf::layers_test

namespace pf::layers_test {
namespace {

// conv 3x3 (relu) -> batch norm -> depthwise 3x3 -> dense 3 (float32), built under `policy`,
// with fixed seeds: the float32 build is the reference of the mixed ones.
struct PolicyNet {
  Graph g;
  Output x, conv, bn, dw, logits, loss;
  std::vector<Output> grads;
  std::vector<Variable> vars;
  explicit PolicyNet(const std::string& policy) {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 6, 6, 3});
    conv = layers::Conv2D(root, "conv", x,
                          {.filters = 4, .activation = "relu", .seed = 1, .dtype_policy = policy});
    layers::BatchNormOptions bo;
    bo.dtype_policy = policy;
    bn = layers::BatchNormalization(root, "bn", conv, true, bo);
    dw = layers::DepthwiseConv2D(root, "dw", bn, {.seed = 2, .dtype_policy = policy});
    logits = layers::Dense(root, "logits", layers::Flatten(root, dw),
                           {.units = 3, .seed = 3, .dtype_policy = "float32"});
    loss = ops::Mean(root, ops::Square(root, logits), {0, 1});
    vars = TrainableVariables(&g);
    std::vector<Output> values;
    for (const Variable& v : vars) values.push_back(v.value());
    grads = Gradients(root, {loss}, values);
  }
};

double MaxAbs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    m = std::max(m, std::abs(double{t.data<float>()[i]}));
  return m;
}

TEST_CASE("Layers under a mixed dtype_policy compute in 16 bits, keep float32 variables",
          "[layers][mixed_precision]") {
  PolicyNet ref("float32");
  Session ref_sess(ref.g);
  ref_sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&ref.g))});
  const FeedDict ref_feed = {{ref.x, RandomTensor({5, 6, 6, 3}, 7)}};
  std::vector<Output> ref_fetch = {ref.logits};
  ref_fetch.insert(ref_fetch.end(), ref.grads.begin(), ref.grads.end());
  const std::vector<Tensor> want = ref_sess.Run(ref_feed, ref_fetch);
  // float16 keeps 11 significant bits, bfloat16 8; a few roundings stack up per layer.
  for (const auto& [policy, dtype, tol] : {std::tuple{"mixed_float16", DT_HALF, 1e-2},
                                           std::tuple{"mixed_bfloat16", DT_BFLOAT16, 6e-2}}) {
    INFO(policy);
    PolicyNet net(policy);
    CHECK(net.conv.dtype() == dtype);
    CHECK(net.bn.dtype() == dtype);
    CHECK(net.dw.dtype() == dtype);
    CHECK(net.logits.dtype() == DT_FLOAT);
    REQUIRE(net.vars.size() == ref.vars.size());
    for (const Variable& v : net.vars) CHECK(v.value().dtype() == DT_FLOAT);
    for (const Output& grad : net.grads) CHECK(grad.dtype() == DT_FLOAT);
    Session sess(net.g);
    sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&net.g))});
    std::vector<Output> fetch = {net.logits};
    fetch.insert(fetch.end(), net.grads.begin(), net.grads.end());
    const std::vector<Tensor> got = sess.Run({{net.x, ref_feed[0].second}}, fetch);
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("fetch " << i << " (0: logits, then the gradients)");
      CHECK(testing::MaxAbsDiff(got[i], want[i]) <= tol * std::max(1.0, MaxAbs(want[i])));
    }
  }
}

TEST_CASE("The global policy applies to layers without a dtype_policy of their own",
          "[layers][mixed_precision]") {
  struct Restore {
    std::string saved = layers::GlobalPolicy();
    ~Restore() { layers::SetGlobalPolicy(saved); }
  } restore;
  CHECK(layers::GlobalPolicy() == "float32");
  layers::SetGlobalPolicy("mixed_bfloat16");
  CHECK(layers::GlobalPolicy() == "mixed_bfloat16");
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {-1, 4});
  Output h = layers::Dense(root, "fc1", x, {.units = 3});
  Output own = layers::Dense(root, "fc2", x, {.units = 3, .dtype_policy = "mixed_float16"});
  Output logits = layers::Dense(root, "logits", h, {.units = 2, .dtype_policy = "float32"});
  CHECK(h.dtype() == DT_BFLOAT16);
  CHECK(own.dtype() == DT_HALF);
  CHECK(logits.dtype() == DT_FLOAT);
  for (const Variable& v : TrainableVariables(&g)) CHECK(v.value().dtype() == DT_FLOAT);
  // An unknown name changes nothing; "" goes back to float32.
  CHECK_THROWS_WITH(layers::SetGlobalPolicy("half"),
                    Catch::Contains("unknown dtype_policy 'half'"));
  CHECK(layers::GlobalPolicy() == "mixed_bfloat16");
  layers::SetGlobalPolicy("");
  CHECK(layers::GlobalPolicy() == "float32");
  CHECK(layers::Dense(root, "fc3", x, {.units = 3}).dtype() == DT_FLOAT);
}

TEST_CASE("An unknown dtype_policy is an error naming the layer", "[layers][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {-1, 4});
  CHECK_THROWS_WITH(layers::Dense(root, "fc", x, {.units = 2, .dtype_policy = "float16"}),
                    Catch::Contains("fc: unknown dtype_policy 'float16': use float32, "
                                    "mixed_float16 or mixed_bfloat16"));
}

}  // namespace
}  // namespace pf::layers_test
