// Test helpers for clusters on loopback: pf-server child processes (tools/loopback.h), timing.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "placeflow/core/status.h"
#include "tools/loopback.h"

namespace pf::testing {

using pf::LoopbackCluster;

// A pf-server child process for task (job, task) of `cluster`; killed when destroyed.
class ServerProcess : public ChildProcess {
 public:
  ServerProcess(const std::string& cluster, const std::string& job, int task)
      : ChildProcess(PF_SERVER_BINARY,
                     {"--cluster", cluster, "--job", job, "--task", std::to_string(task)}) {}
};

inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace pf::testing
