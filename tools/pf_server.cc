// pf-server: runs one task of a cluster (a ps or a worker) until killed or interrupted.
//
//   pf-server --cluster "ps=localhost:2222;worker=localhost:2223,localhost:2224" --job ps --task 0
//   TF_CONFIG='{"cluster": {...}, "task": {"type": "worker", "index": 1}}' pf-server
//   pf-server ... --token-file secret --tls-ca ca.pem --tls-cert ps0.pem --tls-key ps0.key
//
// Prints "ready grpc://host:port" once it serves. Clients open a Session with that target.
#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "placeflow/distributed/server.h"

namespace {

[[noreturn]] void Usage(const std::string& error) {
  std::fprintf(stderr,
               "%s\nusage: pf-server [--cluster 'job=h:p,...;job=...' | --cluster-json FILE] "
               "[--job NAME --task N]\n"
               "                 [--token T | --token-file F] [--tls-ca F --tls-cert F "
               "--tls-key F]\n"
               "                 [--cpu-devices N] [--bind-all] [--connect-timeout S]\n"
               "Without --cluster, the cluster and task come from TF_CONFIG.\n",
               error.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  // gRPC receives a large tensor into buffers of several MiB; glibc would map each one fresh
  // (a page fault per 4 KiB, every message). Keep such blocks in the heap for reuse instead.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  std::map<std::string, std::string> flags;
  bool bind_all = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bind-all") {
      bind_all = true;
    } else if (a.rfind("--", 0) == 0 && i + 1 < argc) {
      flags[a] = argv[++i];
    } else {
      Usage("unknown or incomplete argument '" + a + "'");
    }
  }
  static const char* known[] = {"--cluster",     "--cluster-json",   "--job",
                                "--task",        "--token",          "--token-file",
                                "--tls-ca",      "--tls-cert",       "--tls-key",
                                "--cpu-devices", "--connect-timeout"};
  for (const auto& [k, v] : flags) {
    if (std::find(std::begin(known), std::end(known), k) == std::end(known))
      Usage("unknown flag " + k);
  }
  try {
    pf::ClusterSpec cluster;
    std::string job = flags.count("--job") ? flags["--job"] : "";
    int task = flags.count("--task") ? std::stoi(flags["--task"]) : 0;
    if (flags.count("--cluster")) {
      cluster = pf::ClusterSpec::Parse(flags["--cluster"]).ValueOrThrow();
    } else if (flags.count("--cluster-json")) {
      cluster = pf::ClusterSpec::FromJsonFile(flags["--cluster-json"]).ValueOrThrow();
    } else if (const char* tf_config = std::getenv("TF_CONFIG")) {
      pf::TfConfig c = pf::ParseTfConfig(tf_config).ValueOrThrow();
      cluster = c.cluster;
      if (job.empty()) {
        job = c.job;
        if (!flags.count("--task")) task = c.task;
      }
    } else {
      Usage("no cluster: pass --cluster, --cluster-json or set TF_CONFIG");
    }
    if (job.empty()) Usage("no task: pass --job and --task");
    pf::ServerOptions options;
    options.bind_all_interfaces = bind_all;
    options.cluster.token = flags["--token"];
    if (flags.count("--token-file")) {
      std::ifstream in(flags["--token-file"]);
      if (!in) Usage("cannot read " + flags["--token-file"]);
      std::getline(in, options.cluster.token);
    }
    options.cluster.tls_ca_file = flags["--tls-ca"];
    options.cluster.tls_cert_file = flags["--tls-cert"];
    options.cluster.tls_key_file = flags["--tls-key"];
    if (flags.count("--connect-timeout"))
      options.cluster.connect_timeout_s = std::stod(flags["--connect-timeout"]);
    if (flags.count("--cpu-devices")) options.cpu_devices = std::stoi(flags["--cpu-devices"]);
    pf::Server server(cluster, job, task, options);
    std::printf("ready %s %s\n", server.target().c_str(), server.task_name().c_str());
    std::fflush(stdout);
    // SIGINT/SIGTERM end the process; the OS closes the port.
    server.Join();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pf-server: %s\n", e.what());
    return 1;
  }
  return 0;
}
