// Placer rules on fake devices (no GPU needed).
#include "placeflow/placer/placer.h"

#include <algorithm>
#include <sstream>

#include "placeflow/graph/kernel.h"
#include "tests/testing/fake_devices.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/test_util.h"

namespace pf::placer_test {
namespace {

using Catch::Matchers::Contains;
using testing::FakeDeviceSet;

// Kernels for FAKE_GPU: MatMul, Neg, Identity, Variable and Assign float; no kernel for Exp.
class NopKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override { return Status::OK(); }
};
PF_REGISTER_KERNEL(KernelDef("MatMul", "FAKE_GPU").TypeConstraint("T", {DT_FLOAT}), NopKernel);
PF_REGISTER_KERNEL(KernelDef("Neg", "FAKE_GPU").TypeConstraint("T", {DT_FLOAT}), NopKernel);
PF_REGISTER_KERNEL(KernelDef("Const", "FAKE_GPU"), NopKernel);
PF_REGISTER_KERNEL(KernelDef("Identity", "FAKE_GPU"), NopKernel);

std::string Where(const Placement& p, Output o) { return p.device.at(o.node)->name(); }

const char* kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
const char* kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
const char* kGpu0 = "/job:localhost/replica:0/task:0/device:FAKE_GPU:0";
const char* kGpu1 = "/job:localhost/replica:0/task:0/device:FAKE_GPU:1";

TEST_CASE("Default placement prefers the highest-priority device with a kernel", "[placer]") {
  DeviceSet devices = FakeDeviceSet(2, 2);
  REQUIRE(devices.devices().front()->name() == kGpu0);  // sorted despite out-of-order adds
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root, Tensor(DT_FLOAT, {2, 2}));
  Output m = ops::MatMul(root, c, c);
  Output e = ops::Exp(root, m);  // no FAKE_GPU kernel
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, m) == kGpu0);
  CHECK(Where(*p, e) == kCpu0);
  CHECK(p->fallbacks.empty());
}

TEST_CASE("Requested devices, partial specs and wildcards", "[placer]") {
  DeviceSet devices = FakeDeviceSet(2, 2);
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root, Tensor(DT_FLOAT, {2, 2}));
  Output on_cpu1 = ops::Neg(root.WithDevice("/cpu:1"), c);
  Output on_gpu1 = ops::Neg(root.WithDevice("/device:FAKE_GPU:1"), c);
  Output any_gpu = ops::Neg(root.WithDevice("/device:FAKE_GPU:*"), c);
  Output job = ops::Neg(root.WithDevice("/job:localhost"), c);
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, on_cpu1) == kCpu1);
  CHECK(Where(*p, on_gpu1) == kGpu1);
  CHECK(Where(*p, any_gpu) == kGpu0);
  CHECK(Where(*p, job) == kGpu0);
}

TEST_CASE("Unsatisfiable requests fail, or fall back with soft placement", "[placer]") {
  DeviceSet devices = FakeDeviceSet(1, 2);
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root, Tensor(DT_FLOAT, {2, 2}));
  Output far = ops::Neg(root.WithOpName("far").WithDevice("/device:FAKE_GPU:11"), c);
  auto strict = Place(g.nodes(), devices, {});
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == Code::kInvalidArgument);
  CHECK(strict.status().message() ==
        "Cannot assign a device for operation far: {{node far}} was explicitly assigned to "
        "/device:FAKE_GPU:11 but available devices are [ " +
            std::string(kCpu0) + ", " + kGpu0 + ", " + kGpu1 +
            " ]. Make sure the device specification refers to a valid device.\n\t [[{{node "
            "far}}]]");
  auto soft = Place(g.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE(soft.ok());
  CHECK(Where(*soft, far) == kGpu0);  // same type, any id
  REQUIRE(soft->fallbacks.size() == 1);
  CHECK_THAT(soft->fallbacks[0], Contains("far (Neg) requested '/device:FAKE_GPU:11'"));

  Graph g2;
  Scope r2 = Scope::Root(&g2);
  Output e = ops::Exp(r2.WithOpName("e").WithDevice("/device:FAKE_GPU:0"),
                      ops::Const(r2, Tensor(DT_FLOAT, {2})));
  auto no_kernel = Place(g2.nodes(), devices, {});
  REQUIRE_FALSE(no_kernel.ok());
  CHECK_THAT(no_kernel.status().message(),
             Contains("Cannot assign a device for operation e: Could not satisfy explicit device "
                      "specification '/device:FAKE_GPU:0' because no supported kernel for FAKE_GPU "
                      "devices is available."));
  CHECK_THAT(no_kernel.status().message(), Contains("\nExp: CPU\n"));
  CHECK_THAT(no_kernel.status().message(), Contains("\n  e (Exp) /device:FAKE_GPU:0\n"));
  auto soft2 = Place(g2.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE(soft2.ok());
  CHECK(Where(*soft2, e) == kCpu0);
}

TEST_CASE("A variable and the ops that take it by reference are placed together", "[placer]") {
  DeviceSet devices = FakeDeviceSet(1, 1);
  Graph g;
  Scope root = Scope::Root(&g);
  // Assign has no FAKE_GPU kernel, so the whole group (variable, Assign, read) goes to the CPU.
  Variable v = GetVariable(root, "v", {2}, init::Zeros());
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, v.ref()) == kCpu0);
  CHECK(Where(*p, v.initializer().node) == kCpu0);
  CHECK(Where(*p, v.value()) == kCpu0);
  // Explicit colocation pulls a GPU-capable op to its partner.
  Output w =
      ops::Neg(root.WithOpName("w").WithDevice("/cpu:0"), ops::Const(root, Tensor(DT_FLOAT, {2})));
  Output friend_op = ops::Neg(root.ColocateWith(w), w);
  auto q = Place(g.nodes(), devices, {});
  REQUIRE(q.ok());
  CHECK(Where(*q, friend_op) == kCpu0);
}

