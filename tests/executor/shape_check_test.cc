// Kernels see validated shapes (issue 20): the executor trusts a node's static output shapes
// only while its real inputs match the static ones, and an exception from a kernel is the
// step's error, not a crash.
#include <new>

#include "tests/testing/test_util.h"

namespace pf::shape_check_test {
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

// A kernel that breaks design rule 2: it sets an output one element longer than its shape
// function says. Stateful or not, with an input its shape is a contract.
class WrongShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    return ctx->SetOutput(0, Tensor(DT_FLOAT, {ctx->input(0).num_elements() + 1}));
  }
};
PF_REGISTER_OP(
    OpDef("TestWrongShape").Input("x", "float").Output("y", "float").SetShapeFn(UnchangedShape));
PF_REGISTER_OP(OpDef("TestWrongShapeStateful")
                   .Input("x", "float")
                   .Output("y", "float")
                   .SetStateful()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("TestWrongShape", "CPU"), WrongShapeOp);
PF_REGISTER_KERNEL(KernelDef("TestWrongShapeStateful", "CPU"), WrongShapeOp);

SessionOptions TwoCpus() {
  SessionOptions o;
  o.device_count["CPU"] = 2;
  return o;
}

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

TEST_CASE("A tensor of unknown rank crosses devices; its consumers see the shape that arrived",
          "[executor][robust][recv_shape]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);  // no shape, as TF1 code does
  Output a = ops::Neg(root.WithOpName("a").WithDevice("/cpu:1"), x);
  Output b = ops::Neg(root.WithOpName("b").WithDevice("/cpu:0"), a);
  CHECK(b.shape().unknown_rank());
  Session sess(g, TwoCpus());
  const Tensor fed = Tensor::FromVector<float>({1, -2, 3, -4, 5, -6}, {2, 3});
  auto out = sess.Run({{x, fed}}, {a, b});
  CHECK(out[0].shape() == Shape{2, 3});
  CHECK(out[0].ToVector<float>() == std::vector<float>{-1, 2, -3, 4, -5, 6});
  CHECK(out[1].BitwiseEqual(fed));
  // Another rank in the next step, through the same partitions.
  const Tensor v = Tensor::FromVector<float>({7, 8}, {2});
  CHECK(sess.Run({{x, v}}, {b})[0].BitwiseEqual(v));
}

TEST_CASE("A variable reshaped by Assign(validate_shape=false) is read on another device",
          "[executor][robust][recv_shape]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Scope cpu1 = root.WithDevice("/cpu:1");
  Output v = ops::Variable(cpu1.WithOpName("v"), {1, 2}, DT_FLOAT);
  Output init = ops::Assign(cpu1, v, ops::Const(cpu1, {1.f, 2.f}, Shape{1, 2}));
  std::vector<float> big = {1, 2, 3, 4, 5, 6, 7, 8};
  Output grow = ops::Assign(cpu1, v, ops::Const(cpu1, big, Shape{4, 2}), false);
  Output read = ops::Neg(root.WithOpName("read").WithDevice("/cpu:0"), v);
  CHECK(read.shape() == Shape{1, 2});
  Session sess(g, TwoCpus());
  sess.Run({}, {}, {init});
  CHECK(sess.Run({read})[0].ToVector<float>() == std::vector<float>{-1, -2});
  sess.Run({}, {}, {grow});
  Tensor got = sess.Run({read})[0];
  CHECK(got.shape() == Shape{4, 2});
  CHECK(got.ToVector<float>() == std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8});
}

TEST_CASE("A kernel that sets an output of the wrong shape is still an Internal error",
          "[executor][robust][recv_shape]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, {1.f, 2.f}, Shape{2});
  for (const char* op : {"TestWrongShape", "TestWrongShapeStateful"}) {
    Output y(NodeBuilder(root.WithOpName(op), op).Input(x).Finalize(), 0);
    Session sess(g);
    try {
      sess.Run({y});
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInternal);
      CHECK_THAT(e.what(), Contains("Output 0 set to float [3] but the shape function inferred "
                                    "float [2]") &&
                               Contains(fmt::format("{{{{node {}}}}} = {}", op, op)));
    }
  }
}

TEST_CASE("Fill with a negative dim is InvalidArgument naming the node", "[executor][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output dims = ops::Placeholder(root.WithOpName("dims"), DT_INT32, {2});
  Output f = ops::Fill(root.WithOpName("f"), dims, ops::Const(root, 1.f));
  Session sess(g);
  for (std::vector<int32_t> bad : {std::vector<int32_t>{2, -1}, std::vector<int32_t>{-3, 2}}) {
    try {
      sess.Run({{dims, Tensor::FromVector<int32_t>(bad)}}, {f});
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInvalidArgument);
      CHECK_THAT(e.what(), Contains(fmt::format("Fill dimensions must be >= 0, got [{},{}]", bad[0],
                                                bad[1])) &&
                               Contains("{{node f}} = Fill"));
    }
  }
  CHECK(sess.Run({{dims, Tensor::FromVector<int32_t>({2, 0})}}, {f})[0].shape() == Shape{2, 0});
  // A constant -1 is known when the graph is built: the error comes from the builder.
  CHECK_THROWS_WITH(ops::Fill(root.WithOpName("g"), ops::ConstInt(root, std::vector<int32_t>{-1}),
                              ops::Const(root, 1.f)),
                    Contains("Fill dimensions must be >= 0, got [-1]") && Contains("'g'"));
}

TEST_CASE("A node with fewer inputs than its op declares is TF's incomplete-graph error",
          "[executor][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithOpName("a"), 1.f);
  // Graph::AddNode checks nothing (NodeBuilder does): a node of Add with one input.
  NodeSpec spec;
  spec.name = "half_add";
  spec.op_def = OpRegistry::Global()->Find("Add");
  spec.attrs = {{"T", DT_FLOAT}};
  spec.inputs = {a};
  spec.output_dtypes = {DT_FLOAT};
  spec.output_shapes = {Shape{}};
  Node* half = g.AddNode(std::move(spec));
  Session sess(g);
  try {
    sess.Run({Output(half, 0)});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_THAT(e.what(), Contains("Incomplete graph, missing 1 inputs for half_add") &&
                             Contains("op 'Add' takes 2 inputs, the node has 1"));
  }
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
}  // namespace pf::shape_check_test
