#include "tools/cluster_train.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "placeflow/core/strings.h"
#include "placeflow/distributed/server.h"
#include "placeflow/train/replica_device_setter.h"
#include "placeflow/train/session_manager.h"
#include "placeflow/train/variables.h"
#include "tools/loopback.h"

extern char** environ;

namespace pf::cluster {
namespace {

std::string JoinHosts(const std::vector<std::string>& hosts) {
  std::string s;
  for (const std::string& h : hosts) s += (s.empty() ? "" : ",") + h;
  return s;
}

ClusterSpec SpecOf(const TaskFlags& f) {
  if (f.ps_hosts.empty() || f.worker_hosts.empty())
    throw Error(errors::InvalidArgument("--job-name needs --ps-hosts and --worker-hosts"));
  if (f.job_name != "ps" && f.job_name != "worker")
    throw Error(errors::InvalidArgument("--job-name must be ps or worker, got '", f.job_name, "'"));
  return ClusterSpec::Parse("ps=" + f.ps_hosts + ";worker=" + f.worker_hosts).ValueOrThrow();
}

}  // namespace

Task::Task(const TaskFlags& flags) : flags_(flags) {
  ClusterSpec spec = SpecOf(flags);
  num_ps_ = spec.num_tasks("ps");
  num_workers_ = spec.num_tasks("worker");
  server_ = std::make_unique<Server>(spec, flags.job_name, flags.task_index);
  std::printf("%s %s serving at %s\n", is_chief() ? "chief" : "task", server_->task_name().c_str(),
              server_->target().c_str());
  std::fflush(stdout);
}

Task::~Task() = default;

std::string Task::target() const { return server_->target(); }

Scope Task::Place(const Scope& root) const {
  train::ReplicaDeviceSetter setter(num_ps_, "/job:worker/task:" + std::to_string(index()));
  return setter.Apply(root);
}

int Task::Serve() {
  server_->Join();
  return 0;
}

namespace {

// pf-train's progress lines go to stdout.
void PrintLine(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

// The waits are the library's (train/session_manager.h); pf-train prints their progress lines.
void Task::WaitForChief(Session& sess, Graph& g, double timeout_s) const {
  ThrowIfError(train::WaitForChief(sess, &g, index(), timeout_s, PrintLine));
}

bool Task::RecoverStep(Session& sess, Graph& g, const Error& error,
                       const std::function<void()>& restore, double timeout_s) const {
  if (!train::IsRecoverableError(error.status())) return false;
  PrintLine("step failed: " + FirstLine(error.status().message()));
  train::WaitOptions w;
  w.timeout_s = timeout_s;
  w.waiting_for = "the ps tasks";
  if (is_chief()) w.restore = restore;
  w.log = PrintLine;
  return train::WaitForVariables(sess, &g, w).ok();
}

namespace {

std::vector<pid_t>* g_children = nullptr;

void StopChildren(int) {
  if (g_children == nullptr) return;
  for (pid_t p : *g_children) {
    if (p > 0) ::kill(p, SIGTERM);  // reaped children are marked <= 0
  }
}

// Copies a child's output to ours, each line prefixed with its task.
void Relay(int fd, std::string prefix, std::mutex* out_mu) {
  std::string pending;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
    pending.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::lock_guard<std::mutex> lock(*out_mu);
      std::printf("[%s] %s\n", prefix.c_str(), pending.substr(0, nl).c_str());
      std::fflush(stdout);
      pending.erase(0, nl + 1);
    }
  }
  if (!pending.empty()) {
    std::lock_guard<std::mutex> lock(*out_mu);
    std::printf("[%s] %s\n", prefix.c_str(), pending.c_str());
  }
  ::close(fd);
}

// "ps=1,worker=2" -> {ps: 1, worker: 2}; unnamed jobs keep one ps and two workers. Empty for a
// bad spec.
std::map<std::string, int> ParseClusterSpec(const std::string& spec) {
  std::map<std::string, int> counts = {{"ps", 1}, {"worker", 2}};
  for (size_t start = 0; start < spec.size();) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string part = spec.substr(start, end - start);
    const size_t eq = part.find('=');
    int n = eq == std::string::npos ? -1 : std::atoi(part.c_str() + eq + 1);
    if (n < 1 || !counts.count(part.substr(0, eq))) return {};
    counts[part.substr(0, eq)] = n;
    start = end + 1;
  }
  return counts;
}

// This program's arguments without --local-cluster (each task would start a cluster).
std::vector<std::string> ArgsWithoutLocalCluster(int argc, char** argv) {
  std::vector<std::string> base;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--local-cluster") {
      ++i;
      continue;
    }
    if (arg.rfind("--local-cluster=", 0) == 0) continue;
    base.push_back(argv[i]);
  }
  return base;
}

