// Elementwise kernels write their output over an input that nothing else holds
// (OpKernelContext::ForwardInputOrAllocateOutput), and over nothing anyone can still see.
#include <catch2/catch.hpp>
#include <cstring>

#include "tests/testing/test_util.h"

namespace pf {
namespace {

std::weak_ptr<Buffer>* fwd_source_buffer = new std::weak_ptr<Buffer>();

// [1024] floats 0, 1, 2, ..., in a fresh buffer each run, remembered.
class TestFwdSourceOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    for (int64_t i = 0; i < out->num_elements(); ++i) out->flat<float>()[i] = static_cast<float>(i);
    *fwd_source_buffer = out->buffer();
    return Status::OK();
  }
};
// Whether the input lives in the buffer TestFwdSource last made.
class TestFwdSameBufferOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    out->flat<bool>()[0] = ctx->input(0).buffer() == fwd_source_buffer->lock();
    return Status::OK();
  }
};
PF_REGISTER_OP(
    OpDef("TestFwdSource").Output("y", "float").SetStateful().SetShapeFn([](ShapeContext& c) {
      c.set_output(0, Shape{1024});
      return Status::OK();
    }));
PF_REGISTER_KERNEL(KernelDef("TestFwdSource", "CPU"), TestFwdSourceOp);
PF_REGISTER_OP(OpDef("TestFwdSameBuffer")
                   .Input("x", "float")
                   .Output("y", "bool")
                   .SetStateful()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("TestFwdSameBuffer", "CPU"), TestFwdSameBufferOp);

Output SameBuffer(const Scope& s, Output x) {
  return NodeBuilder(s, "TestFwdSameBuffer").Input(x).Finalize();
}

// Every element i of t is f(i).
template <typename F>
bool AllEqual(const Tensor& t, F f) {
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (t.flat<float>()[i] != f(static_cast<float>(i))) return false;
  }
  return t.num_elements() == 1024;
}

TEST_CASE("An elementwise op writes its output over an input that nothing else holds",
          "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output src = NodeBuilder(root, "TestFwdSource").Finalize();
  Output neg = ops::Neg(root, src);
  // The source's only consumer is Neg; Neg's output has two (the check and the fetch).
  auto out = Session(g).Run({SameBuffer(root, neg), neg});
  CHECK(out[0].scalar<bool>());
  CHECK(AllEqual(out[1], [](float i) { return -i; }));

  // Binary ops: the full-size input, on either side of a broadcast scalar.
  Output two = ops::Const(root, 2.f);
  Output left = ops::Mul(root, NodeBuilder(root, "TestFwdSource").Finalize(), two);
  Output right = ops::Sub(root, two, NodeBuilder(root, "TestFwdSource").Finalize());
  Session sess(g);
  out = sess.Run({SameBuffer(root, left), left});
  CHECK(out[0].scalar<bool>());
  CHECK(AllEqual(out[1], [](float i) { return 2 * i; }));
  out = sess.Run({SameBuffer(root, right), right});
  CHECK(out[0].scalar<bool>());
  CHECK(AllEqual(out[1], [](float i) { return 2 - i; }));

  // BiasAdd over [16, 64] rows, bias 0.5 each: the rows keep their place.
  Tensor bias(DT_FLOAT, {64});
  for (int64_t k = 0; k < 64; ++k) bias.flat<float>()[k] = 0.5f;
  Output biased = ops::Reshape(
      root,
      ops::BiasAdd(root,
                   ops::Reshape(root, NodeBuilder(root, "TestFwdSource").Finalize(), {16, 64}),
                   ops::Const(root, bias)),
      {1024});
  out = Session(g).Run({SameBuffer(root, biased), biased});
  CHECK(out[0].scalar<bool>());
  CHECK(AllEqual(out[1], [](float i) { return i + 0.5f; }));
}

TEST_CASE(
    "No output is written over a tensor that is fetched, read twice, constant, fed or a "
    "variable",
    "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  auto identity = [](float i) { return i; };
  auto negated = [](float i) { return -i; };

  SECTION("fetched") {
    Output src = NodeBuilder(root, "TestFwdSource").Finalize();
    auto out = Session(g).Run({SameBuffer(root, ops::Neg(root, src)), src});
    CHECK_FALSE(out[0].scalar<bool>());
    CHECK(AllEqual(out[1], identity));
  }
  SECTION("still to be read by another node") {
    // Square holds the source from the moment it is made, and runs only after Neg's check: Neg
    // must leave the source alone. (Had Square run first, Neg could take it over.)
    Output src = NodeBuilder(root, "TestFwdSource").Finalize();
    Output neg = ops::Neg(root, src), check = SameBuffer(root, neg);
    Output square = ops::Square(root.WithControlDependencies({Operation(check)}), src);
    auto out = Session(g).Run({check, neg, square});
    CHECK_FALSE(out[0].scalar<bool>());
    CHECK(AllEqual(out[1], negated));
    CHECK(AllEqual(out[2], [](float i) { return i * i; }));
  }
  Tensor values(DT_FLOAT, {1024});
  for (int64_t i = 0; i < 1024; ++i) values.flat<float>()[i] = static_cast<float>(i);
  SECTION("a constant, run twice") {
    Output neg = ops::Neg(root, ops::Const(root, values));
    Session sess(g);
    CHECK(AllEqual(sess.Run({neg})[0], negated));
    CHECK(AllEqual(sess.Run({neg})[0], negated));
  }
  SECTION("fed") {
    Output x = ops::Placeholder(root, DT_FLOAT, {1024});
    CHECK(AllEqual(Session(g).Run({{x, values}}, {ops::Neg(root, x)})[0], negated));
    CHECK(AllEqual(values, identity));
  }
  SECTION("a variable") {
    Output v = ops::Variable(root.WithOpName("v"), {1024}, DT_FLOAT);
    Output init = ops::Assign(root, v, ops::Const(root, values));
    Output neg = ops::Neg(root, v);
    Session sess(g);
    sess.Run({init});
    CHECK(AllEqual(sess.Run({neg})[0], negated));
    CHECK(AllEqual(sess.Run({v})[0], identity));
  }
}

}  // namespace
}  // namespace pf
