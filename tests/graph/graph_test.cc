#include "tests/testing/test_util.h"

namespace pf::graph_test {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("Unique node names under name scopes", "[graph]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root, 1.f);
  Output b = ops::Const(root, 2.f);
  CHECK(a.node->name() == "Const");
  CHECK(b.node->name() == "Const_1");
  Output m = ops::MatMul(root, ops::Const(root, Tensor(DT_FLOAT, {2, 2})),
                         ops::Const(root, Tensor(DT_FLOAT, {2, 2})));
  Output m1 = ops::MatMul(root, m, m);
  CHECK(m.node->name() == "MatMul");
  CHECK(m1.node->name() == "MatMul_1");
  Scope t0 = root.NewSubScope("tower_0");
  CHECK(ops::MatMul(t0, m, m).node->name() == "tower_0/MatMul");
  CHECK(ops::MatMul(t0, m, m).node->name() == "tower_0/MatMul_1");
  Scope t0_again = root.NewSubScope("tower_0");
  CHECK(t0_again.name_scope() == "tower_0_1");
  CHECK(ops::Identity(t0.NewSubScope("inner"), m).node->name() == "tower_0/inner/Identity");
  CHECK(ops::Identity(root.WithOpName("y"), m).node->name() == "y");
  CHECK(ops::Identity(root.WithOpName("y"), m).node->name() == "y_1");
  CHECK(g.FindNode("tower_0/MatMul") != nullptr);
  CHECK(g.FindNode("nope") == nullptr);
}

TEST_CASE("A NodeBuilder keeps its own copy of a temporary scope", "[graph]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root, 1.f);
  // The scope is a temporary that dies before Finalize: the builder must not refer to it.
  NodeBuilder b(root.NewSubScope("outer").WithOpName("named").WithDevice("/cpu:0"), "Identity");
  b.Input(a);
  Node* n = b.Finalize();
  CHECK(n->name() == "outer/named");
  CHECK(n->requested_device() == "/device:CPU:0");
}

TEST_CASE("Edges: data and control", "[graph]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root, 1.f);
  Operation noop = ops::NoOp(root);
  Output b = ops::Neg(root.WithControlDependencies({noop}), a);
  REQUIRE(b.node->num_inputs() == 1);
  CHECK(b.node->input(0) == a);
  REQUIRE(b.node->control_inputs().size() == 1);
  CHECK(b.node->control_inputs()[0] == noop.node);
  int data = 0, control = 0;
  for (const Edge& e : a.node->out_edges()) data += !e.IsControl();
  for (const Edge& e : noop.node->out_edges()) control += e.IsControl();
  CHECK(data == 1);
  CHECK(control == 1);
  CHECK(b.name() == "Neg:0");
  CHECK(b.node->DebugString() == "Neg (Neg) inputs: [Const:0, ^NoOp] device: ");
}

TEST_CASE("Device scopes nest and merge like tf.device", "[graph]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Scope gpu = root.WithDevice("/gpu:0");
  CHECK(ops::Const(gpu, 1.f).node->requested_device() == "/device:GPU:0");
  Scope job = root.WithDevice("/job:worker").WithDevice("/gpu:1");
  CHECK(ops::Const(job, 1.f).node->requested_device() == "/job:worker/device:GPU:1");
  Scope inner = gpu.WithDevice("/cpu:0");  // inner fields win
  CHECK(ops::Const(inner, 1.f).node->requested_device() == "/device:CPU:0");
  Scope partial =
      root.WithDevice("/job:localhost/replica:0/task:0/device:GPU:1").WithDevice("/device:CPU");
  CHECK(ops::Const(partial, 1.f).node->requested_device() ==
        "/job:localhost/replica:0/task:0/device:CPU:1");
  CHECK(ops::Const(root, 1.f).node->requested_device().empty());
  try {
    root.WithDevice("/foo:bar");
    FAIL("expected a malformed device error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_THAT(e.what(), Contains("Malformed device specification '/foo:bar'"));
  }
}

TEST_CASE("ColocateWith takes the target's device and group", "[graph]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output v = ops::Const(root.WithDevice("/cpu:0").WithOpName("v"), 1.f);
  Output c = ops::Neg(root.WithDevice("/gpu:0").ColocateWith(v), v);
  CHECK(c.node->requested_device() == "/device:CPU:0");
  REQUIRE(c.node->colocation_group().size() == 1);
  CHECK(c.node->colocation_group()[0] == "v");
}

TEST_CASE("Build-time errors name the node, the op and the shapes", "[graph]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root, Tensor(DT_FLOAT, {3, 4}));
  Output b = ops::Const(root, Tensor(DT_FLOAT, {3, 2}));
  try {
    ops::MatMul(root.WithOpName("mm"), a, b);
    FAIL("expected a shape error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_THAT(e.what(), Contains("Matrix size-incompatible: In[0]: [3,4], In[1]: [3,2]"));
    CHECK_THAT(e.what(), Contains("node 'mm' (op: 'MatMul')"));
    CHECK_THAT(e.what(), Contains("with input shapes: [3,4], [3,2]"));
  }
  Output i = ops::Const(root, Tensor(DT_INT32, {3, 4}));
  CHECK_THROWS_WITH(
      ops::Add(root, a, i),
      Contains(
          "Input 'y' of 'Add' Op has type int32 that does not match type float of argument 'x'"));
  CHECK_THROWS_WITH(ops::Add(root, a, b), Contains("Incompatible shapes: [3,4] vs. [3,2]"));
  CHECK_THROWS_WITH(ops::Sqrt(root, i),
                    Contains("Value for attr 'T' of int32 is not in the list of allowed values"));
  CHECK_THROWS_WITH(NodeBuilder(root, "NoSuchOp").Finalize(),
                    Contains("Op type not registered 'NoSuchOp'"));
  CHECK_THROWS_WITH(ops::Reshape(root, a, std::vector<int32_t>{5, 5}),
                    Contains("Cannot reshape a tensor with 12 elements"));
  Graph other;
  Output foreign = ops::Const(Scope::Root(&other), 1.f);
  CHECK_THROWS_WITH(ops::Neg(root, foreign), Contains("of another graph"));
}

TEST_CASE("Static shapes are inferred through the graph", "[graph]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {-1, 600});
  Output w = ops::Const(root, Tensor(DT_FLOAT, {600, 512}));
  Output h = ops::Relu(root, ops::MatMul(root, x, w));
  CHECK(h.shape() == Shape{-1, 512});
  CHECK(ops::Sum(root, h, {1}, true).shape() == Shape{-1, 1});
  CHECK(ops::Mean(root, h).shape() == Shape{});
  CHECK(ops::Reshape(root, w, std::vector<int32_t>{-1, 256}).shape() == Shape{1200, 256});
  CHECK(ops::Transpose(root, w, {1, 0}).shape() == Shape{512, 600});
  CHECK(ops::Concat(root, {w, w}, 1).shape() == Shape{600, 1024});
  CHECK(ops::Split(root, w, 0, 3)[2].shape() == Shape{200, 512});
  CHECK(ops::ExpandDims(root, w, -1).shape() == Shape{600, 512, 1});
  CHECK(ops::ArgMax(root, h, 1).shape() == Shape{-1});
  CHECK(ops::ArgMax(root, h, 1).dtype() == DT_INT64);
  CHECK(ops::Add(root, h, ops::Const(root, Tensor(DT_FLOAT, {512}))).shape() == Shape{-1, 512});
  CHECK(ops::Shape(root, h).shape() == Shape{2});
}

TEST_CASE("Kernel lookup honours dtype constraints and reports what exists", "[graph][registry]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output f = ops::MatMul(root, ops::Const(root, Tensor(DT_FLOAT, {2, 2})),
                         ops::Const(root, Tensor(DT_FLOAT, {2, 2})));
  CHECK(KernelRegistry::Global()->Supports(*f.node, "CPU"));
  CHECK_FALSE(KernelRegistry::Global()->Supports(*f.node, "GPU_FAKE"));
  Status s = KernelRegistry::Global()->NotFoundError(*f.node, {"GPU_FAKE"});
  CHECK(s.code() == Code::kNotFound);
  CHECK_THAT(s.message(), Contains("No OpKernel was registered to support Op 'MatMul' used by "
                                   "{{node MatMul}} with these attrs: [T=float]"));
  CHECK_THAT(s.message(), Contains("device='CPU'; T in [float]"));
}

TEST_CASE("Graph export: DOT coloured by device and JSON", "[graph][export]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithOpName("a"), 1.f);
  Output b = ops::Neg(root.WithOpName("b"), a);
  std::map<std::string, std::string> placement = {
      {"a", "/job:localhost/replica:0/task:0/device:CPU:0"},
      {"b", "/job:localhost/replica:0/task:0/device:CPU:1"}};
  std::string dot = GraphToDot(g, placement);
  CHECK_THAT(dot, Contains("digraph placeflow"));
  CHECK_THAT(dot, Contains("\"a\" -> \"b\" [color=red, penwidth=2, label=\"[] Send/Recv\"]"));
  CHECK_THAT(dot, Contains("fillcolor=\"#8dd3c7\""));
  CHECK_THAT(dot, Contains("fillcolor=\"#ffffb3\""));
  std::string json = GraphToJson(g);
  CHECK_THAT(json, Contains("{\"name\": \"b\", \"op\": \"Neg\", \"inputs\": [\"a:0\"]"));
  CHECK_THAT(json, Contains("\"outputs\": [{\"dtype\": \"float\", \"shape\": \"[]\"}]"));
}

}  // namespace
}  // namespace pf::graph_test

