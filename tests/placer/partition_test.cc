// Partitioning: Send/Recv pairs, control tokens, fed inputs and HostMemory arguments. Running
// partitions is tested in tests/executor/multi_device_test.cc.
#include "placeflow/placer/partition.h"

#include "placeflow/executor/subgraph.h"
#include "placeflow/train/towers.h"
#include "placeflow/train/variables.h"
#include "tests/testing/fake_devices.h"
#include "tests/testing/test_util.h"

namespace pf::partition_test {
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

// A train op grouping N updates that run on another device waits for one token from that
// device, not N (the first GPU run's traces: one round trip per variable).
TEST_CASE("Partition: a node's control inputs from one device share one token", "[partition]") {
  FourCpus d;
  Graph g;
  Scope root = Scope::Root(&g);
  std::vector<Operation> updates;
  std::unordered_map<const Node*, Device*> where;
  for (int i = 0; i < 5; ++i) {
    updates.push_back(ops::NoOp(root.WithOpName(fmt::format("update{}", i))));
    where[updates.back().node] = d.cpu(i < 4 ? 1 : 2);  // four on CPU:1, one on CPU:2
  }
  Operation local = ops::NoOp(root.WithOpName("local"));
  where[local.node] = d.cpu(0);
  std::vector<Operation> deps = updates;
  deps.push_back(local);
  Operation train = ops::NoOp(root.WithOpName("train").WithControlDependencies(deps));
  Operation again = ops::NoOp(root.WithOpName("again").WithControlDependencies(
      {updates[3], updates[1], train, updates[0], updates[2]}));  // the same set, reordered
  where[train.node] = d.cpu(0);
  where[again.node] = d.cpu(0);
  auto p = Partition(g.nodes(), where, {});
  REQUIRE(p.ok());
  CHECK(p->send_recv_pairs == 2);  // CPU:1's four updates together; CPU:2's one alone
  CHECK(p->control_tokens == 2);
  const Node* copy = p->copy_of.at(train.node);
  std::vector<std::string> inputs;
  for (const Node* c : copy->control_inputs()) inputs.push_back(c->name());
  std::sort(inputs.begin(), inputs.end());
  CHECK(inputs == std::vector<std::string>{
                      "local", "train/_control_token_from_CPU_1:0/_recv_on_CPU:0/Identity",
                      "update4/_control_token:0/_recv_on_CPU:0/Identity"});
  // The shared token runs after all four sources; "again" reuses it.
  const Node* token = nullptr;
  for (const auto& part : p->parts) {
    if (part.device == d.cpu(1)) token = part.graph->FindNode("train/_control_token_from_CPU_1");
  }
  REQUIRE(token != nullptr);
  CHECK(token->control_inputs().size() == 4);
  const auto& again_inputs = p->copy_of.at(again.node)->control_inputs();
  REQUIRE(again_inputs.size() == 2);  // train itself, and the shared token
  CHECK(again_inputs[1]->name() == "train/_control_token_from_CPU_1:0/_recv_on_CPU:0/Identity");
}

// The same, run: the group waits for every update before it completes, and the placement log
// counts the one pair.
TEST_CASE("Partition: a shared control token still orders every update", "[partition]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Scope far = root.WithDevice("/cpu:1");
  std::vector<Variable> vars;
  std::vector<Operation> updates;
  for (int i = 0; i < 4; ++i) {
    vars.push_back(GetVariable(far, fmt::format("v{}", i), {2}, init::Constant(i)));
    updates.push_back(Operation(
        ops::AssignAdd(far, vars.back().ref(), ops::Const(far, Tensor::FromVector<float>({1, 2})))
            .node));
  }
  Operation train =
      ops::NoOp(root.WithOpName("train").WithDevice("/cpu:0").WithControlDependencies(updates));
  // Read on /cpu:0 after the train op, in the same step: it must see every update done.
  std::vector<Output> reads;
  for (const Variable& v : vars) reads.push_back(v.value());
  Scope after = root.WithDevice("/cpu:0").WithControlDependencies({train});
  Output sum = ops::AddN(after.WithOpName("sum_after"),
                         {ops::Identity(after, reads[0]), ops::Identity(after, reads[1]),
                          ops::Identity(after, reads[2]), ops::Identity(after, reads[3])});
  SessionOptions o;
  o.device_count["CPU"] = 2;
  Session sess(g, o);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  for (int step = 1; step <= 3; ++step) {
    // v_i = i + step, i + 2 step: the four sum to 6 + 4 step, 6 + 8 step.
    CHECK(sess.Run({sum})[0].DebugString() ==
          fmt::format("Tensor<float [2]> [{}, {}]", 6 + 4 * step, 6 + 8 * step));
  }
  for (int i = 0; i < 4; ++i) {
    CHECK(sess.Run({vars[i].value()})[0].DebugString() ==
          fmt::format("Tensor<float [2]> [{}, {}]", i + 3, i + 6));
  }
}

TEST_CASE("Partition: cross-device control edges and incomplete graphs", "[partition]") {
  FourCpus d;
  Graph g;
  Scope root = Scope::Root(&g);
  Operation first = ops::NoOp(root.WithOpName("first"));
  Output after = ops::Const(root.WithOpName("after").WithControlDependencies({first}), 1.f);
  Output also = ops::Const(root.WithOpName("also").WithControlDependencies({first}), 2.f);
  Output elsewhere = ops::Const(root.WithOpName("elsewhere").WithControlDependencies({first}), 3.f);
  std::unordered_map<const Node*, Device*> where = {{first.node, d.cpu(2)},
                                                    {after.node, d.cpu(3)},
                                                    {also.node, d.cpu(3)},
                                                    {elsewhere.node, d.cpu(1)}};
  auto p = Partition(g.nodes(), where, {});
  REQUIRE(p.ok());
  // TensorFlow's shape: Const -> _Send ... _Recv -> Identity -> ^dst, one pair per (source,
  // destination device): after and also share theirs, elsewhere gets its own.
  CHECK(p->send_recv_pairs == 2);
  const Node* copy = p->copy_of.at(after.node);
  REQUIRE(copy->control_inputs().size() == 1);
  const Node* identity = copy->control_inputs()[0];
  CHECK(identity->op() == "Identity");
  CHECK(identity->name() == "first/_control_token:0/_recv_on_CPU:3/Identity");
  CHECK(identity->assigned_device() == d.cpu(3)->name());
  REQUIRE(identity->num_inputs() == 1);
  const Node* recv = identity->input(0).node;
  CHECK(recv->op() == "_Recv");
  CHECK(recv->name() == "first/_control_token:0/_recv_on_CPU:3");
  REQUIRE(p->copy_of.at(also.node)->control_inputs().size() == 1);
  CHECK(p->copy_of.at(also.node)->control_inputs()[0] == identity);
  const Node* other = p->copy_of.at(elsewhere.node)->control_inputs().at(0);
  CHECK(other->name() == "first/_control_token:0/_recv_on_CPU:1/Identity");
  // The sending side: one constant after `first`, sent once per destination device.
  const Partitions::Part* p2 = nullptr;
  for (const auto& part : p->parts) {
    if (part.device == d.cpu(2)) p2 = &part;
  }
  REQUIRE(p2 != nullptr);
  const Node* token = p2->graph->FindNode("first/_control_token");
  REQUIRE(token != nullptr);
  CHECK(token->op() == "Const");
  REQUIRE(token->control_inputs().size() == 1);
  CHECK(token->control_inputs()[0] == p->copy_of.at(first.node));
  CHECK(OpsIn(*p2, "_Send").size() == 2);

  Output x = ops::Neg(root.WithOpName("x"), after);
  auto incomplete = Partition({x.node}, {{x.node, d.cpu(0)}}, {});
  REQUIRE_FALSE(incomplete.ok());
  CHECK(incomplete.status().code() == Code::kInvalidArgument);
  CHECK(incomplete.status().message() ==
        "Incomplete graph, missing 1 inputs for x (Neg: after:0 neither fed nor in the subgraph)");
  Output y = ops::Add(root.WithOpName("y"), after, also);
  auto two_missing =
      Partition({y.node, also.node}, {{y.node, d.cpu(0)}, {also.node, d.cpu(0)}}, {});
  REQUIRE_FALSE(two_missing.ok());
  CHECK_THAT(two_missing.status().message(), Contains("Incomplete graph, missing 1 inputs for y"));
  auto none = Partition({y.node}, {{y.node, d.cpu(0)}}, {});
  CHECK_THAT(none.status().message(), Contains("Incomplete graph, missing 2 inputs for y (Add: "
                                               "after:0, also:0 neither fed nor in the subgraph)"));
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
  // h's HostMemory output m read in device memory (Identity has no FAKE_GPU kernel: all its
  // arguments are in device memory).
  Output from_host = ops::Identity(root.WithOpName("from_host"), Output(h, 1));
  std::unordered_map<const Node*, Device*> where = {
      {x.node, gpu}, {a.node, gpu}, {c.node, cpu},     {h, gpu},
      {k, gpu},      {m, gpu},      {ident.node, gpu}, {from_host.node, gpu}};
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
  // Same device, host memory -> device memory: a _Recv on the GPU that delivers device memory.
  const Node* to_device = p->copy_of.at(from_host.node)->input(0).node;
  CHECK(to_device->name() == "h:1/_recv_on_FAKE_GPU:0");
  CHECK(to_device->op() == "_Recv");
  CHECK_FALSE(to_device->attr<bool>("host_memory"));
  CHECK(to_device->attr<std::string>("send_device") == gpu->name());
  CHECK(to_device->attr<std::string>("recv_device") == gpu->name());
  const Node* send = pg.graph->FindNode("h:1/_send_to_FAKE_GPU:0");
  REQUIRE(send != nullptr);
  CHECK(send->input(0).node == p->copy_of.at(h));
  CHECK(p->send_recv_pairs == 3);
}

// A fake GPU whose kernels have the real GPU kernels' memory types (ops/array/shape_ops.cc:
// Shape writes its output in host memory; Slice and Cast read device memory). A type of its
// own, so that the placer suite's FAKE_GPU kernels stay as they are.
constexpr char kMemGpu[] = "MEM_GPU";
PF_REGISTER_KERNEL(KernelDef("Shape", kMemGpu).HostMemory("output"), testing::FakeKernel);
PF_REGISTER_KERNEL(KernelDef("Slice", kMemGpu), testing::FakeKernel);
PF_REGISTER_KERNEL(KernelDef("Cast", kMemGpu), testing::FakeKernel);
PF_REGISTER_KERNEL(KernelDef("TestHostArg", kMemGpu).HostMemory("n").HostMemory("m"),
                   testing::FakeKernel);

TEST_CASE("Partition: a HostMemory output read in device memory on the same GPU is copied",
          "[partition]") {
  DeviceSet d;
  d.Add(std::make_unique<testing::FakeDevice>(kDeviceCpu, 0, 100, true));
  d.Add(std::make_unique<testing::FakeDevice>(kMemGpu, 0, 200, false));
  Device* gpu = d.Find(DeviceName::FullName("localhost", 0, 0, kMemGpu, 0));
  Device* cpu = d.Find(DeviceName::FullName("localhost", 0, 0, kDeviceCpu, 0));
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root.WithOpName("x"), Tensor(DT_FLOAT, {4, 3}));
  Output shape = ops::Shape(root.WithOpName("shape"), x);  // host memory on the GPU
  Output slice = ops::Slice(root.WithOpName("slice"), shape, {0}, {1});
  Output cast = ops::Cast(root.WithOpName("cast"), slice, DT_FLOAT);
  Output on_cpu = ops::Cast(root.WithOpName("on_cpu"), shape, DT_FLOAT);
  std::unordered_map<const Node*, Device*> where = {
      {x.node, gpu}, {shape.node, gpu}, {slice.node, gpu}, {cast.node, gpu}, {on_cpu.node, cpu}};
  auto p = Partition(g.nodes(), where, {});
  REQUIRE(p.ok());
  const Node* recv = p->copy_of.at(slice.node)->input(0).node;
  REQUIRE(recv->op() == "_Recv");
  CHECK(recv->name() == "shape:0/_recv_on_MEM_GPU:0");
  CHECK_FALSE(recv->attr<bool>("host_memory"));
  CHECK(recv->assigned_device() == gpu->name());
  // Device memory to device memory on the same GPU: direct.
  CHECK(p->copy_of.at(cast.node)->input(0).node == p->copy_of.at(slice.node));
  // The CPU's copy comes through an ordinary cross-device pair.
  CHECK(p->copy_of.at(on_cpu.node)->input(0).node->name() == "shape:0/_recv_on_CPU:0");
  CHECK(p->send_recv_pairs == 2);
}

