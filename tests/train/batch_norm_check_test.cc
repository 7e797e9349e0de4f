// layers::BatchNormalization's run-time warning: inference on moving statistics that have not
// moved from their initial values (train/batch_norm_check.cc).
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <sstream>

#include "placeflow/core/logging.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/test_util.h"

namespace pf::batch_norm_check_test {
namespace {

using Catch::Matchers::Contains;

using WarningCapture = testing::LogCapture;  // warnings, and info lines around them

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct BatchNormNet {
  Graph g;
  Output x, y_train, y_infer;
  explicit BatchNormNet(const std::string& name, float momentum) {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root, DT_FLOAT, {8, 2, 2, 3});
    y_train = layers::BatchNormalization(root, name, x, true, {.momentum = momentum});
    y_infer = layers::BatchNormalization(root.WithReuse(Reuse::kReuse), name, x, false,
                                         {.momentum = momentum});
  }
};

TEST_CASE("Batch-norm inference on unmoved moving statistics warns once, output unchanged",
          "[layers][batchnorm]") {
  BatchNormNet net("bn_unmoved", 0.99f);
  Session sess(net.g);
  sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&net.g))});
  Tensor xv = testing::RandomTensor({8, 2, 2, 3}, 3, 1.f, 5.f);
  WarningCapture warnings;
  Tensor y = sess.Run({{net.x, xv}}, {net.y_infer})[0];
  sess.Run({{net.x, xv}}, {net.y_infer});  // once per layer
  const std::string text = warnings.Text();
  CHECK(Count(text, "BatchNormalization 'bn_unmoved'") == 1);
  CHECK_THAT(text, Contains("moving statistics still at their initial values"));
  CHECK_THAT(text, Contains("\"update_ops\""));
  // The check passes the statistics on: y = x / sqrt(1 + epsilon) (mean 0, variance 1).
  double worst = 0;
  for (int64_t i = 0; i < xv.num_elements(); ++i) {
    worst = std::max(worst, std::abs(xv.data<float>()[i] / std::sqrt(1 + 1e-3) -
                                     static_cast<double>(y.data<float>()[i])));
  }
  CHECK(worst < 1e-5);
}

TEST_CASE("Batch-norm inference after the moving statistics moved does not warn",
          "[layers][batchnorm]") {
  BatchNormNet net("bn_moved", 0.9f);
  Session sess(net.g);
  sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&net.g))});
  Tensor xv = testing::RandomTensor({8, 2, 2, 3}, 4, 1.f, 5.f);
  std::vector<Operation> updates;
  for (const Output& u : net.g.GetCollection(kUpdateOps)) updates.push_back(u.node);
  sess.Run({{net.x, xv}}, {}, updates);  // one update: the mean moves by 0.1 * ~3
  WarningCapture warnings;
  sess.Run({{net.x, xv}}, {net.y_infer});
  CHECK(warnings.Text().find("bn_moved") == std::string::npos);
}

}  // namespace
}  // namespace pf::batch_norm_check_test
