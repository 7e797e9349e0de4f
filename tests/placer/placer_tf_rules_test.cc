// TensorFlow's placer scenarios (placer_test.cc there) on fake devices: 10 CPUs and 10 fake GPUs
// added out of order, with TensorFlow's test ops (TestVariableGPU runs only on the GPU, TestAssign
// on both, ...). Each case pins one rule of docs/placement.md.
#include <memory>
#include <utility>

#include "placeflow/devices/gpu_probe.h"
#include "placeflow/placer/placer.h"
#include "tests/testing/fake_devices.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/test_util.h"

namespace pf::placer_tf_rules_test {
namespace {

using Catch::Matchers::Contains;
using testing::FakeDeviceSet;
using testing::FakeKernel;
using testing::LogCapture;

#define PF_TEST_SOURCE_OP(name) \
  PF_REGISTER_OP(OpDef(name).Output("y", "float").SetStateful().SetShapeFn(ScalarShape))
#define PF_TEST_UNARY_OP(name) \
  PF_REGISTER_OP(OpDef(name).Input("x", "float").Output("y", "float").SetShapeFn(ScalarShape))
#define PF_TEST_ASSIGN_OP(name)                \
  PF_REGISTER_OP(OpDef(name)                   \
                     .RefInput("ref", "float") \
                     .Input("value", "float")  \
                     .Output("y", "float")     \
                     .SetStateful()            \
                     .SetShapeFn(ScalarShape))

PF_TEST_SOURCE_OP("TestInput");  // CPU only
PF_REGISTER_KERNEL(KernelDef("TestInput", "CPU"), FakeKernel);
PF_TEST_SOURCE_OP("TestDevice");  // FAKE_GPU only
PF_REGISTER_KERNEL(KernelDef("TestDevice", "FAKE_GPU"), FakeKernel);
PF_TEST_SOURCE_OP("TestVariableGPU");
PF_REGISTER_KERNEL(KernelDef("TestVariableGPU", "FAKE_GPU"), FakeKernel);
PF_TEST_SOURCE_OP("TestVariableCPU");
PF_REGISTER_KERNEL(KernelDef("TestVariableCPU", "CPU"), FakeKernel);
PF_TEST_SOURCE_OP("TestVariable");
PF_REGISTER_KERNEL(KernelDef("TestVariable", "CPU"), FakeKernel);
PF_REGISTER_KERNEL(KernelDef("TestVariable", "FAKE_GPU"), FakeKernel);
PF_TEST_ASSIGN_OP("TestAssign");
PF_REGISTER_KERNEL(KernelDef("TestAssign", "CPU"), FakeKernel);
PF_REGISTER_KERNEL(KernelDef("TestAssign", "FAKE_GPU"), FakeKernel);
PF_TEST_ASSIGN_OP("TestAssignCPU");
PF_REGISTER_KERNEL(KernelDef("TestAssignCPU", "CPU"), FakeKernel);
PF_TEST_UNARY_OP("TestReluCPU");
PF_REGISTER_KERNEL(KernelDef("TestReluCPU", "CPU"), FakeKernel);
PF_TEST_UNARY_OP("TestReluGPU");
PF_REGISTER_KERNEL(KernelDef("TestReluGPU", "FAKE_GPU"), FakeKernel);
// Kernel priorities: TestPriorityCpu prefers the CPU, TestPriorityGpu the GPU.
PF_TEST_UNARY_OP("TestPriorityCpu");
PF_REGISTER_KERNEL(KernelDef("TestPriorityCpu", "CPU").Priority(2), FakeKernel);
PF_REGISTER_KERNEL(KernelDef("TestPriorityCpu", "FAKE_GPU").Priority(1), FakeKernel);
PF_TEST_UNARY_OP("TestPriorityGpu");
PF_REGISTER_KERNEL(KernelDef("TestPriorityGpu", "CPU").Priority(1), FakeKernel);
PF_REGISTER_KERNEL(KernelDef("TestPriorityGpu", "FAKE_GPU").Priority(2), FakeKernel);
// Neg (float) and Const have FAKE_GPU kernels too: placer_test.cc registers them.

const std::string kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
const std::string kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
const std::string kGpu0 = "/job:localhost/replica:0/task:0/device:FAKE_GPU:0";
const std::string kGpu1 = "/job:localhost/replica:0/task:0/device:FAKE_GPU:1";

Node* Source(const Scope& s, const char* op) { return NodeBuilder(s, op).Finalize(); }
Node* Unary(const Scope& s, const char* op, Node* x) {
  return NodeBuilder(s, op).Input(Output(x)).Finalize();
}
Node* Assign(const Scope& s, const char* op, Node* var, Node* value) {
  return NodeBuilder(s, op).Input(Output(var)).Input(Output(value)).Finalize();
}
std::string Where(const Placement& p, const Node* n) { return p.device.at(n)->name(); }

// Job "a" with a CPU and a fake GPU, job "b" with a CPU only.
DeviceSet TwoJobs(const std::string& b = "b") {
  DeviceSet set;
  auto add = [&](const std::string& job, const char* type, int priority) {
    auto d = std::make_unique<testing::FakeDevice>(type, 0, priority, priority == 100);
    d->SetTask(job, 0, 0);
    set.Add(std::move(d));
  };
  add("a", "CPU", 100);
  add("a", "FAKE_GPU", 200);
  add(b, "CPU", 100);
  return set;
}

TEST_CASE("Colocation without a common device type names the two nodes; soft placement drops it",
          "[placer]") {
  DeviceSet devices = FakeDeviceSet(10, 10);
  Graph g;
  Scope root = Scope::Root(&g);
  Node* in = Source(root.WithOpName("in"), "TestInput");
  Node* c1 = Unary(root.WithOpName("colocated_1").ColocateWith(in), "TestReluCPU", in);
  // TestReluGPU runs only on the GPU, TestInput only on the CPU.
  Node* foo = Unary(root.WithOpName("foo").ColocateWith(in).ColocateWith(c1), "TestReluGPU", in);
  auto strict = Place(g.nodes(), devices, {});
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == Code::kInvalidArgument);
  CHECK_THAT(strict.status().message(),
             Contains("Cannot colocate nodes {{colocation_node foo}} and {{colocation_node in}} "
                      "because no device type supports both of those nodes and the other nodes "
                      "colocated with them."));
  LogCapture log;
  auto soft = Place(g.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE(soft.ok());
  CHECK(Where(*soft, foo) == kGpu0);
  CHECK(Where(*soft, in) == kCpu0);
  CHECK(Where(*soft, c1) == kCpu0);
  CHECK_THAT(log.Text(),
             Contains("Ignoring request to colocate node 'foo' with nodes in colocation "
                      "group 'in' because soft placement is on"));
  // strict_placement: a dropped colocation is a fallback, so an error.
  auto strict_soft =
      Place(g.nodes(), devices, {.allow_soft_placement = true, .strict_placement = true});
  REQUIRE_FALSE(strict_soft.ok());
  CHECK_THAT(strict_soft.status().message(),
             Contains("Cannot colocate nodes {{colocation_node foo}}"));
}

TEST_CASE("A reference edge beats the consumer's explicit request, without soft placement",
          "[placer]") {
  DeviceSet devices = FakeDeviceSet(10, 10);
  Graph g;
  Scope root = Scope::Root(&g);
  Node* in = Source(root.WithOpName("in").WithDevice("/device:FAKE_GPU:0"), "TestDevice");
  Node* var = Source(root.WithOpName("var_0").WithDevice("/device:FAKE_GPU:0"), "TestVariable");
  Node* assign = Assign(root.WithOpName("assign").WithDevice("/cpu:0"), "TestAssign", var, in);
  LogCapture log;
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, var) == kGpu0);
  CHECK(Where(*p, assign) == kGpu0);
  CHECK(p->fallbacks.empty());
  CHECK_THAT(log.Text(), Contains("Ignoring device specification /device:CPU:0 for node 'assign' "
                                  "because the input edge from 'var_0' is a reference connection "
                                  "and already has a device field set to /device:FAKE_GPU:0"));
}

