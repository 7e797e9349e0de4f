// Helpers shared by the tests: random tensors, naive references, tolerant comparison.
#pragma once

#include <placeflow/placeflow.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>

// Tests reach past the public API into the runtime.
#include "placeflow/core/logging.h"
#include "placeflow/core/thread_pool.h"
#include "placeflow/devices/device.h"
#include "placeflow/devices/device_manager.h"
#include "placeflow/devices/device_set.h"
#include "placeflow/devices/gpu_probe.h"
#include "placeflow/executor/executor.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/placer/placer.h"

namespace pf::testing {

inline Tensor RandomTensor(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DT_FLOAT, shape);
  for (float& v : t.flat<float>()) v = dist(rng);
  return t;
}

// 0, 1, 2, ... in a float tensor of shape `s`.
inline Tensor Iota(const Shape& s) {
  Tensor t(DT_FLOAT, s);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

// A float or double tensor holding `values` (reference results computed in double).
inline Tensor FromDoubles(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DT_DOUBLE) {
      t.data<double>()[i] = values[i];
    } else {
      t.data<float>()[i] = static_cast<float>(values[i]);
    }
  }
  return t;
}

inline Tensor RandomDoubleTensor(const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(DT_DOUBLE, shape);
  for (double& v : t.flat<double>()) v = dist(rng);
  return t;
}

// Largest absolute difference; tensors must have the same shape.
inline double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double x = a.dtype() == DT_DOUBLE ? a.data<double>()[i] : a.data<float>()[i];
    double y = b.dtype() == DT_DOUBLE ? b.data<double>()[i] : b.data<float>()[i];
    m = std::max(m, std::abs(x - y));
  }
  return m;
}

// Runs `fetch` with `feeds` on a fresh session over `g`.
inline Tensor RunOne(Graph& g, Output fetch, const FeedDict& feeds = {}) {
  Session sess(g);
  return sess.Run(feeds, {fetch})[0];
}

// GPU tests ([gpu]) report themselves skipped without a GPU: exit code 4 under ctest (the gpu
// label's SKIP_RETURN_CODE, with PF_GPU_TEST_SKIP_CODE set), a warning when run by hand. GPUs
// that exist but cannot be used (a driver older than the runtime) fail the test instead.
inline bool SkipWithoutGpu() {
  const GpuProbe& probe = ProbeGpus();
  if (!probe.status.ok()) FAIL(probe.status.message());
  if (probe.count > 0) return false;
  std::printf("SKIPPED: no GPU visible (CUDA build: %s)\n", BuiltWithCuda() ? "yes" : "no");
  std::fflush(stdout);
  if (std::getenv("PF_GPU_TEST_SKIP_CODE") != nullptr) std::exit(4);
  WARN("skipped: no GPU");
  return true;
}

// What `fn` writes to stdout (the placement log), captured through a temporary file.
inline std::string CaptureStdout(const std::function<void()>& fn) {
  std::fflush(stdout);
  char path[] = "/tmp/pf_stdout_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  int saved = dup(1);
  dup2(fd, 1);
  fn();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path);
  return text;
}

// A fresh directory under the system's temporary one, "pf_<name>_<pid>", removed with it.
// create = false leaves only the path, for code that must create the directory itself.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name, bool create = true)
      : path(std::filesystem::temp_directory_path() /
             ("pf_" + name + "_" + std::to_string(getpid()))) {
    std::filesystem::remove_all(path);
    if (create) std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Session options with the remapper on or off.
inline SessionOptions Remapping(bool on) {
  SessionOptions o;
  o.rewrite_options.remapping = on;
  return o;
}

// node name -> op, of every node one traced step ran.
inline std::map<std::string, std::string> TracedOps(Session& sess, const FeedDict& feeds,
                                                    const std::vector<Output>& fetches,
                                                    const std::vector<Operation>& targets = {}) {
  RunOptions ro;
  ro.trace = true;
  RunMetadata md;
  sess.Run(ro, feeds, fetches, targets, &md);
  std::map<std::string, std::string> ops;
  for (const NodeExecStats& s : md.step_stats) ops[s.node] = s.op;
  return ops;
}

}  // namespace pf::testing

#define PF_REQUIRE_GPU()                         \
  do {                                           \
    if (::pf::testing::SkipWithoutGpu()) return; \
  } while (0)
