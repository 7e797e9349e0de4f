// Steps over several CPU devices: partitions joined by _Send/_Recv run as one step (results
// match a single device bit for bit), and a failure on one device ends the step everywhere.
#include <future>

#include "placeflow/models/models.h"
#include "tests/testing/test_util.h"

namespace pf::multi_device_test {
namespace {

using Catch::Matchers::Contains;

// The seed MLP, one SGD step, with its layers spread over `cpus` devices.
std::vector<Tensor> TrainSpread(int cpus, bool log = false) {
  Graph g;
  g.set_seed(3);
  Scope root = Scope::Root(&g);
  models::Model m = models::BuildMlpSeed000(root, {});
  for (Node* n : g.nodes()) {
    for (int layer = 0; layer < 3; ++layer) {
      if (n->name().find("affine" + std::to_string(layer)) != std::string::npos) {
        n->set_requested_device("/cpu:" + std::to_string((layer + 1) % cpus));
      }
    }
  }
  SessionOptions opts;
  opts.device_count["CPU"] = cpus;
  opts.log_device_placement = log;
  Session sess(g, opts);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  Tensor x, t;
  models::SeedBatch(64, 2, &x, &t);
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i)
    out.push_back(sess.Run({{m.input, x}, {m.target, t}}, {m.loss}, {m.train_op})[0]);
  for (const Variable& v : TrainableVariables(&g)) out.push_back(sess.Run({v.value()})[0]);
  return out;
}

TEST_CASE("Four CPU devices give bitwise the results of one", "[executor][multi_device]") {
  auto one = TrainSpread(1);
  auto four = TrainSpread(4);
  REQUIRE(one.size() == four.size());
  for (size_t i = 0; i < one.size(); ++i) {
    INFO(i);
    CHECK(four[i].BitwiseEqual(one[i]));
  }
}

TEST_CASE("A failing kernel on one device aborts the others without hanging",
          "[executor][multi_device]") {
  static OpRegistrar reg(OpDef("TestFailOnDevice")
                             .Input("x", "float")
                             .Output("y", "float")
                             .SetShapeFn(UnchangedShape));
  struct FailOp : OpKernel {
    using OpKernel::OpKernel;
    Status Compute(OpKernelContext*) override { return errors::Internal("boom"); }
  };
  static KernelRegistrar kreg(
      KernelDef("TestFailOnDevice", "CPU"),
      [](const Node& n) -> std::unique_ptr<OpKernel> { return std::make_unique<FailOp>(n); });
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithDevice("/cpu:0"), Tensor(DT_FLOAT, {32, 32}));
  Output broken = NodeBuilder(root.WithOpName("broken").WithDevice("/cpu:1"), "TestFailOnDevice")
                      .Input(a)
                      .Finalize();
  // CPU:0 waits on a _Recv of the failed tensor while it runs a long chain of its own.
  Output chain = a;
  for (int i = 0; i < 100; ++i) chain = ops::MatMul(root.WithDevice("/cpu:0"), chain, a);
  Output joined = ops::Add(root.WithDevice("/cpu:0"), chain, broken);
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  Session sess(g, opts);
  auto run = std::async(std::launch::async, [&] {
    try {
      sess.Run({joined});
      return std::string("no error");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  });
  REQUIRE(run.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  std::string msg = run.get();
  CHECK_THAT(msg, Contains("boom"));
  CHECK_THAT(
      msg,
      Contains(
          "{{node broken}} = TestFailOnDevice[] on /job:localhost/replica:0/task:0/device:CPU:1"));
  // The session still works afterwards.
  CHECK(sess.Run({chain})[0].shape() == Shape{32, 32});
}

}  // namespace
}  // namespace pf::multi_device_test