TEST_CASE("A reference edge keeps the variable's device type under soft placement", "[placer]") {
  DeviceSet devices = FakeDeviceSet(10, 10);
  Graph g;
  Scope root = Scope::Root(&g);
  Node* in = Source(root.WithOpName("in"), "TestInput");
  Node* var_gpu = Source(root.WithOpName("var_gpu"), "TestVariableGPU");
  Node* force_gpu =
      Assign(root.WithOpName("force_gpu").WithDevice("/cpu:0"), "TestAssign", var_gpu, in);
  Node* var_cpu = Source(root.WithOpName("var_cpu"), "TestVariableCPU");
  Node* force_cpu = Assign(root.WithOpName("force_cpu").WithDevice("/device:FAKE_GPU:0"),
                           "TestAssign", var_cpu, in);
  auto strict = Place(g.nodes(), devices, {});
  REQUIRE_FALSE(strict.ok());
  CHECK_THAT(strict.status().message(),
             Contains("Cannot assign a device for operation var_gpu: Could not satisfy explicit "
                      "device specification '' because the node {{colocation_node var_gpu}} was "
                      "colocated with a group of nodes that required incompatible device "
                      "'/device:CPU:0'."));
  auto soft = Place(g.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE(soft.ok());
  CHECK(Where(*soft, var_gpu) == kGpu0);
  CHECK(Where(*soft, force_gpu) == kGpu0);
  CHECK(Where(*soft, var_cpu) == kCpu0);
  CHECK(Where(*soft, force_cpu) == kCpu0);
}

TEST_CASE("A reference edge between ops without a common type fails even with soft placement",
          "[placer]") {
  DeviceSet devices = FakeDeviceSet(10, 10);
  Graph g;
  Scope root = Scope::Root(&g);
  Node* var = Source(root.WithOpName("var"), "TestVariableGPU");
  Node* in = Source(root.WithOpName("in"), "TestInput");
  Assign(root.WithOpName("assign"), "TestAssignCPU", var, in);
  for (bool soft : {false, true}) {
    auto p = Place(g.nodes(), devices, {.allow_soft_placement = soft});
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == Code::kInvalidArgument);
    CHECK_THAT(p.status().message(),
               Contains("Nodes were connected by a reference or resource connection (requiring "
                        "them to be on the same device), but the two nodes were assigned two "
                        "different devices: Cannot colocate nodes {{colocation_node var}} and "
                        "{{colocation_node assign}} because no device type supports both"));
  }
}