// Starts this program with `args`, its stdout and stderr into a pipe; -1 when it cannot.
pid_t SpawnTask(std::vector<std::string> args, int* read_fd) {
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  int pipe_fd[2];
  if (::pipe(pipe_fd) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fd[0]);
  pid_t pid;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fd[1]);
  if (rc != 0) {
    ::close(pipe_fd[0]);
    return -1;
  }
  *read_fd = pipe_fd[0];
  return pid;
}

struct LocalCluster {
  std::vector<pid_t> children;  // reaped ones are marked <= 0
  std::vector<std::string> names;
  std::vector<std::thread> relays;
  std::mutex out_mu;
};

// Workers end on their own; ps tasks serve until stopped. The first failing worker's exit code,
// or 0.
int WaitForWorkers(LocalCluster& c) {
  int result = 0;
  for (size_t i = 0; i < c.children.size(); ++i) {
    if (c.names[i].rfind("worker", 0) != 0) continue;
    int status = 0;
    ::waitpid(c.children[i], &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && result == 0) result = code;
    c.children[i] = -c.children[i];
  }
  for (pid_t& p : c.children) {
    if (p <= 0) continue;
    ::kill(p, SIGTERM);
    ::waitpid(p, nullptr, 0);
  }
  for (std::thread& t : c.relays) t.join();
  return result;
}

}  // namespace

bool ClusterAvailable() { return true; }

std::unique_ptr<ClusterRole> JoinCluster(const TaskFlags& flags) {
  return std::make_unique<Task>(flags);
}

int RunLocalCluster(const std::string& spec, int argc, char** argv) {
  std::map<std::string, int> counts = ParseClusterSpec(spec);
  if (counts.empty()) {
    std::fprintf(stderr, "pf-train: --local-cluster wants ps=N,worker=M (N, M >= 1), got '%s'\n",
                 spec.c_str());
    return 2;
  }
  std::map<std::string, std::vector<std::string>> hosts;
  for (const auto& [job, n] : counts) {
    for (int i = 0; i < n; ++i)
      hosts[job].push_back("127.0.0.1:" + std::to_string(FreeLoopbackPort()));
  }
  const std::vector<std::string> base = ArgsWithoutLocalCluster(argc, argv);
  LocalCluster c;
  g_children = &c.children;
  ::signal(SIGINT, StopChildren);
  ::signal(SIGTERM, StopChildren);
  for (const std::string job : {"ps", "worker"}) {
    for (int i = 0; i < counts[job]; ++i) {
      std::vector<std::string> args = base;
      args.insert(args.end(),
                  {"--job-name", job, "--task-index", std::to_string(i), "--ps-hosts",
                   JoinHosts(hosts["ps"]), "--worker-hosts", JoinHosts(hosts["worker"])});
      int read_fd = -1;
      const pid_t pid = SpawnTask(std::move(args), &read_fd);
      if (pid < 0) {
        StopChildren(0);
        WaitForWorkers(c);  // reaps the tasks started and joins their relays
        g_children = nullptr;
        return 1;
      }
      c.children.push_back(pid);
      c.names.push_back(job + ":" + std::to_string(i));
      c.relays.emplace_back(Relay, read_fd, c.names.back(), &c.out_mu);
    }
  }
  const int result = WaitForWorkers(c);
  g_children = nullptr;
  std::printf("local cluster: %d ps, %d workers, exit %d\n", counts["ps"], counts["worker"],
              result);
  return result;
}

}  // namespace pf::cluster