namespace pf::graph_test {
namespace {

TEST_CASE("Op facts are OpDef flags, set where each op registers", "[graph][registry]") {
  auto def = [](const char* op) { return *OpRegistry::Global()->Find(op); };
  CHECK(def("Variable").is_variable());
  CHECK(def("Const").is_constant());
  CHECK(def("Shape").is_metadata());
  for (const char* op : {"Identity", "StopGradient", "Reshape", "ExpandDims", "Squeeze", "Cast"}) {
    INFO(op);
    CHECK(def(op).forwards_input());
  }
  // Ops near those that must not claim them: an Assign is not the variable, a Placeholder has
  // no value, Neg writes a new buffer, Fill makes a tensor from a shape without being one.
  for (const char* op : {"Assign", "Placeholder", "Neg", "Fill", "MatMul"}) {
    INFO(op);
    const OpDef& d = def(op);
    CHECK_FALSE(d.is_variable());
    CHECK_FALSE(d.is_constant());
    CHECK_FALSE(d.is_metadata());
    CHECK_FALSE(d.forwards_input());
  }
}

// A constant by the flag, not by the name: shape functions see its value.
PF_REGISTER_OP(OpDef("TestConstant")
                   .SetIsConstant()
                   .Output("output", "int32")
                   .RequiredAttr("value")
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.attr<Tensor>("value").shape());
                     return Status::OK();
                   }));
// The same without the flag.
PF_REGISTER_OP(OpDef("TestOpaque")
                   .Output("output", "int32")
                   .RequiredAttr("value")
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.attr<Tensor>("value").shape());
                     return Status::OK();
                   }));

TEST_CASE("Constant inputs are visible to shape functions at graph-build time", "[graph]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, Tensor(DT_FLOAT, {6}));
  Tensor dims = Tensor::FromVector<int32_t>({2, 3});
  CHECK(ops::Reshape(root, x, ops::ConstInt(root, {3, 2})).shape() == Shape{3, 2});
  Output constant = NodeBuilder(root, "TestConstant").Attr("value", dims).Finalize();
  CHECK(ops::Reshape(root, x, constant).shape() == Shape{2, 3});
  // An input that is not a constant gives only its length: two dims of unknown size.
  Output opaque = NodeBuilder(root, "TestOpaque").Attr("value", dims).Finalize();
  CHECK(ops::Reshape(root, x, opaque).shape() == Shape{-1, -1});
  CHECK(ops::Reshape(root, x, ops::Placeholder(root, DT_INT32, {2})).shape() == Shape{-1, -1});
}

}  // namespace
}  // namespace pf::graph_test