TEST_CASE("Partition: towers on GPUs copy the batch size's Shape before Slice reads it",
          "[partition]") {
  DeviceSet d;
  d.Add(std::make_unique<testing::FakeDevice>(kDeviceCpu, 0, 100, true));
  for (int i = 0; i < 2; ++i) d.Add(std::make_unique<testing::FakeDevice>(kMemGpu, i, 200, false));
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {4, 3});
  train::TowerOptions o;
  o.devices = {"/gpu:0", "/gpu:1"};
  train::Towers t =
      train::ReplicateTowers(root, o, {x}, [](const Scope& s, const std::vector<Output>& in) {
        Variable w = GetVariable(s.WithVariableScope("affine"), "w", {3, 1});
        return train::TowerOutputs{ops::Mean(s, ops::MatMul(s, in[0], w.value())), {}};
      });
  // Stand-in placement: what a tower asked for on a GPU goes to the fake GPU of that id.
  std::unordered_map<const Node*, Device*> where;
  for (Node* n : g.nodes()) {
    DeviceName want;
    const bool on_gpu =
        DeviceName::Parse(n->requested_device(), &want) && want.has_type && want.type == kDeviceGpu;
    where[n] = on_gpu ? d.Find(DeviceName::FullName("localhost", 0, 0, kMemGpu, want.id))
                      : d.Find(DeviceName::FullName("localhost", 0, 0, kDeviceCpu, 0));
  }
  auto p = Partition(g.nodes(), where, {});
  REQUIRE(p.ok());
  for (int i = 0; i < 2; ++i) {
    const std::string tower = "tower_" + std::to_string(i) + "/batch_size/";
    const Node* shape = nullptr;
    const Node* slice = nullptr;
    for (const Node* n : g.nodes()) {
      if (n->name().rfind(tower, 0) != 0) continue;
      if (n->op() == "Shape") shape = n;
      if (n->op() == "Slice") slice = n;
    }
    REQUIRE(shape != nullptr);
    REQUIRE(slice != nullptr);
    REQUIRE(where.at(slice)->device_type() == kMemGpu);
    REQUIRE(where.at(shape) == where.at(slice));
    const Node* recv = p->copy_of.at(slice)->input(0).node;
    CHECK(recv->op() == "_Recv");
    CHECK_FALSE(recv->attr<bool>("host_memory"));
    CHECK(recv->attr<std::string>("send_device") == where.at(slice)->name());
    CHECK(recv->attr<std::string>("recv_device") == where.at(slice)->name());
  }
}