TEST_CASE("Ops without any kernel are reported in TensorFlow's words", "[placer]") {
  DeviceSet devices = FakeDeviceSet(1, 1);
  Graph g;
  Scope root = Scope::Root(&g);
  // Sqrt of int32 cannot even be built; Pow of int32 neither. Use a test-only op without kernels.
  static OpRegistrar reg(OpDef("TestNoKernel").Output("y", "float").SetShapeFn(ScalarShape));
  NodeBuilder(root.WithOpName("lonely"), "TestNoKernel").Finalize();
  auto p = Place(g.nodes(), devices, {});
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == Code::kInvalidArgument);  // TensorFlow's code, not NotFound
  CHECK_THAT(
      p.status().message(),
      Contains("No OpKernel was registered to support Op 'TestNoKernel' used by {{node lonely}}"));
  CHECK_THAT(p.status().message(), Contains("<no registered kernels>"));
}

TEST_CASE("A session on two CPU devices runs nodes where they were asked", "[placer][executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithDevice("/cpu:1"), Tensor::FromVector<float>({1, 2}));
  Output b = ops::Square(root.WithOpName("sq").WithDevice("/cpu:1"), a);
  Output c = ops::Neg(root.WithOpName("neg").WithDevice("/cpu:0"), b);
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  Session sess(g, opts);
  CHECK(sess.Run({c})[0].DebugString() == "Tensor<float [2]> [-1, -4]");
  auto where = sess.DevicePlacement();
  CHECK(where.at("sq") == kCpu1);
  CHECK(where.at("neg") == kCpu0);
  Session one(g);  // /cpu:1 does not exist here
  CHECK_THROWS_WITH(one.Run({c}), Contains("was explicitly assigned to /device:CPU:1 but available "
                                           "devices are [ " +
                                           std::string(kCpu0) + " ]"));
  SessionOptions soft;
  soft.allow_soft_placement = true;
  Session fallback(g, soft);
  CHECK(fallback.Run({c})[0].DebugString() == "Tensor<float [2]> [-1, -4]");
  CHECK(fallback.DevicePlacement().at("sq") == kCpu0);
}

}  // namespace
}  // namespace pf::placer_test

namespace pf::placer_test {
namespace {

TEST_CASE("Heuristics: generators follow their consumer, metadata ops stay with their input",
          "[placer]") {
  DeviceSet devices = testing::FakeDeviceSet(2, 1);
  Graph g;
  Scope root = Scope::Root(&g);
  Output gen =
      ops::Const(root.WithOpName("gen"), Tensor(DT_FLOAT, {2}));  // FAKE_GPU has a Const kernel
  Output e = ops::Exp(root.WithOpName("e"), gen);                 // CPU only
  Output on_cpu1 =
      ops::Neg(root.WithOpName("n1").WithDevice("/cpu:1"), ops::Const(root, Tensor(DT_FLOAT, {2})));
  Output shape = ops::Shape(root.WithOpName("shape"), on_cpu1);
  // A generator with two consumers, and one with an explicit device, stay where they chose.
  Output shared = ops::Const(root.WithOpName("shared"), Tensor(DT_FLOAT, {2}));
  ops::Exp(root, shared);
  ops::Neg(root, shared);
  Output pinned =
      ops::Const(root.WithOpName("pinned").WithDevice("/device:FAKE_GPU:0"), Tensor(DT_FLOAT, {2}));
  ops::Exp(root, pinned);
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, gen) == kCpu0);
  CHECK(Where(*p, e) == kCpu0);
  CHECK(Where(*p, shape) == kCpu1);
  CHECK(Where(*p, shared) == kGpu0);
  CHECK(Where(*p, pinned) == kGpu0);
}