TEST_CASE("Assigned devices: reference edges cannot join different ones; soft placement keeps them",
          "[placer]") {
  DeviceSet devices = FakeDeviceSet(10, 10);
  {
    Graph g;
    Scope root = Scope::Root(&g);
    Node* var = Source(root.WithOpName("var"), "TestVariable");
    Node* in = Source(root.WithOpName("in"), "TestInput");
    Node* assign = Assign(root.WithOpName("assign"), "TestAssign", var, in);
    var->set_assigned_device(kGpu0);
    assign->set_assigned_device(kCpu0);
    for (bool soft : {false, true}) {
      auto p = Place(g.nodes(), devices, {.allow_soft_placement = soft});
      REQUIRE_FALSE(p.ok());
      CHECK(p.status().message() ==
            "Cannot place the graph because a reference or resource edge connects colocation "
            "groups with incompatible assigned devices: " +
                kGpu0 + " vs " + kCpu0 + ". The edge src node is var , and the dst node is assign");
    }
  }
  // An assigned node colocated with a node that asks for another device stays where it is.
  Graph g;
  Scope root = Scope::Root(&g);
  Node* x = Source(root.WithOpName("x"), "TestInput");
  Node* n = ops::Neg(root.WithOpName("n"), Output(x)).node;
  Node* m = ops::Neg(root.WithOpName("m").ColocateWith(n), Output(x)).node;
  n->set_assigned_device(kGpu1);
  m->set_requested_device("/device:CPU:0");
  auto strict = Place(g.nodes(), devices, {});
  REQUIRE_FALSE(strict.ok());
  CHECK_THAT(strict.status().message(),
             Contains("Cannot colocate nodes {{colocation_node m}} and {{colocation_node n}}: "
                      "Cannot merge devices with incompatible types"));
  auto soft = Place(g.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE(soft.ok());
  CHECK(Where(*soft, n) == kGpu1);
  CHECK(Where(*soft, m) == kGpu1);
  // A member that cannot run on the assigned device is an error, not a reason to move it.
  Node* e = ops::Exp(root.WithOpName("e").ColocateWith(n), Output(x)).node;
  auto stuck = Place(g.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE_FALSE(stuck.ok());
  CHECK_THAT(stuck.status().message(),
             Contains("Cannot assign a device for operation e: Could not satisfy explicit device "
                      "specification '' because the node {{colocation_node e}} was colocated with "
                      "a group of nodes that required incompatible device '" +
                      kGpu1 + "'"));
  CHECK_THAT(stuck.status().message(), Contains("framework assigned device=" + kGpu1));
  CHECK(e != nullptr);
}

TEST_CASE("Assigned devices are validated first, as INTERNAL errors", "[placer]") {
  DeviceSet devices = FakeDeviceSet(2, 2);
  Graph g;
  Scope root = Scope::Root(&g);
  Node* x = Source(root.WithOpName("x"), "TestInput");
  // A request no device matches comes first in node order; the assigned device is checked first.
  ops::Neg(root.WithOpName("far").WithDevice("/device:FAKE_GPU:9"), Output(x));
  Node* e = ops::Exp(root.WithOpName("e"), Output(x)).node;
  auto expect = [&](const std::string& assigned, const std::string& message) {
    e->set_assigned_device(assigned);
    auto p = Place(g.nodes(), devices, {.allow_soft_placement = true});
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == Code::kInternal);
    CHECK(p.status().message() == message);
  };
  expect(kGpu0,
         "Assigned device '" + kGpu0 + "' does not have registered OpKernel support for Exp");
  const std::string gpu7 = "/job:localhost/replica:0/task:0/device:FAKE_GPU:7";
  expect(gpu7, "Assigned device '" + gpu7 + "' does not match any device");
  expect("/device:CPU:0", "Assigned device '/device:CPU:0' does not match any device");
  expect("/foo:bar", "Malformed assigned device '/foo:bar'");
}

TEST_CASE("A group asked on a task without every needed device type", "[placer]") {
  DeviceSet devices = TwoJobs();
  Graph g;
  Scope root = Scope::Root(&g);
  Node* var = Source(root.WithOpName("var"), "TestVariableGPU");
  Node* in = Source(root.WithOpName("in").WithDevice("/job:b"), "TestInput");
  Assign(root.WithOpName("assign").WithDevice("/job:b/task:0"), "TestAssign", var, in);
  auto strict = Place(g.nodes(), devices, {});
  REQUIRE_FALSE(strict.ok());
  const std::string& m = strict.status().message();
  CHECK_THAT(m, Contains("Cannot assign a device for operation var: Could not satisfy explicit "
                         "device specification '' because the node {{colocation_node var}} was "
                         "colocated with a group of nodes that required incompatible device "
                         "'/job:b/task:0'. All available devices "
                         "[/job:a/replica:0/task:0/device:CPU:0, "
                         "/job:a/replica:0/task:0/device:FAKE_GPU:0, "
                         "/job:b/replica:0/task:0/device:CPU:0]."));
  CHECK_THAT(m, Contains("\nTestVariableGPU: FAKE_GPU\n"));
  CHECK_THAT(m, Contains("\nTestAssign: FAKE_GPU CPU\n"));
  CHECK_THAT(m, Contains("\n  assign (TestAssign) /job:b/task:0\n"));
  // Our text when the request has no device type (TensorFlow's ends at "because").
  Graph g2;
  Scope r2 = Scope::Root(&g2);
  Source(r2.WithOpName("lone").WithDevice("/job:b"), "TestVariableGPU");
  auto lone = Place(g2.nodes(), devices, {});
  REQUIRE_FALSE(lone.ok());
  CHECK_THAT(
      lone.status().message(),
      Contains("Cannot assign a device for operation lone: Could not satisfy explicit device "
               "specification '/job:b' because no device of that specification has a "
               "kernel for every op of the group."));
  // Soft placement keeps the job and task, and says why that found nothing either.
  auto soft = Place(g.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE_FALSE(soft.ok());
  CHECK_THAT(soft.status().message(),
             Contains("Soft placement found no device either: no device matching '/job:b/task:0' "
                      "has a kernel for every op of the group (supported device types: "
                      "[FAKE_GPU])."));
}

TEST_CASE("Job names follow TensorFlow's rule in placement", "[placer]") {
  DeviceSet devices = TwoJobs("Worker_1");
  Graph g;
  Scope root = Scope::Root(&g);
  Node* in = Source(root.WithOpName("in").WithDevice("/job:Worker_1/task:0"), "TestInput");
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, in) == "/job:Worker_1/replica:0/task:0/device:CPU:0");
}

