// Resources stay bounded: sessions give back their threads, files and memory, and a training
// loop's Run calls do not grow the process. Memory is read from /proc/self/status (VmRSS).
#include <dirent.h>

#include <fstream>
#include <string>

#include "tests/testing/test_util.h"

namespace pf::resources_test {
namespace {

// A field of /proc/self/status in its unit (kB for VmRSS), -1 when absent.
int64_t ProcStatus(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

int OpenFiles() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

// A small training graph: a variable, a loss, a gradient step.
struct Model {
  Graph g;
  Output x, loss;
  Operation step, init;
  Model() {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 8});
    Variable w = GetVariable(root, "w", {8, 4});
    loss = ops::Mean(root, ops::Square(root, ops::MatMul(root, x, w.value())));
    step = train::GradientDescent(0.01).Minimize(root, loss);
    init = GlobalVariablesInitializer(root);
  }
};

TEST_CASE("1,000 sessions leave no threads, files or memory behind", "[executor][resources]") {
  Model m;
  Tensor batch = testing::RandomTensor({16, 8}, 1);
  auto one = [&](int threads) {
    SessionOptions o;
    o.num_threads = threads;  // 0: the shared pool; 2: a pool of the session's own
    Session sess(m.g, o);
    sess.Run({}, {}, {m.init});
    sess.Run({{m.x, batch}}, {m.loss}, {m.step});
  };
  for (int i = 0; i < 50; ++i) one(i % 2 * 2);  // warm up: caches, the shared pool
  const int64_t threads = ProcStatus("Threads"), rss = ProcStatus("VmRSS");
  const int files = OpenFiles();
  for (int i = 0; i < 1000; ++i) one(i % 2 * 2);
  CHECK(ProcStatus("Threads") == threads);
  CHECK(OpenFiles() == files);
  const int64_t grown = ProcStatus("VmRSS") - rss;
  INFO("RSS grew by " << grown << " kB over 1,000 sessions");
  CHECK(grown < 16 * 1024);
}

TEST_CASE("10,000 Run calls do not grow the process", "[executor][resources]") {
  Model m;
  Session sess(m.g);
  sess.Run({}, {}, {m.init});
  Tensor batch = testing::RandomTensor({16, 8}, 2);
  for (int i = 0; i < 500; ++i) sess.Run({{m.x, batch}}, {m.loss}, {m.step});
  const int64_t rss = ProcStatus("VmRSS");
  for (int i = 0; i < 10000; ++i) sess.Run({{m.x, batch}}, {m.loss}, {m.step});
  const int64_t grown = ProcStatus("VmRSS") - rss;
  INFO("RSS grew by " << grown << " kB over 10,000 steps");
  CHECK(grown < 4 * 1024);
  CHECK(sess.num_cached_signatures() == 2);  // init and the step
}

}  // namespace
}  // namespace pf::resources_test