// Issue 31: one tower on a GPU kept its variables on /cpu:0, so each step sent every weight to
// the GPU and every gradient back. By default the variables now live with the towers when all
// of them are on GPUs. Placed as the placer would with GPU kernels for every op: what asks for a
// GPU goes there, updates go with their variable, the rest to the highest priority device.
struct MlpStepCopies {
  int pairs = 0, tokens = 0;              // _Send/_Recv pairs between the devices; control tokens
  std::vector<std::string> variables_on;  // each variable's device type
};
MlpStepCopies PartitionMlpStep(const std::string& variable_device) {
  DeviceSet d;
  d.Add(std::make_unique<testing::FakeDevice>(kDeviceCpu, 0, 100, true));
  d.Add(std::make_unique<testing::FakeDevice>(kDeviceGpu, 0, 200, false));
  Device* cpu = d.Find(DeviceName::FullName("localhost", 0, 0, kDeviceCpu, 0));
  Device* gpu = d.Find(DeviceName::FullName("localhost", 0, 0, kDeviceGpu, 0));
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {8, 4});
  Output y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT, {8, 1});
  train::TowerOptions o;
  o.devices = {"/gpu:0"};
  if (variable_device != "default") o.variable_device = variable_device;
  train::Towers t =
      train::ReplicateTowers(root, o, {x, y}, [](const Scope& s, const std::vector<Output>& in) {
        Output h = in[0];
        for (int layer = 0; layer < 3; ++layer) {
          Scope vs = s.WithVariableScope(fmt::format("affine{}", layer));
          Variable w = GetVariable(vs, "w", {layer == 0 ? 4 : 5, layer == 2 ? 1 : 5});
          Variable b = GetVariable(vs, "b", {layer == 2 ? 1 : 5}, init::Zeros());
          h = ops::Add(s, ops::MatMul(s, h, w.value()), b.value());
        }
        return train::TowerOutputs{ops::Mean(s, ops::Square(s, ops::Sub(s, h, in[1]))), {}};
      });
  train::GradientDescent opt(0.1);
  Operation step = opt.ApplyGradients(root.WithOpName("train"), t.grads_and_vars);
  std::unordered_map<const Node*, Device*> where;
  for (Node* n : g.nodes()) {  // in creation order: a variable before its updates
    DeviceName want;
    DeviceName::Parse(n->requested_device(), &want);
    Device* dev = want.has_type && want.type == kDeviceCpu ? cpu : gpu;
    for (int k = 0; k < n->num_inputs(); ++k) {
      if (n->IsRefInput(k)) dev = where.at(ReferencedVariable(n->input(k)));
    }
    where[n] = dev;
  }
  std::vector<Node*> nodes = Prune({x, y}, {}, {step});
  auto p = Partition(nodes, where, {x, y});
  REQUIRE(p.ok());
  // Pairs between devices (a GPU kernel's HostMemory argument adds one within the GPU).
  MlpStepCopies c{0, p->control_tokens, {}};
  for (const auto& part : p->parts) {
    for (const Node* n : part.nodes) {
      if (n->op() == "_Recv" &&
          n->attr<std::string>("send_device") != n->attr<std::string>("recv_device"))
        ++c.pairs;
    }
  }
  for (const Variable& v : t.variables)
    c.variables_on.push_back(where.at(v.value().node)->device_type());
  return c;
}