TEST_CASE("strict_placement turns soft fallbacks into errors", "[placer]") {
  DeviceSet devices = testing::FakeDeviceSet(1, 2);
  Graph g;
  Scope root = Scope::Root(&g);
  ops::Neg(root.WithOpName("far").WithDevice("/device:FAKE_GPU:11"),
           ops::Const(root, Tensor(DT_FLOAT, {2})));
  CHECK(Place(g.nodes(), devices, {.allow_soft_placement = true}).ok());
  auto strict = Place(g.nodes(), devices, {.allow_soft_placement = true, .strict_placement = true});
  REQUIRE_FALSE(strict.ok());
  CHECK_THAT(strict.status().message(),
             Contains("{{node far}} was explicitly assigned to /device:FAKE_GPU:11"));
}

}  // namespace
}  // namespace pf::placer_test

namespace pf::placer_test {
namespace {

TEST_CASE("Ten CPUs and ten fake GPUs added out of order sort by priority, type, id", "[placer]") {
  DeviceSet devices = testing::FakeDeviceSet(10, 10);
  REQUIRE(devices.devices().size() == 20);
  CHECK(devices.devices()[0]->name() == kGpu0);
  CHECK(devices.devices()[9]->parsed_name().LocalName() == "FAKE_GPU:9");
  CHECK(devices.devices()[10]->name() == kCpu0);
  CHECK(devices.devices()[19]->parsed_name().LocalName() == "CPU:9");
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root, Tensor(DT_FLOAT, {2}));
  Output any_cpu = ops::Exp(root.WithDevice("/device:CPU:*"), c);
  Output gpu7 = ops::Neg(root.WithDevice("/device:FAKE_GPU:7"), ops::Neg(root, c));
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, any_cpu) == kCpu0);
  CHECK(Where(*p, gpu7) == "/job:localhost/replica:0/task:0/device:FAKE_GPU:7");
}

TEST_CASE("Assigned devices are kept; malformed node devices are errors", "[placer]") {
  DeviceSet devices = testing::FakeDeviceSet(2, 2);
  Graph g;
  Scope root = Scope::Root(&g);
  Output n = ops::Neg(root.WithOpName("n"), ops::Const(root, Tensor(DT_FLOAT, {2})));
  n.node->set_assigned_device(kGpu1);
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, n) == kGpu1);
  n.node->set_assigned_device("");
  n.node->set_requested_device("/foo:bar");
  auto bad = Place(g.nodes(), devices, {});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(),
             Contains("Malformed device specification '/foo:bar' in node 'n'"));
}

TEST_CASE("Reference colocation: a variable asked on a device its Assign cannot run on",
          "[placer]") {
  DeviceSet devices = testing::FakeDeviceSet(1, 1);
  Graph g;
  Scope root = Scope::Root(&g);
  // FAKE_GPU has Identity and Const kernels but no Variable or Assign kernel.
  Variable v = GetVariable(root.WithDevice("/device:FAKE_GPU:0"), "v", {2}, init::Zeros());
  auto strict = Place(g.nodes(), devices, {});
  REQUIRE_FALSE(strict.ok());
  CHECK_THAT(strict.status().message(),
             Contains("because no supported kernel for FAKE_GPU devices is available"));
  CHECK_THAT(strict.status().message(),
             Contains("Cannot assign a device for operation v: Could not satisfy explicit device "
                      "specification '/device:FAKE_GPU:0'"));
  CHECK_THAT(strict.status().message(), Contains("\nAssign: CPU\n"));
  CHECK_THAT(strict.status().message(), Contains("\n  v/Assign (Assign) /device:FAKE_GPU:0\n"));
  auto soft = Place(g.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE(soft.ok());
  CHECK(Where(*soft, v.ref()) == kCpu0);
  CHECK(Where(*soft, v.initializer().node) == kCpu0);
}

TEST_CASE("Explicit colocation with conflicting requests", "[placer]") {
  DeviceSet devices = testing::FakeDeviceSet(2, 0);
  Graph g;
  Scope root = Scope::Root(&g);
  Output a =
      ops::Neg(root.WithOpName("a").WithDevice("/cpu:0"), ops::Const(root, Tensor(DT_FLOAT, {2})));
  Output b = ops::Neg(root.WithOpName("b").ColocateWith(a), a);
  b.node->set_requested_device("/cpu:1");  // now the group asks for two devices
  auto strict = Place(g.nodes(), devices, {});
  REQUIRE_FALSE(strict.ok());
  CHECK_THAT(strict.status().message(),
             Contains("Cannot colocate nodes {{colocation_node b}} and {{colocation_node a}}: "));
  CHECK_THAT(strict.status().message(), Contains("Cannot merge devices with incompatible ids"));
  auto soft = Place(g.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE(soft.ok());
  CHECK(Where(*soft, a) == Where(*soft, b));
}

}  // namespace
}  // namespace pf::placer_test

