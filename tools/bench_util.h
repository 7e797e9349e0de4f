// Helpers shared by pf-bench's figures: medians of repeated timings, CPU-only session options.
#pragma once

#include <placeflow/placeflow.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace pf::bench {

inline pf::SessionOptions OnDevice(bool gpu) {
  pf::SessionOptions o;
  if (!gpu) o.device_count["GPU"] = 0;
  o.allow_soft_placement = true;
  return o;
}

constexpr int kRepeats = 5;

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median over kRepeats of the seconds one call of `fn` takes.
inline double TimeMedian(const std::function<void()>& fn) {
  std::vector<double> t;
  for (int r = 0; r < kRepeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return Median(t);
}

}  // namespace pf::bench