TEST_CASE("Partition: one GPU tower keeps its variables on the GPU by default: no copies",
          "[partition][towers]") {
  const MlpStepCopies on_gpu = PartitionMlpStep("default");
  CHECK(on_gpu.variables_on == std::vector<std::string>(6, kDeviceGpu));
  CHECK(on_gpu.pairs == 0);  // the feeds enter through _Args; nothing else crosses
  // The multi-GPU articles' layout, by flag: every weight goes to the GPU and every gradient
  // back (2 x 6 tensors), and the updates' control edges to the GPU's train op share a token.
  const MlpStepCopies on_cpu = PartitionMlpStep("/cpu:0");
  CHECK(on_cpu.variables_on == std::vector<std::string>(6, kDeviceCpu));
  CHECK(on_cpu.tokens == 1);
  CHECK(on_cpu.pairs == 2 * 6 + 1);
}

TEST_CASE("Partition: a feed read in host and in device memory on one GPU gets two _Args",
          "[partition][session]") {
  DeviceSet d;
  d.Add(std::make_unique<testing::FakeDevice>(kDeviceCpu, 0, 100, true));
  d.Add(std::make_unique<testing::FakeDevice>(kMemGpu, 0, 200, false));
  Device* gpu = d.Find(DeviceName::FullName("localhost", 0, 0, kMemGpu, 0));
  Device* cpu = d.Find(DeviceName::FullName("localhost", 0, 0, kDeviceCpu, 0));
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root.WithOpName("x"), 1.f);
  Output n = ops::Placeholder(root.WithOpName("n"), DT_INT32, {});
  Node* h = NodeBuilder(root.WithOpName("h"), "TestHostArg").Input(x).Input(n).Finalize();
  Output dev = ops::Cast(root.WithOpName("dev"), n, DT_FLOAT);      // device memory
  Output host2 = ops::Cast(root.WithOpName("host2"), n, DT_FLOAT);  // on the CPU
  std::unordered_map<const Node*, Device*> where = {
      {x.node, gpu}, {h, gpu}, {dev.node, gpu}, {host2.node, cpu}};
  auto p = Partition({x.node, h, dev.node, host2.node}, where, {n});
  REQUIRE(p.ok());
  const Partitions::Part& pg = p->parts[0].device == gpu ? p->parts[0] : p->parts[1];
  const Partitions::Part& pc = p->parts[0].device == gpu ? p->parts[1] : p->parts[0];
  REQUIRE(pg.args.count(n) == 2);
  REQUIRE(pc.args.count(n) == 1);
  const Node* host_arg = p->copy_of.at(h)->input(1).node;
  const Node* dev_arg = p->copy_of.at(dev.node)->input(0).node;
  CHECK(host_arg->name() == "_arg/n_0_host");
  CHECK(dev_arg->name() == "_arg/n_0");
  // What the session stages: the host-memory _Arg stays on the host, the other is copied in.
  CHECK(FeedStaysOnHost(*host_arg, *gpu));
  CHECK_FALSE(FeedStaysOnHost(*dev_arg, *gpu));
  CHECK(FeedStaysOnHost(*p->copy_of.at(host2.node)->input(0).node, *cpu));
}

// The real GPU kernels' memory types (ops/nn/conv_ops_gpu.cc, registered where the CUDA backend
// is loaded: with a driver, or with PF_CUDA_BACKEND=1 as ctest gpu_kernels_match_sources runs
// it) on a fake device of type GPU: nothing runs, so no GPU is needed.
TEST_CASE("Partition: Conv2DBackpropInput's input_sizes from a GPU Shape stays in host memory",
          "[partition][backend_kernels]") {
  LoadGpuBackend();
  bool has_gpu_kernel = false;
  for (const KernelDef* k : KernelRegistry::Global()->KernelsForOp("Conv2DBackpropInput")) {
    has_gpu_kernel |= k->device_type() == kDeviceGpu;
  }
  if (!has_gpu_kernel) {
    WARN("skipped: no GPU kernel for Conv2DBackpropInput (the CUDA backend is "
         << LoadGpuBackend().ToString() << ")");
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
}  // namespace pf::partition_test
