// Design rule 1 (docs/design_rules.md) over every op the library registers: each has a CPU kernel,
// and a gradient function or an explicit "no gradient" (OpDef::SetNotDifferentiable or
// SetNoGradient). A failure names the ops.
#include <set>

#include "tests/testing/test_util.h"

namespace pf::registry_test {
namespace {

// Ops the library registers. Test files register their own ops ("Test..."), some of them
// deliberately without a CPU kernel or a gradient.
std::vector<std::string> LibraryOps() {
  std::vector<std::string> ops;
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    if (op.rfind("Test", 0) != 0) ops.push_back(op);
  }
  return ops;
}

TEST_CASE("Registry: the library's ops are all seen", "[graph][registry]") {
  const std::vector<std::string> ops = LibraryOps();
  // Registrars in the shared library ran before main: the core ops of every family are there.
  for (const char* op : {"Add",
                         "AddN",
                         "ArgMax",
                         "Assign",
                         "AssignAdd",
                         "AssignSub",
                         "BiasAdd",
                         "Cast",
                         "Concat",
                         "Const",
                         "Div",
                         "Equal",
                         "Exp",
                         "ExpandDims",
                         "Fill",
                         "Gather",
                         "Greater",
                         "Identity",
                         "Less",
                         "Log",
                         "LogSoftmax",
                         "MatMul",
                         "Max",
                         "Maximum",
                         "Mean",
                         "Min",
                         "Minimum",
                         "Mul",
                         "Neg",
                         "NoOp",
                         "OneHot",
                         "OnesLike",
                         "Placeholder",
                         "Pow",
                         "RandomNormal",
                         "RandomUniform",
                         "Relu",
                         "Reshape",
                         "Rsqrt",
                         "Shape",
                         "Sigmoid",
                         "Slice",
                         "Softmax",
                         "Split",
                         "Sqrt",
                         "Square",
                         "Squeeze",
                         "StopGradient",
                         "Sub",
                         "Sum",
                         "Tanh",
                         "Transpose",
                         "TruncatedNormal",
                         "Variable",
                         "ZerosLike"}) {
    INFO(op);
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
  }
}

TEST_CASE("Registry: every op has a CPU kernel", "[graph][registry]") {
  std::vector<std::string> without_cpu_kernel;
  for (const std::string& op : LibraryOps()) {
    bool cpu = false;
    for (const KernelDef* k : KernelRegistry::Global()->KernelsForOp(op))
      cpu = cpu || k->device_type() == "CPU";
    if (!cpu) without_cpu_kernel.push_back(op);
  }
  CHECK(without_cpu_kernel == std::vector<std::string>{});
}

TEST_CASE("Registry: every op has a gradient, or says it has none on purpose",
          "[graph][registry]") {
  std::vector<std::string> undeclared, contradictory;
  for (const std::string& op : LibraryOps()) {
    const OpDef* def = OpRegistry::Global()->Find(op);
    const int declared =
        (def->grad_fn() ? 1 : 0) + (def->differentiable() ? 0 : 1) + (def->no_gradient() ? 1 : 0);
    if (declared == 0) undeclared.push_back(op);
    if (declared > 1) contradictory.push_back(op);
  }
  CHECK(undeclared == std::vector<std::string>{});
  CHECK(contradictory == std::vector<std::string>{});
  // The backward ops say "no gradient": a second derivative fails instead of being zero.
  for (const char* op : {"ReluGrad", "SumToShape", "BiasAddGrad", "MeanSquaredErrorGrad"}) {
    INFO(op);
    CHECK(OpRegistry::Global()->Find(op)->no_gradient());
  }
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {2});
  Output dx = Gradients(root, {ops::Sum(root, ops::Relu(root, x))}, {x})[0];
  CHECK_THROWS_WITH(Gradients(root, {ops::Sum(root, dx)}, {x}),
                    Catch::Matchers::Contains("No gradient defined for op: ReluGrad"));
}

}  // namespace
}  // namespace pf::registry_test
