// CheckNumerics, AddCheckNumericsOps and Print (ops/debug/debug_ops.cc).
#include "placeflow/ops/debug/debug_ops.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <limits>

#include "tests/testing/test_util.h"

namespace pf::debug_ops_test {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The message of the pf::Error `fn` throws ("" if none).
template <typename Fn>
std::string ErrorOf(Fn&& fn, Code* code = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.status().message();
  }
  return "";
}

TEST_CASE("CheckNumerics passes finite tensors and fails the step on NaN or Inf", "[ops][debug]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {3});
  Output y = ops::CheckNumerics(root.WithOpName("check"), x, "bad input");
  Session sess(g);
  auto finite = Tensor::FromVector<float>({1, -2, 3});
  CHECK(sess.Run({{x, finite}}, {y})[0].BitwiseEqual(finite));
  Code code = Code::kOk;
  std::string nan = ErrorOf(
      [&] {
        sess.Run({{x, Tensor::FromVector<float>({1, kNaN, 3})}}, {y});
      },
      &code);
  CHECK(code == Code::kInvalidArgument);
  // TensorFlow's words, then the node the executor names.
  CHECK_THAT(nan, StartsWith("bad input : Tensor had NaN values"));
  CHECK_THAT(nan, Contains("{{node check}} = CheckNumerics[]"));
  CHECK_THAT(ErrorOf([&] {
               sess.Run({{x, Tensor::FromVector<float>({kInf, 0, 0})}}, {y});
             }),
             StartsWith("bad input : Tensor had Inf values"));
  CHECK_THAT(ErrorOf([&] {
               sess.Run({{x, Tensor::FromVector<float>({-kInf, kNaN, 0})}}, {y});
             }),
             StartsWith("bad input : Tensor had Inf and NaN values"));
  // Only floating-point dtypes, as TensorFlow.
  Output i = ops::Const(root, Tensor::FromVector<int32_t>({1}));
  CHECK_THROWS_WITH(ops::CheckNumerics(root, i, "m"), Contains("Value for attr 'T' of int32"));
}

TEST_CASE("NonFiniteKind reads double, half and bfloat16 bits", "[ops][debug]") {
  CHECK(NonFiniteKind(Tensor::FromVector<double>({1, std::nan("")})) == "NaN");
  CHECK(NonFiniteKind(Tensor::FromVector<double>({1, 2})).empty());
  Tensor h(DT_HALF, {3});
  uint16_t* hb = static_cast<uint16_t*>(h.raw_data());
  hb[0] = 0x3C00;  // 1.0
  hb[1] = 0x7BFF;  // the largest finite half
  CHECK(NonFiniteKind(h).empty());
  hb[2] = 0xFC00;  // -inf
  CHECK(NonFiniteKind(h) == "Inf");
  Tensor b(DT_BFLOAT16, {2});
  uint16_t* bb = static_cast<uint16_t*>(b.raw_data());
  bb[0] = 0x7FC0;  // NaN
  bb[1] = 0x7F80;  // inf
  CHECK(NonFiniteKind(b) == "Inf and NaN");
  CHECK(NonFiniteKind(Tensor::FromVector<int32_t>({1})).empty());
}

TEST_CASE("CheckNumerics' gradient passes through and is checked itself", "[ops][debug]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2});
  // sqrt(0) is finite but its gradient, flowing back into the check, is not.
  Output y = ops::Sum(root, ops::Sqrt(root, ops::CheckNumerics(root, x, "sqrt")));
  Output dx = Gradients(root, {y}, {x})[0];
  Session sess(g);
  auto got = sess.Run({{x, Tensor::FromVector<float>({4, 1})}}, {dx})[0].ToVector<float>();
  CHECK(got == std::vector<float>{0.25f, 0.5f});
  CHECK_THAT(ErrorOf([&] {
               sess.Run({{x, Tensor::FromVector<float>({0, 1})}}, {dx});
             }),
             StartsWith("Not a number (NaN) or infinity (Inf) values detected in gradient. "
                        "sqrt : Tensor had Inf values"));
}

