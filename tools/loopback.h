// Local clusters on the loopback interface (pf-train --local-cluster, pf-bench's cluster
// figures, the cluster tests): free ports, the cluster spec of a set of jobs, and child
// processes that are killed with their owner.
//
//   std::vector<std::string> addresses;
//   std::string spec = pf::LoopbackCluster({{"ps", 1}, {"worker", 2}}, &addresses);
//   pf::ChildProcess ps("build/tools/pf-server", {"--cluster", spec, "--job", "ps", "--task",
//   "0"});
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "placeflow/train/free_port.h"

extern char** environ;

namespace pf {

// The free-port helper lives in the library (placeflow/train/free_port.h).
using train::FreeLoopbackPort;

// "ps=127.0.0.1:P;worker=127.0.0.1:P,127.0.0.1:P" with a free port per task; `addresses` (if
// given) gets every task's address, in the order of `jobs` then tasks.
inline std::string LoopbackCluster(const std::vector<std::pair<std::string, int>>& jobs,
                                   std::vector<std::string>* addresses = nullptr) {
  std::string spec;
  for (const auto& [job, n] : jobs) {
    spec += (spec.empty() ? "" : ";") + job + "=";
    for (int i = 0; i < n; ++i) {
      std::string a = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
      if (addresses) addresses->push_back(a);
      spec += (i ? "," : "") + a;
    }
  }
  return spec;
}

// `program` run with `args`; killed (SIGKILL) and reaped by Kill() or the destructor.
class ChildProcess {
 public:
  ChildProcess(const std::string& program, std::vector<std::string> args) {
    args.insert(args.begin(), program);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, program.c_str(), nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  ~ChildProcess() { Kill(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

}  // namespace pf
