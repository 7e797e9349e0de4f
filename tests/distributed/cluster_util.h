// Test helpers for clusters on loopback: free ports, pf-server child processes.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "placeflow/core/status.h"
#include "tools/loopback.h"

extern char** environ;

namespace pf::testing {

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

// A pf-server child process; killed (SIGKILL) when destroyed.
class ServerProcess {
 public:
  ServerProcess(const std::string& cluster, const std::string& job, int task,
                std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {PF_SERVER_BINARY, "--cluster",         cluster, "--job", job,
                                     "--task",         std::to_string(task)};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, PF_SERVER_BINARY, nullptr, nullptr, argv.data(), environ) != 0)
      pid_ = -1;
  }
  ~ServerProcess() { Kill(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace pf::testing