TEST_CASE("Kernel priority beats the device type's own priority", "[placer][registry]") {
  DeviceSet devices = FakeDeviceSet(10, 10);
  Graph g;
  Scope root = Scope::Root(&g);
  Node* x = Source(root.WithOpName("x"), "TestVariable");
  Node* cpu = Unary(root.WithOpName("cpu"), "TestPriorityCpu", x);
  Node* gpu = Unary(root.WithOpName("gpu"), "TestPriorityGpu", x);
  // A member without priorities follows its partner's; two that disagree fall back to the
  // device types' order.
  Node* plain = ops::Neg(root.WithOpName("plain"), Output(x)).node;
  Node* follows = Unary(root.WithOpName("follows").ColocateWith(plain), "TestPriorityCpu", x);
  Node* p1 = Unary(root.WithOpName("p1"), "TestPriorityCpu", x);
  Node* p2 = Unary(root.WithOpName("p2").ColocateWith(p1), "TestPriorityGpu", x);
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, cpu) == kCpu0);
  CHECK(Where(*p, gpu) == kGpu0);
  CHECK(Where(*p, plain) == kCpu0);
  CHECK(Where(*p, follows) == kCpu0);
  CHECK(Where(*p, p1) == kGpu0);
  CHECK(Where(*p, p2) == kGpu0);
  using Types = std::vector<std::pair<std::string, int>>;
  CHECK(KernelRegistry::Global()->PrioritizedTypes(*cpu, {"FAKE_GPU", "CPU"}) ==
        Types{{"CPU", 2}, {"FAKE_GPU", 1}});
  CHECK(KernelRegistry::Global()->PrioritizedTypes(*plain, {"FAKE_GPU", "CPU"}) ==
        Types{{"FAKE_GPU", 0}, {"CPU", 0}});
}

