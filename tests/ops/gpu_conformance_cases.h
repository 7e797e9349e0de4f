// The op-conformance cases: each op with its inputs (dtype, shape, value range), the graph to
// build on the target device, whether its gradient is compared too, and the tolerance; and the
// optimizer cases. tests/ops/gpu_conformance_test.cc holds the harness that runs them on a GPU
// (and on a second CPU device in every build) against the CPU.
//
//   for (const conformance::Case& c : conformance::OpCases()) RunOpCase(c, target, &seed, &r);
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "placeflow/ops/grad_util.h"
#include "tests/testing/test_util.h"

namespace pf::conformance {

struct InputSpec {
  DType dtype;
  Shape shape;
  double lo = -1, hi = 1;  // integers: [lo, hi)
};
using BuildFn = std::function<std::vector<Output>(const Scope&, const std::vector<Output>&)>;
struct Case {
  std::string name;
  std::vector<InputSpec> inputs;
  BuildFn build;
  bool grad = true;   // also compare d(weighted sum of float outputs)/d(float inputs)
  double tol = 1e-5;  // float32; double cases use the same bound
};

// Every op case, in a fixed order (the harness seeds each case's inputs by its position).
std::vector<Case> OpCases();

// Optimizers and variables: a few updates of a [40, 30] variable towards a target.
struct TrainCase {
  std::string name;
  std::function<std::unique_ptr<train::Optimizer>()> make;
};
std::vector<TrainCase> TrainCases();

}  // namespace pf::conformance
