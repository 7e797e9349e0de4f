#include <cmath>

#include "tests/testing/test_util.h"

namespace pf::variables_test {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("Variables are named by variable scopes, not name scopes", "[graph][variables]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Scope tower = root.NewSubScope("tower_0").WithDevice("/gpu:0");
  Scope vs = tower.WithVariableScope("affine0").WithDevice("/cpu:0");
  Variable w = GetVariable(vs, "w", {600, 512});
  CHECK(w.name() == "affine0/w");
  CHECK(w.ref().node->name() == "affine0/w");
  CHECK(w.value().node->name() == "affine0/w/read");
  CHECK(w.initializer().node->name() == "affine0/w/Assign");
  CHECK(w.ref().node->requested_device() == "/device:CPU:0");
  CHECK(w.value().node->requested_device() == "/device:CPU:0");
  CHECK(w.shape() == Shape{600, 512});
  CHECK(w.dtype() == DT_FLOAT);
  // Ops in the variable scope are under the name scope too.
  CHECK(ops::Identity(vs, w.value()).node->name() == "tower_0/affine0/Identity");
  Scope nested = vs.WithVariableScope("inner");
  CHECK(GetVariable(nested, "b", {3}).name() == "affine0/inner/b");
}

TEST_CASE("Variable reuse modes and TensorFlow's errors", "[graph][variables]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable w = GetVariable(root.WithVariableScope("affine0"), "w", {3, 4});
  try {
    GetVariable(root.WithVariableScope("affine0"), "w", {3, 4});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Contains("Variable affine0/w already exists, disallowed. Did you mean to "
                                  "set reuse=True or reuse=tf.AUTO_REUSE in VarScope?"));
  }
  Variable same = GetVariable(root.WithVariableScope("affine0", Reuse::kReuse), "w", {3, 4});
  CHECK(same.ref() == w.ref());
  CHECK_THROWS_WITH(
      GetVariable(root.WithVariableScope("affine0", Reuse::kReuse), "v", {3, 4}),
      Contains("Variable affine0/v does not exist, or was not created with tf.get_variable()"));
  CHECK_THROWS_WITH(
      GetVariable(root.WithVariableScope("affine0", Reuse::kReuse), "w", {4, 4}),
      Contains(
          "Trying to share variable affine0/w, but specified shape [4,4] and found shape [3,4]."));
  CHECK_THROWS_WITH(GetVariable(root.WithVariableScope("affine0", Reuse::kReuse), "w", {3, 4},
                                nullptr, DT_DOUBLE),
                    Contains("specified dtype double and found dtype float"));
  // Auto reuse finds or creates; reuse is inherited by child scopes.
  Scope autos = root.WithVariableScope("affine0", Reuse::kAutoReuse);
  CHECK(GetVariable(autos, "w", {3, 4}).ref() == w.ref());
  CHECK(GetVariable(autos, "fresh", {2}).name() == "affine0/fresh");
  Scope reusing =
      root.WithVariableScope("outer", Reuse::kAutoReuse).WithVariableScope("x", Reuse::kCreate);
  GetVariable(reusing, "k", {1});
  CHECK_NOTHROW(GetVariable(reusing, "k", {1}));
  CHECK_THROWS_WITH(GetVariable(root, "bad", {-1, 3}), Contains("must be fully defined"));
  // Collections.
  auto all = GlobalVariables(&g);
  REQUIRE(all.size() == 3);
  CHECK(all[0].name() == "affine0/w");
  Variable frozen = GetVariable(root, "frozen", {1}, init::Zeros(), DT_FLOAT, /*trainable=*/false);
  CHECK(GlobalVariables(&g).size() == 4);
  CHECK(TrainableVariables(&g).size() == 3);
  CHECK(FindVariable(&g, "frozen").ref() == frozen.ref());
  CHECK_FALSE(FindVariable(&g, "nope").valid());
}

