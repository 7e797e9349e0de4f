// Partitioning: Send/Recv pairs, control tokens, fed inputs and HostMemory arguments. Running
// partitions is tested in tests/executor/multi_device_test.cc.
#include "placeflow/placer/partition.h"

#include "tests/testing/fake_devices.h"
#include "tests/testing/test_util.h"

namespace pf {
namespace {

using Catch::Matchers::Contains;

struct FourCpus {
  DeviceSet devices;
  FourCpus() {
    for (int i = 0; i < 4; ++i) devices.Add(NewCpuDevice(i));
  }
  Device* cpu(int i) { return devices.Find(DeviceName::FullName("localhost", 0, 0, "CPU", i)); }
};

std::vector<std::string> OpsIn(const Partitions::Part& p, const std::string& op) {
  std::vector<std::string> names;
  for (const Node* n : p.nodes) {
    if (n->op() == op) names.push_back(n->name());
  }
  return names;
}

TEST_CASE("Partition: one _Send/_Recv pair per tensor and destination", "[partition]") {
  FourCpus d;
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithOpName("a"), Tensor(DT_FLOAT, {2}));
  Output b = ops::Neg(root.WithOpName("b"), a);
  Output c = ops::Square(root.WithOpName("c"), a);
  Output e = ops::Add(root.WithOpName("e"), b, c);
  std::unordered_map<const Node*, Device*> where = {
      {a.node, d.cpu(0)}, {b.node, d.cpu(1)}, {c.node, d.cpu(1)}, {e.node, d.cpu(0)}};
  auto p = Partition(g.nodes(), where, {});
  REQUIRE(p.ok());
  REQUIRE(p->parts.size() == 2);
  CHECK(p->send_recv_pairs == 3);  // a -> CPU:1 once (b and c share it), b -> CPU:0, c -> CPU:0
  const Partitions::Part& p0 = p->parts[0].device == d.cpu(0) ? p->parts[0] : p->parts[1];
  const Partitions::Part& p1 = p->parts[0].device == d.cpu(0) ? p->parts[1] : p->parts[0];
  CHECK(OpsIn(p0, "_Send") == std::vector<std::string>{"a:0/_send_to_CPU:1"});
  CHECK(OpsIn(p1, "_Recv") == std::vector<std::string>{"a:0/_recv_on_CPU:1"});
  CHECK(OpsIn(p1, "_Send").size() == 2);
  CHECK(OpsIn(p0, "_Recv").size() == 2);
  CHECK(p0.nodes.size() == 2 + 1 + 2);  // a, e, one send, two recvs
  CHECK(p1.nodes.size() == 2 + 1 + 2);  // b, c, one recv, two sends
  const Node* recv = p1.graph->FindNode("a:0/_recv_on_CPU:1");
  CHECK(recv->attr<std::string>("send_device") == "/job:localhost/replica:0/task:0/device:CPU:0");
  CHECK(recv->attr<std::string>("recv_device") == "/job:localhost/replica:0/task:0/device:CPU:1");
  CHECK(recv->attr<std::string>("tensor_name") == "a:0");
  // Copies keep names; the user's graph is untouched.
  CHECK(p->copy_of.at(b.node)->name() == "b");
  CHECK(g.num_nodes() == 4);
}

TEST_CASE("Partition: cross-device control edges and incomplete graphs", "[partition]") {
  FourCpus d;
  Graph g;
  Scope root = Scope::Root(&g);
  Operation first = ops::NoOp(root.WithOpName("first"));
  Output after = ops::Const(root.WithOpName("after").WithControlDependencies({first}), 1.f);
  std::unordered_map<const Node*, Device*> where = {{first.node, d.cpu(2)}, {after.node, d.cpu(3)}};
  auto p = Partition(g.nodes(), where, {});
  REQUIRE(p.ok());
  CHECK(p->send_recv_pairs == 1);
  const Node* copy = p->copy_of.at(after.node);
  REQUIRE(copy->control_inputs().size() == 1);
  CHECK(copy->control_inputs()[0]->op() == "_Recv");
  CHECK(copy->control_inputs()[0]->name() == "first/_control_token:0/_recv_on_CPU:3");

  Output x = ops::Neg(root.WithOpName("x"), after);
  auto incomplete = Partition({x.node}, {{x.node, d.cpu(0)}}, {});
  REQUIRE_FALSE(incomplete.ok());
  CHECK_THAT(
      incomplete.status().message(),
      Contains(
          "Incomplete graph: input 'after:0' of node 'x' is neither fed nor part of the subgraph"));
  // A fed input enters through an _Arg.
  auto fed = Partition({x.node}, {{x.node, d.cpu(0)}}, {Output(after.node, 0)});
  REQUIRE(fed.ok());
  CHECK(fed->parts[0].args.size() == 1);
}

// An op whose FAKE_GPU kernel reads input "n" and writes output "m" in host memory.
PF_REGISTER_OP(OpDef("TestHostArg")
                   .Input("x", "float")
                   .Input("n", "int32")
                   .Output("y", "float")
                   .Output("m", "int32")
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.input(0));
                     c.set_output(1, c.input(1));
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("TestHostArg", "FAKE_GPU").HostMemory("n").HostMemory("m"),
                   testing::FakeKernel);