TEST_CASE("AddCheckNumericsOps checks every float output and names the bad one", "[ops][debug]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2});
  Variable w = GetVariable(root, "w", {2}, init::Ones());
  Output logx = ops::Log(root.WithOpName("log"), x);
  Output loss = ops::Sum(root.WithOpName("loss"), ops::Mul(root, logx, w.value()));
  Output count = ops::Const(root.WithOpName("count"), Tensor::Scalar<int32_t>(2));
  train::GradientDescent opt(0.1);
  Operation step = opt.Minimize(root, loss);
  Operation check = ops::AddCheckNumericsOps(root);
  CHECK(check.name() == "add_check_numerics_ops/group_deps");
  std::set<std::string> checked;
  for (Node* c : check.node->control_inputs()) {
    REQUIRE(c->op() == "CheckNumerics");
    checked.insert(c->attr<std::string>("message"));
  }
  CHECK(checked.count("x:0"));
  CHECK(checked.count("log:0"));
  CHECK(checked.count("loss:0"));
  CHECK(checked.count("w/read:0"));
  CHECK_FALSE(checked.count("count:0"));  // int32
  CHECK_FALSE(checked.count("w:0"));      // the variable itself
  // An update's output would run the update again: never checked.
  for (Node* n : g.nodes()) {
    if (n->op().rfind("Apply", 0) == 0) CHECK_FALSE(checked.count(n->name() + ":0"));
  }

  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  sess.Run({{x, Tensor::FromVector<float>({1, 2})}}, {}, {step, check});
  CHECK_THAT(
      ErrorOf([&] {
        sess.Run({{x, Tensor::FromVector<float>({-1, 2})}}, {}, {step, check});
      }),
      Contains(":0 : Tensor had NaN values"));  // log:0 or a tensor computed from it: first wins
  // Checks of only what log:0 needs: x is finite, so log:0 is the one.
  Operation log_check = ops::AddCheckNumericsOps(root, {logx});
  CHECK(log_check.node->control_inputs().size() == 2);
  CHECK_THAT(ErrorOf([&] {
               sess.Run({{x, Tensor::FromVector<float>({-1, 2})}}, {}, {log_check});
             }),
             StartsWith("log:0 : Tensor had NaN values"));

  // Only the ops a train step runs: the graph's other placeholders need no feed.
  Output unused = ops::Placeholder(root.WithOpName("unused"), DT_FLOAT, {1});
  ops::Neg(root, unused);
  Operation step_check = ops::AddCheckNumericsOps(root, {step});
  sess.Run({{x, Tensor::FromVector<float>({1, 2})}}, {}, {step, step_check});
  // The graph-wide form checks it too, and so needs its feed, as in TensorFlow.
  Operation all = ops::AddCheckNumericsOps(root);
  CHECK_THAT(ErrorOf([&] {
               sess.Run({{x, Tensor::FromVector<float>({1, 2})}}, {}, {step, all});
             }),
             Contains("You must feed a value for placeholder tensor 'unused'"));
}

// What `fn` writes to stderr.
template <typename Fn>
std::string CaptureStderr(Fn&& fn) {
  std::fflush(stderr);
  char name[] = "/tmp/pf_stderr_XXXXXX";
  int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  int saved = dup(2);
  dup2(fd, 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  std::ifstream in(name);
  text.assign(std::istreambuf_iterator<char>(in), {});
  close(fd);
  unlink(name);
  return text;
}

TEST_CASE("Print passes its input through and logs its data first_n times", "[ops][debug]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2, 2});
  Output s = ops::Sum(root.WithOpName("s"), x);
  ops::PrintOptions po;
  po.message = "values: ";
  po.first_n = 2;
  po.summarize = 3;
  Output y = ops::Print(root.WithOpName("print"), x, {x, s}, po);
  Output loss = ops::Sum(root, ops::Square(root, y));
  Output dx = Gradients(root, {loss}, {x})[0];
  Session sess(g);
  auto in = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  std::vector<Tensor> out;
  std::string logged = CaptureStderr([&] {
    for (int i = 0; i < 3; ++i) out = sess.Run({{x, in}}, {y, dx});
  });
  CHECK(out[0].BitwiseEqual(in));
  CHECK(out[1].ToVector<float>() == std::vector<float>{2, 4, 6, 8});  // through Print to x
  const std::string line =
      "values: x:0 Tensor<float [2,2]> [[1, 2], [3...]]; s:0 Tensor<float []> 10\n";
  CHECK(logged == line + line);  // first_n = 2 of 3 runs

  // Mixed dtypes are refused at build time with a way out.
  Output n = ops::Const(root.WithOpName("n"), Tensor::Scalar<int64_t>(7));
  CHECK_THROWS_WITH(
      ops::Print(root, x, {x, n}),
      Contains("Print's data tensors must share one dtype, but x:0 is float and n:0 is "
               "int64: Cast them, or use one Print per dtype"));
  // No data: the input itself, all of it with summarize -1.
  po = {};
  po.summarize = -1;
  Output z = ops::Print(root, s, {}, po);
  CHECK(CaptureStderr([&] { sess.Run({{x, in}}, {z}); }) == "s:0 Tensor<float []> 10\n");
}

}  // namespace
}  // namespace pf::debug_ops_test