TEST_CASE("Initializers give the documented values", "[graph][variables]") {
  Graph g;
  g.set_seed(42);
  Scope root = Scope::Root(&g);
  Variable c = GetVariable(root, "c", {2, 3}, init::Constant(2.5));
  Variable z = GetVariable(root, "z", {4}, init::Zeros());
  Variable o = GetVariable(root, "o", {4}, init::Ones(), DT_INT32);
  Variable u = GetVariable(root, "u", {100, 100}, init::RandomUniform(-2, 3));
  Variable n = GetVariable(root, "n", {200, 100}, init::RandomNormal(1, 2));
  Variable t = GetVariable(root, "t", {200, 100}, init::TruncatedNormal(0, 1));
  Variable gl = GetVariable(root, "gl", {300, 100});  // GlorotUniform by default
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  auto out =
      sess.Run({c.value(), z.value(), o.value(), u.value(), n.value(), t.value(), gl.value()});
  for (float v : out[0].flat<float>()) CHECK(v == 2.5f);
  for (float v : out[1].flat<float>()) CHECK(v == 0.f);
  for (int32_t v : out[2].flat<int32_t>()) CHECK(v == 1);
  auto stats = [](const Tensor& x) {
    double mean = 0, sq = 0, lo = 1e9, hi = -1e9;
    for (float v : x.flat<float>()) {
      mean += v;
      sq += double(v) * v;
      lo = std::min<double>(lo, v);
      hi = std::max<double>(hi, v);
    }
    mean /= x.num_elements();
    return std::array<double, 4>{mean, std::sqrt(sq / x.num_elements() - mean * mean), lo, hi};
  };
  auto su = stats(out[3]);  // U(-2,3): mean 0.5, sd 5/sqrt(12)
  CHECK(su[0] == Approx(0.5).margin(0.05));
  CHECK(su[1] == Approx(5 / std::sqrt(12.0)).margin(0.05));
  CHECK(su[2] >= -2.0);
  CHECK(su[3] < 3.0);
  auto sn = stats(out[4]);
  CHECK(sn[0] == Approx(1.0).margin(0.05));
  CHECK(sn[1] == Approx(2.0).margin(0.05));
  auto st = stats(out[5]);  // truncated at 2 sigma: sd ~0.88
  CHECK(st[0] == Approx(0.0).margin(0.03));
  CHECK(st[1] == Approx(0.8796).margin(0.02));
  CHECK(st[2] >= -2.0);
  CHECK(st[3] <= 2.0);
  auto sg = stats(out[6]);
  double limit = std::sqrt(6.0 / 400);
  CHECK(sg[2] >= -limit);
  CHECK(sg[3] <= limit);
  CHECK(sg[1] == Approx(2 * limit / std::sqrt(12.0)).margin(0.005));
}

TEST_CASE("Seeds make runs reproducible; no seed differs", "[graph][variables]") {
  auto draw = [](bool graph_seed, int64_t op_seed) {
    Graph g;
    if (graph_seed) g.set_seed(7);
    Scope root = Scope::Root(&g);
    Output r = ops::RandomNormal(root, {64}, DT_FLOAT, op_seed);
    Session sess(g);
    return sess.Run({r})[0];
  };
  CHECK(draw(true, 0).BitwiseEqual(draw(true, 0)));
  CHECK(draw(false, 3).BitwiseEqual(draw(false, 3)));
  CHECK_FALSE(draw(false, 3).BitwiseEqual(draw(false, 4)));
  CHECK_FALSE(draw(false, 0).BitwiseEqual(draw(false, 0)));
  // A stateful random op gives new values on every run of the same session.
  Graph g;
  Scope root = Scope::Root(&g);
  Output r = ops::RandomUniform(root, {16}, DT_FLOAT, 5);
  Session sess(g);
  CHECK_FALSE(sess.Run({r})[0].BitwiseEqual(sess.Run({r})[0]));
}

}  // namespace
}  // namespace pf::variables_test

namespace pf::variables_test {
namespace {

TEST_CASE("Custom getters see every GetVariable and compose inner first", "[variables][getter]") {
  Graph g;
  Scope root = Scope::Root(&g);
  std::vector<std::string> calls;
  Scope outer = root.WithCustomGetter([&](const VariableRequest& r, const VariableGetterFn& next) {
    calls.push_back("outer:" + r.name);
    return next(r);
  });
  Scope both = outer.WithCustomGetter([&](const VariableRequest& r, const VariableGetterFn& next) {
    calls.push_back("inner:" + r.name);
    VariableRequest moved = r;
    moved.scope = r.scope.WithDevice("/cpu:1");
    moved.name = r.name + "_renamed";
    return next(moved);
  });
  Variable v = GetVariable(both.WithVariableScope("layer"), "w", {2, 2});
  CHECK(v.name() == "layer/w_renamed");
  CHECK(v.ref().node->requested_device() == "/device:CPU:1");
  CHECK(calls == std::vector<std::string>{"inner:w", "outer:w_renamed"});
  // Without a getter the request goes straight to creation.
  CHECK(GetVariable(root, "plain", {1}).name() == "plain");
  CHECK(calls.size() == 2);
}

}  // namespace
}  // namespace pf::variables_test
