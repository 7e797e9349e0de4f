// Kernels see validated shapes (issue 20): the executor trusts a node's static output shapes
// only while its real inputs match the static ones, and an exception from a kernel is the
// step's error, not a crash.
#include <new>

#include "tests/testing/test_util.h"

namespace pf {
namespace {

using Catch::Matchers::Contains;

class ThrowOp : public OpKernel {
 public:
  explicit ThrowOp(const Node& n) : OpKernel(n), what_(n.attr<std::string>("what")) {}
  Status Compute(OpKernelContext*) override {
    if (what_ == "bad_alloc") throw std::bad_alloc();
    if (what_ == "runtime_error") throw std::runtime_error("kernel bug");
    // A kernel that builds a host temporary too big for memory.
    Tensor t(DT_FLOAT, Shape{int64_t{1} << 40, int64_t{1} << 20});
    return Status::OK();
  }

 private:
  std::string what_;
};
PF_REGISTER_OP(OpDef("TestShapeCheckThrow")
                   .Output("y", "float")
                   .RequiredAttr("what")
                   .SetStateful()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("TestShapeCheckThrow", "CPU"), ThrowOp);

TEST_CASE("A fed constant is a new shape: consumers rerun their shape function",
          "[executor][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output dims = ops::ConstInt(root.WithOpName("dims"), std::vector<int32_t>{2, 3});
  Output f = ops::Fill(root.WithOpName("f"), dims, ops::Const(root, 1.f));
  Output r = ops::Reshape(root.WithOpName("r"), ops::Const(root, Tensor(DT_FLOAT, {6})), dims);
  CHECK(f.shape() == Shape{2, 3});
  Session sess(g);
  auto out = sess.Run({{dims, Tensor::FromVector<int32_t>({3, 2})}}, {f, r});
  CHECK(out[0].shape() == Shape{3, 2});
  CHECK(out[0].ToVector<float>() == std::vector<float>(6, 1.f));
  CHECK(out[1].shape() == Shape{3, 2});
  CHECK_THROWS_WITH(sess.Run({{dims, Tensor::FromVector<int32_t>({4, 2})}}, {r}),
                    Contains("Cannot reshape a tensor with 6 elements to shape [4,2]") &&
                        Contains("{{node r}} = Reshape"));
  // Not fed: the static shapes hold.
  CHECK(sess.Run({f})[0].shape() == Shape{2, 3});
}

TEST_CASE("A variable reshaped by Assign(validate_shape=false) is checked by its readers",
          "[executor][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output v = ops::Variable(root.WithOpName("v"), {2, 2}, DT_FLOAT);
  Output init = ops::Assign(root, v, ops::Const(root, Tensor(DT_FLOAT, {2, 2})));
  Output grow = ops::Assign(root, v, ops::Const(root, Tensor(DT_FLOAT, {3, 3})), false);
  Output mm = ops::MatMul(root.WithOpName("mm"), v, ops::Const(root, Tensor(DT_FLOAT, {2, 2})));
  CHECK(mm.shape() == Shape{2, 2});
  Session sess(g);
  sess.Run({}, {}, {init});
  CHECK(sess.Run({mm})[0].shape() == Shape{2, 2});
  sess.Run({}, {}, {grow});
  CHECK_THROWS_WITH(sess.Run({mm}), Contains("Matrix size-incompatible") &&
                                        Contains("[3,3], [2,2]") &&
                                        Contains("{{node mm}} = MatMul"));
}

TEST_CASE("Exceptions from kernels become the step's error", "[executor][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  auto make = [&](const std::string& name, const std::string& what) {
    return Output(
        NodeBuilder(root.WithOpName(name), "TestShapeCheckThrow").Attr("what", what).Finalize(), 0);
  };
  Output oom = make("oom", "tensor");
  Output ba = make("ba", "bad_alloc");
  Output rt = make("rt", "runtime_error");
  Session sess(g);
  try {
    sess.Run({oom});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kResourceExhausted);
    CHECK_THAT(e.what(),
               Contains("OOM when allocating tensor with shape [1099511627776,1048576]") &&
                   Contains("{{node oom}} = TestShapeCheckThrow"));
  }
  CHECK_THROWS_WITH(sess.Run({ba}), Contains("Out of memory in kernel (std::bad_alloc)") &&
                                        Contains("{{node ba}} = TestShapeCheckThrow"));
  CHECK_THROWS_WITH(sess.Run({rt}), Contains("Kernel threw an exception: kernel bug") &&
                                        Contains("{{node rt}} = TestShapeCheckThrow"));
}

}  // namespace
}  // namespace pf