namespace pf::placer_test {
namespace {

// TestMeasure reads only its input's shape (a metadata op by its OpDef flag); TestMeasureData
// is the same op without the flag. Both have CPU kernels only.
PF_REGISTER_OP(OpDef("TestMeasure")
                   .SetIsMetadata()
                   .Input("x", "float")
                   .Output("y", "int32")
                   .SetNotDifferentiable()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_OP(OpDef("TestMeasureData")
                   .Input("x", "float")
                   .Output("y", "int32")
                   .SetNotDifferentiable()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("TestMeasure", "CPU"), testing::FakeKernel);
PF_REGISTER_KERNEL(KernelDef("TestMeasureData", "CPU"), testing::FakeKernel);

TEST_CASE("A metadata op, by its OpDef flag, is placed with its input", "[placer]") {
  DeviceSet devices = FakeDeviceSet(2, 1);
  Graph g;
  Scope root = Scope::Root(&g);
  Output x =
      ops::Neg(root.WithOpName("x").WithDevice("/cpu:1"), ops::Const(root, Tensor(DT_FLOAT, {2})));
  Output measure = NodeBuilder(root.WithOpName("measure"), "TestMeasure").Input(x).Finalize();
  Output data = NodeBuilder(root.WithOpName("data"), "TestMeasureData").Input(x).Finalize();
  auto p = Place(g.nodes(), devices, {});
  REQUIRE(p.ok());
  CHECK(Where(*p, measure) == kCpu1);
  CHECK(Where(*p, data) == kCpu0);  // the best device with a kernel
}

using testing::LogCapture;

TEST_CASE("Placement errors and soft fallbacks follow the order of the nodes", "[placer]") {
  DeviceSet devices = FakeDeviceSet(1, 2);
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root.WithOpName("c"), Tensor(DT_FLOAT, {2}));
  // Three groups asking for GPUs that do not exist; "a_friend" joins the first group last.
  Output a = ops::Neg(root.WithOpName("a").WithDevice("/device:FAKE_GPU:11"), c);
  Output b = ops::Neg(root.WithOpName("b").WithDevice("/device:FAKE_GPU:12"), c);
  Output a_friend = ops::Neg(root.WithOpName("a_friend").ColocateWith(a), b);
  Output d = ops::Neg(root.WithOpName("d").WithDevice("/device:FAKE_GPU:13"), c);
  std::vector<Node*> forward = g.nodes();
  std::vector<Node*> backward(forward.rbegin(), forward.rend());

  auto strict = Place(forward, devices, {});
  REQUIRE_FALSE(strict.ok());
  CHECK_THAT(strict.status().message(), Contains("Cannot assign a device for operation a:"));
  auto strict_backward = Place(backward, devices, {});
  REQUIRE_FALSE(strict_backward.ok());
  CHECK_THAT(strict_backward.status().message(),
             Contains("Cannot assign a device for operation d:"));

  auto names = [](const std::vector<std::string>& lines) {
    std::vector<std::string> out;
    for (const std::string& line : lines) {
      const std::string prefix = "Soft placement: ";
      if (line.rfind(prefix, 0) == 0)
        out.push_back(line.substr(prefix.size(), line.find(' ', prefix.size()) - prefix.size()));
    }
    return out;
  };
  const std::vector<std::string> in_order = {"a", "b", "a_friend", "d"};
  const std::vector<std::string> reversed = {"d", "a_friend", "b", "a"};
  for (int repeat = 0; repeat < 3; ++repeat) {
    LogCapture log;
    auto soft = Place(forward, devices, {.allow_soft_placement = true});
    REQUIRE(soft.ok());
    CHECK(names(soft->fallbacks) == in_order);
    CHECK(names(log.Lines()) == in_order);
    CHECK(soft->fallbacks[2] ==
          "Soft placement: a_friend (Neg) requested '/device:FAKE_GPU:11', placed on " +
              std::string(kGpu0));
  }
  LogCapture log;
  auto soft_backward = Place(backward, devices, {.allow_soft_placement = true});
  REQUIRE(soft_backward.ok());
  CHECK(names(soft_backward->fallbacks) == reversed);
  CHECK(names(log.Lines()) == reversed);
}

}  // namespace
}  // namespace pf::placer_test
