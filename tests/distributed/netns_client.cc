// pf_netns_client: the client half of tests/distributed/netns_test.sh. Against a two-task
// cluster (worker:0, worker:1) it runs a step whose input lives on task 0 and whose op runs on
// task 1, so every step moves a tensor between the tasks, checks the answer and prints the
// median step time:
//
//   pf_netns_client grpc://10.213.77.1:2222
//   -> result 999000 (want 999000)
//      median_step_ms 0.812
//
// Exits 0 on success, 1 on a wrong result or any error (printed), 2 on bad usage.
#include <placeflow/placeflow.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr int kSize = 1000;
constexpr int kSteps = 20;

// Placement must put the constant and the consumer on different tasks, or the step would not
// cross the link the test is about.
bool OnTask(const std::map<std::string, std::string>& where, const std::string& node,
            const std::string& task) {
  auto it = where.find(node);
  if (it == where.end()) {
    std::fprintf(stderr, "node %s has no placement\n", node.c_str());
    return false;
  }
  if (it->second.find(task) == std::string::npos) {
    std::fprintf(stderr, "node %s is on %s, want %s\n", node.c_str(), it->second.c_str(),
                 task.c_str());
    return false;
  }
  return true;
}

int Run(const std::string& target) {
  // Integers 0..999: every partial sum of 2*x is an integer below 2^24, so the float result is
  // exact whatever order the kernel adds in.
  std::vector<float> values(kSize);
  double want = 0;
  for (int i = 0; i < kSize; ++i) {
    values[i] = static_cast<float>(i);
    want += 2.0 * i;
  }

  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  pf::Scope t0 = root.WithDevice("/job:worker/task:0");
  pf::Scope t1 = root.WithDevice("/job:worker/task:1");
  pf::Output x = pf::ops::Const(t0.WithOpName("x"), values, {kSize});
  pf::Output doubled =
      pf::ops::Mul(t1.WithOpName("doubled"), x, pf::ops::Const(t1.WithOpName("two"), 2.0f));
  pf::Output total = pf::ops::Sum(t1.WithOpName("total"), doubled);

  pf::SessionOptions o;
  o.target = target;
  o.cluster.connect_timeout_s = 20;  // the servers may still be starting
  pf::Session sess(g, o);

  // The first step also sends the graph to both tasks; it is not timed.
  std::vector<pf::Tensor> out = sess.Run({total});
  auto where = sess.DevicePlacement();
  if (!OnTask(where, "x", "/task:0") || !OnTask(where, "doubled", "/task:1")) return 1;

  std::vector<double> ms;
  for (int step = 0; step < kSteps; ++step) {
    auto t_start = std::chrono::steady_clock::now();
    out = sess.Run({total});
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start)
            .count());
    float got = out.at(0).scalar<float>();
    if (got != static_cast<float>(want)) {
      std::fprintf(stderr, "step %d: result %.1f, want %.1f\n", step, got, want);
      return 1;
    }
  }
  std::sort(ms.begin(), ms.end());
  double median = (ms[kSteps / 2 - 1] + ms[kSteps / 2]) / 2;
  std::printf("result %.0f (want %.0f)\n", out.at(0).scalar<float>(), want);
  std::printf("min_step_ms %.3f\n", ms.front());
  std::printf("median_step_ms %.3f\n", median);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]).rfind("grpc://", 0) != 0) {
    std::fprintf(stderr, "usage: pf_netns_client grpc://HOST:PORT\n");
    return 2;
  }
  try {
    return Run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pf_netns_client: %s\n", e.what());
    return 1;
  }
}
