// Evaluating with moving averages: ExponentialMovingAverage::VariablesToRestore and a Saver
// over a name -> variable map (seed 002's eval graph).
#include <filesystem>

#include "tests/testing/test_util.h"

namespace pf::ema_restore_test {
namespace {

using Catch::Matchers::Contains;

struct Net {
  Graph g;
  Variable w, b, step;
  Output loss;
  Net() {
    Scope root = Scope::Root(&g);
    Scope vs = root.WithVariableScope("dense");
    w = GetVariable(vs, "w", {3, 2}, init::RandomNormal(0, 1, 7));
    b = GetVariable(vs, "b", {2}, init::Constant(0.5));
    step = train::GetOrCreateGlobalStep(root);
    Output x = ops::Const(root, Tensor::FromVector<float>({1, 2, 3}, {1, 3}));
    loss = ops::Sum(root,
                    ops::Square(root, ops::Add(root, ops::MatMul(root, x, w.value()), b.value())));
  }
};

TEST_CASE("VariablesToRestore maps averaged names to the plain variables", "[train][saver]") {
  Net eval;
  train::ExponentialMovingAverage ema(0.75);
  auto map = ema.VariablesToRestore(&eval.g);
  std::vector<std::string> keys;
  for (const auto& [k, v] : map) keys.push_back(k + "->" + v.name());
  // Trainable variables from their averages, the rest (global_step) as themselves.
  CHECK(keys == std::vector<std::string>{"dense/b/ExponentialMovingAverage->dense/b",
                                         "dense/w/ExponentialMovingAverage->dense/w",
                                         "global_step->global_step"});
  // Explicit list: only w is averaged; b restores as itself.
  keys.clear();
  for (const auto& [k, v] : ema.VariablesToRestore(&eval.g, {eval.w})) keys.push_back(k);
  CHECK(keys ==
        std::vector<std::string>{"dense/b", "dense/w/ExponentialMovingAverage", "global_step"});
  // A graph that has the shadows too: they are not restored as themselves.
  Net train_net;
  train::ExponentialMovingAverage applied(0.75);
  applied.Apply(Scope::Root(&train_net.g), {train_net.w, train_net.b});
  keys.clear();
  for (const auto& [k, v] : applied.VariablesToRestore(&train_net.g)) {
    keys.push_back(k + "->" + v.name());
  }
  CHECK(keys == std::vector<std::string>{"dense/b/ExponentialMovingAverage->dense/b",
                                         "dense/w/ExponentialMovingAverage->dense/w",
                                         "global_step->global_step"});
}

TEST_CASE("An eval graph restores the moving averages into its plain variables", "[train][saver]") {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("pf_ema_{}", getpid());
  std::filesystem::remove_all(dir);
  Net net;
  Scope root = Scope::Root(&net.g);
  train::GradientDescent opt(0.01);
  Operation step = opt.Minimize(root, net.loss, &net.step);
  // decay 0.75 keeps the host recurrence below exact in float.
  train::ExponentialMovingAverage ema(0.75);
  Operation average = ema.Apply(root, {net.w, net.b});
  Session sess(net.g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  std::vector<Tensor> shadow = sess.Run({net.w.value(), net.b.value()});
  for (int i = 0; i < 4; ++i) {
    sess.Run({}, {}, {step});
    sess.Run({}, {}, {average});
    std::vector<Tensor> now = sess.Run({net.w.value(), net.b.value()});
    for (int k = 0; k < 2; ++k) {
      auto s = shadow[k].flat<float>();
      auto v = now[k].flat<float>();
      for (size_t j = 0; j < s.size(); ++j) s[j] -= (1.0f - 0.75f) * (s[j] - v[j]);
    }
  }
  auto trained = sess.Run({net.w.value(), ema.Average(net.w).value(), ema.Average(net.b).value()});
  CHECK(trained[1].BitwiseEqual(shadow[0]));
  CHECK(trained[2].BitwiseEqual(shadow[1]));
  CHECK_FALSE(trained[0].BitwiseEqual(trained[1]));  // the average lags the weights
  const std::string path = Saver(&net.g).Save(sess, (dir / "model").string(), 4);

  Net eval;
  train::ExponentialMovingAverage eval_ema(0.75);
  Saver saver(&eval.g, eval_ema.VariablesToRestore(&eval.g));
  Session es(eval.g);
  saver.Restore(es, Saver::LatestCheckpoint(dir.string()));
  auto restored = es.Run({eval.w.value(), eval.b.value(), eval.step.value()});
  CHECK(restored[0].BitwiseEqual(shadow[0]));
  CHECK(restored[1].BitwiseEqual(shadow[1]));
  CHECK(restored[2].scalar<int64_t>() == 4);

  // A map Saver writes under its keys; a missing key names it.
  const std::string mapped = saver.Save(es, (dir / "eval").string());
  auto tensors = ReadSafetensors(mapped).ValueOrThrow();
  CHECK(tensors.count("dense/w/ExponentialMovingAverage") == 1);
  CHECK(tensors.count("dense/w") == 0);
  Net other;
  Saver by_list(&other.g, {{"nowhere/w", other.w}});
  Session os(other.g);
  CHECK_THROWS_WITH(by_list.Restore(os, path),
                    Contains("Key nowhere/w not found in checkpoint '" + path + "'"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pf::ema_restore_test