TEST_CASE("Partition: HostMemory arguments get their values in host memory", "[partition]") {
  DeviceSet d = testing::FakeDeviceSet(1, 1);
  Device* cpu = d.Find(DeviceName::FullName("localhost", 0, 0, "CPU", 0));
  Device* gpu = d.Find(DeviceName::FullName("localhost", 0, 0, "FAKE_GPU", 0));
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root.WithOpName("x"), 1.f);
  Output a = ops::ConstInt(root.WithOpName("a"), 3);  // on the GPU, in device memory
  Output c = ops::ConstInt(root.WithOpName("c"), 4);  // on the CPU
  Node* h = NodeBuilder(root.WithOpName("h"), "TestHostArg").Input(x).Input(a).Finalize();
  Node* k =
      NodeBuilder(root.WithOpName("k"), "TestHostArg").Input(x).Input(Output(h, 1)).Finalize();
  Node* m = NodeBuilder(root.WithOpName("m"), "TestHostArg").Input(x).Input(c).Finalize();
  Output ident = ops::Identity(root.WithOpName("ident"), a);  // reads a in device memory
  std::unordered_map<const Node*, Device*> where = {
      {x.node, gpu}, {a.node, gpu}, {c.node, cpu}, {h, gpu}, {k, gpu}, {m, gpu}, {ident.node, gpu}};
  auto p = Partition(g.nodes(), where, {});
  REQUIRE(p.ok());
  const Partitions::Part& pg = p->parts[0].device == gpu ? p->parts[0] : p->parts[1];
  // Same device, device memory -> host memory: a _Send/_Recv pair on the GPU itself.
  const Node* same = pg.graph->FindNode("a:0/_recv_on_FAKE_GPU:0_host");
  REQUIRE(same != nullptr);
  CHECK(same->attr<bool>("host_memory"));
  CHECK(same->attr<std::string>("tensor_name") == "a:0;host");
  CHECK(pg.graph->FindNode("a:0/_send_to_FAKE_GPU:0_host") != nullptr);
  CHECK(p->copy_of.at(h)->input(1).node == same);
  // A HostMemory output feeding a HostMemory input: no copy.
  CHECK(p->copy_of.at(k)->input(1).node == p->copy_of.at(h));
  // From the CPU: the cross-device _Recv delivers host memory.
  const Node* from_cpu = p->copy_of.at(m)->input(1).node;
  CHECK(from_cpu->op() == "_Recv");
  CHECK(from_cpu->attr<bool>("host_memory"));
  // A device-memory consumer of the same tensor reads it directly.
  CHECK(p->copy_of.at(ident.node)->input(0).node == p->copy_of.at(a.node));
  CHECK(p->send_recv_pairs == 2);
}

// The real GPU kernels' memory types (ops/nn/conv_ops_gpu.cc, registered in CUDA builds only) on
// a fake device of type GPU: nothing runs, so no GPU is needed.
TEST_CASE("Partition: Conv2DBackpropInput's input_sizes from a GPU Shape stays in host memory",
          "[partition]") {
  bool has_gpu_kernel = false;
  for (const KernelDef* k : KernelRegistry::Global()->KernelsForOp("Conv2DBackpropInput")) {
    has_gpu_kernel |= k->device_type() == kDeviceGpu;
  }
  if (!has_gpu_kernel) {
    WARN("skipped: no GPU kernel for Conv2DBackpropInput in this build (CUDA off)");
    return;
  }
  DeviceSet d;
  d.Add(std::make_unique<testing::FakeDevice>(kDeviceCpu, 0, 100, true));
  d.Add(std::make_unique<testing::FakeDevice>(kDeviceGpu, 0, 200, false));
  Device* gpu = d.Find(DeviceName::FullName("localhost", 0, 0, kDeviceGpu, 0));
  REQUIRE(gpu != nullptr);
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root.WithOpName("x"), testing::RandomTensor({1, 5, 5, 2}, 1));
  Output f = ops::Const(root.WithOpName("f"), testing::RandomTensor({3, 3, 2, 3}, 2));
  Output dy = ops::Const(root.WithOpName("dy"), testing::RandomTensor({1, 5, 5, 3}, 3));
  Output shape = ops::Shape(root.WithOpName("shape"), x);  // its GPU output is HostMemory
  Output sizes = ops::ConstInt(root.WithOpName("sizes"), std::vector<int32_t>{1, 5, 5, 2});
  Output a = ops::Conv2DBackpropInput(root.WithOpName("a"), shape, f, dy, {1, 1, 1, 1}, "SAME");
  Output b = ops::Conv2DBackpropInput(root.WithOpName("b"), sizes, f, dy, {1, 1, 1, 1}, "SAME");
  std::unordered_map<const Node*, Device*> where;
  for (Node* n : g.nodes()) where[n] = gpu;
  auto p = Partition(g.nodes(), where, {});
  REQUIRE(p.ok());
  REQUIRE(p->parts.size() == 1);
  const Graph& pg = *p->parts[0].graph;
  // Shape writes host memory and input_sizes reads it: no copy in between.
  CHECK(p->copy_of.at(a.node)->input(0).node == p->copy_of.at(shape.node));
  // A constant in device memory goes through a same-device host-memory _Recv.
  const Node* recv = p->copy_of.at(b.node)->input(0).node;
  CHECK(recv->op() == "_Recv");
  CHECK(recv->attr<bool>("host_memory"));
  CHECK(pg.FindNode("sizes:0/_send_to_GPU:0_host") != nullptr);
  // The float inputs stay in device memory.
  CHECK(p->copy_of.at(b.node)->input(1).node == p->copy_of.at(f.node));
  CHECK(p->send_recv_pairs == 1);
}

}  // namespace
}  // namespace pf
