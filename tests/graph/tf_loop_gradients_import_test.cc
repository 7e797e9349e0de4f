// tf.gradients of TensorFlow 1.x control flow, written by TensorFlow (tests/data/tf_graphdefs/
// control_flow_grad.pb): the forward values a loop's gradient needs on StackV2 stacks,
// TanhGrad and SigmoidGrad in TF's (y, dy) order, ControlTrigger nodes (never dead, as in TF's
// executor), a loop whose body holds a cond, and a cond. The gradients match TF's values, and,
// for other feeds, central differences of the imported graph's own losses.
#include <set>
#include <string>
#include <vector>

#include "tests/testing/tf_fixture.h"

namespace pf::tf_loop_gradients_import_test {
namespace {

using Feeds = std::vector<std::pair<std::string, Tensor>>;

Feeds FeedsFor(int n, bool p, const std::vector<float>& x, const std::vector<float>& w) {
  return {{"n", Tensor::Scalar<int32_t>(n)},
          {"p", Tensor::Scalar<bool>(p)},
          {"x", Tensor::FromVector<float>(x, {3})},
          {"w", Tensor::FromVector<float>(w, {3})}};
}

// d loss / d v[k] by central differences (float32: h = 1e-2), v = "x" or "w".
std::vector<double> Numeric(Session& sess, const std::string& loss, int n, bool p,
                            std::vector<float> x, std::vector<float> w, bool of_x) {
  std::vector<double> out;
  std::vector<float>& v = of_x ? x : w;
  for (int k = 0; k < 3; ++k) {
    const float saved = v[k], h = 1e-2f;
    v[k] = saved + h;
    const double up = sess.RunNamed(FeedsFor(n, p, x, w), {loss})[0].scalar<float>();
    v[k] = saved - h;
    const double down = sess.RunNamed(FeedsFor(n, p, x, w), {loss})[0].scalar<float>();
    v[k] = saved;
    out.push_back((up - down) / (2 * h));
  }
  return out;
}

TEST_CASE("TensorFlow-written gradients of while loops and conds import and give TF's values",
          "[graph_def][control_flow][gradients][tf_fixture]") {
  Graph g;
  std::unique_ptr<Session> sess;
  const std::set<std::string> ops = testing::CheckAgainstTf("control_flow_grad", &g, &sess);
  for (const char* op : {"StackV2", "StackPushV2", "StackPopV2", "ControlTrigger", "TanhGrad",
                         "SigmoidGrad", "Enter", "NextIteration"})
    CHECK(ops.count(op));
  // TF's stack handles are resources: here int64, through the Enter that brings them in.
  CHECK(g.FindNode("gradients/rnn/Tanh_grad/TanhGrad/f_acc")->output_dtype(0) == DT_INT64);

  // Other feeds: each gradient against central differences of its loss (no iteration, one, and
  // more than the fixture's four; both branches of the conds).
  const std::vector<float> x = {0.4f, -0.9f, 0.25f}, w = {0.6f, -0.3f, 0.8f};
  for (auto [n, p] : std::vector<std::pair<int, bool>>{{0, true}, {1, false}, {6, true}}) {
    CAPTURE(n, p);
    const std::vector<Tensor> got = sess->RunNamed(
        FeedsFor(n, p, x, w),
        {"rnn_grad_x", "rnn_grad_w", "alternate_grad_x", "alternate_grad_w", "cond_grad_x"});
    const std::vector<std::vector<double>> want = {
        Numeric(*sess, "rnn_loss", n, p, x, w, true), Numeric(*sess, "rnn_loss", n, p, x, w, false),
        Numeric(*sess, "alternate_loss", n, p, x, w, true),
        Numeric(*sess, "alternate_loss", n, p, x, w, false),
        Numeric(*sess, "cond_loss", n, p, x, w, true)};
    for (size_t f = 0; f < want.size(); ++f) {
      CAPTURE(f);
      for (int k = 0; k < 3; ++k)
        CHECK(got[f].flat<float>()[k] == Approx(want[f][k]).margin(2e-3).epsilon(1e-2));
    }
  }
}

TEST_CASE("StackV2's max_size: a push past it is an error naming the push", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output stack = NodeBuilder(root.WithOpName("stack"), "StackV2")
                     .Input(ops::ConstInt(root, 1))
                     .Attr("elem_type", DT_FLOAT)
                     .Finalize();
  Output one = ops::StackPush(root.WithOpName("first"), stack, ops::Const(root, 1.f));
  Output two = ops::StackPush(root.WithOpName("second").WithControlDependencies({one.node}), stack,
                              ops::Const(root, 2.f));
  Session sess(g);
  CHECK(sess.Run({}, {one})[0].scalar<float>() == 1.f);  // one push fits
  std::vector<Tensor> out;
  const Status s = sess.TryRun({}, {two}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(),
             Catch::Matchers::Contains("Stack push 'second': the stack is full (max_size 1)"));
}

}  // namespace
}  // namespace pf::tf_loop_gradients_import_test
