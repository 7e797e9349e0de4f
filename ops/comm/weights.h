// Weights of tower results (WeightedMean, CollectiveAllReduce), shared by the CPU and GPU
// kernels: each tower counts in proportion to its examples.
#pragma once

#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace pf {

// w_i / sum(w); an error naming the weights when they are negative or sum to zero.
inline StatusOr<std::vector<double>> Normalise(const std::vector<double>& w) {
  double total = 0;
  for (double v : w) {
    if (!(v >= 0)) return errors::InvalidArgument("Weights must be non-negative, got ", v);
    total += v;
  }
  if (total <= 0) return errors::InvalidArgument("Weights sum to ", total, ": nothing to average");
  std::vector<double> scale;
  for (double v : w) scale.push_back(v / total);
  return scale;
}

// The float weight in `t` (host memory), or -1 when it is not a single value.
inline double WeightOf(const Tensor& t) {
  return t.num_elements() == 1 ? static_cast<double>(t.data<float>()[0]) : -1;
}

}  // namespace pf
