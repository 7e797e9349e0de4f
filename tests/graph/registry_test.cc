// DESIGN rule 1 over every op the library registers: each has a CPU kernel, and a gradient
// function or an explicit "no gradient" (OpDef::SetNotDifferentiable). A failure names the ops.
#include <set>

#include "tests/testing/test_util.h"

namespace pf {
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

// Backward ops, built only by gradient functions; second-order gradients are not supported.
// SetNotDifferentiable would be wrong for them (a second derivative would silently be zero
// instead of failing with "No gradient defined for op"), and OpDef has no way yet to say
// "no gradient on purpose", so they are listed here.
const std::set<std::string> kBackwardOps = {
    "SumToShape",  "ReduceGrad", "SliceGrad",   "ConcatGrad", "GatherGrad",
    "BiasAddGrad", "ReluGrad",   "SigmoidGrad", "TanhGrad",   "MeanSquaredErrorGrad"};

TEST_CASE("Registry: the library's ops are all seen", "[graph][registry]") {
  const std::vector<std::string> ops = LibraryOps();
  // Registrars in the shared library ran before main: the core ops of every family are there.
  for (const char* op : {"MatMul", "Add", "Relu", "Sum", "Variable", "Assign", "_Send", "_Recv",
                         "ApplyGradientDescent", "CollectiveAllReduce"}) {
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

TEST_CASE("Registry: every op has a gradient or is declared not differentiable",
          "[graph][registry]") {
  std::vector<std::string> no_gradient_declared;
  for (const std::string& op : LibraryOps()) {
    const OpDef* def = OpRegistry::Global()->Find(op);
    if (!def->differentiable() || def->grad_fn() || kBackwardOps.count(op)) continue;
    no_gradient_declared.push_back(op);
  }
  CHECK(no_gradient_declared == std::vector<std::string>{});
  // The exceptions stay true: each backward op exists and still has no gradient (give one a
  // gradient and it leaves the list).
  for (const std::string& op : kBackwardOps) {
    INFO(op);
    const OpDef* def = OpRegistry::Global()->Find(op);
    REQUIRE(def != nullptr);
    CHECK(def->differentiable());
    CHECK_FALSE(def->grad_fn());
  }
}

}  // namespace
}  // namespace pf