TEST_CASE("A generator follows its consumers when they all sit on one device", "[placer]") {
  DeviceSet devices = FakeDeviceSet(2, 1);
  Graph g;
  Scope root = Scope::Root(&g);
  Output gen = ops::Const(root.WithOpName("gen"), Tensor(DT_FLOAT, {2}));
  ops::Neg(root.WithOpName("n1").WithDevice("/cpu:1"), gen);
  ops::Neg(root.WithOpName("n2").WithDevice("/cpu:1"), gen);
  Output split = ops::Const(root.WithOpName("split"), Tensor(DT_FLOAT, {2}));
  ops::Neg(root.WithOpName("n3").WithDevice("/cpu:1"), split);
  ops::Neg(root.WithOpName("n4").WithDevice("/cpu:0"), split);
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, gen.node) == kCpu1);
  CHECK(Where(*p, split.node) == kGpu0);  // consumers disagree: its own best device
}

TEST_CASE("Placement errors in TensorFlow's words and codes", "[placer]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Node* x = Source(root.WithOpName("x"), "TestInput");
  SECTION("no devices") {
    auto p = Place(g.nodes(), DeviceSet(), {});
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == Code::kFailedPrecondition);
    CHECK(p.status().message() == "No devices are registered");
  }
  SECTION("an unknown GPU") {
    ops::Neg(root.WithOpName("n").WithDevice("/device:GPU:2"), Output(x));
    auto p = Place(g.nodes(), FakeDeviceSet(1, 1), {});
    REQUIRE_FALSE(p.ok());
    const bool no_cuda = !BuiltWithCuda() || CudaDeviceCount() == 0;
    CHECK(
        p.status().message() ==
        "Cannot assign a device for operation n: {{node n}} was explicitly assigned to "
        "/device:GPU:2 but available devices are [ " +
            kCpu0 + ", " + kGpu0 +
            " ]. Make sure the device specification refers to a valid device." +
            (no_cuda ? " The requested device appears to be a GPU, but CUDA is not enabled." : "") +
            "\n\t [[{{node n}}]]");
  }
  SECTION("the node that carried the request is named, not the first of its group") {
    Node* first = ops::Neg(root.WithOpName("first"), Output(x)).node;
    Node* asks = ops::Neg(root.WithOpName("asks").ColocateWith(first), Output(x)).node;
    asks->set_requested_device("/device:FAKE_GPU:11");
    auto p = Place(g.nodes(), FakeDeviceSet(1, 1), {});
    REQUIRE_FALSE(p.ok());
    CHECK_THAT(p.status().message(),
               Contains("Cannot assign a device for operation asks: {{node asks}} was explicitly "
                        "assigned to /device:FAKE_GPU:11 but"));
  }
  SECTION("soft placement says why nothing matched") {
    ops::Neg(root.WithOpName("n").WithDevice("/job:nowhere/device:FAKE_GPU:1"), Output(x));
    auto p = Place(g.nodes(), FakeDeviceSet(1, 1), {.allow_soft_placement = true});
    REQUIRE_FALSE(p.ok());
    CHECK_THAT(p.status().message(),
               Contains("{{node n}} was explicitly assigned to /job:nowhere/device:FAKE_GPU:1"));
    CHECK_THAT(p.status().message(),
               Contains("\nSoft placement found no device either: no device matches "
                        "'/job:nowhere'."));
  }
}

// Deliberate difference: soft placement first keeps the requested type (any id), then any type;
// TensorFlow drops both at once and would pick the GPU here.
TEST_CASE("Soft placement keeps the requested device type before dropping it", "[placer]") {
  DeviceSet devices = FakeDeviceSet(2, 1);
  Graph g;
  Scope root = Scope::Root(&g);
  Node* x = Source(root.WithOpName("x"), "TestInput");
  Node* n = ops::Neg(root.WithOpName("n").WithDevice("/cpu:5"), Output(x)).node;
  auto p = Place(g.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE(p.ok());
  CHECK(Where(*p, n) == kCpu0);
}

}  // namespace
}  // namespace pf::placer_tf_rules_test

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_TEST_SOURCE_OP
#undef PF_TEST_UNARY_OP
#undef PF_TEST_ASSIGN_OP
