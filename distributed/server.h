// Server: one task of a cluster (tf.distribute.Server). It binds the task's address from the
// cluster spec, creates the task's devices (/job:worker/replica:0/task:1/device:CPU:0, GPUs
// when present) and serves the worker service (graphs, steps, tensors for other tasks) and a
// master service that tells client sessions the cluster's devices.
//
//   pf::ClusterSpec cluster = pf::ClusterSpec::Parse("ps=localhost:2222;worker=localhost:2223")
//                                 .ValueOrThrow();
//   pf::Server server(cluster, "ps", 0);
//   server.Join();                                    // serve until Stop()
//   // elsewhere: pf::Session sess(graph, {.target = "grpc://localhost:2223"});
//
// Port 0 binds a free port (TF's tf.distribute.Server.create_local_server idiom): target() and
// cluster() then name the port bound.
//
//   pf::Server local(pf::ClusterSpec::Parse("localhost=localhost:0").ValueOrThrow(), "localhost",
//   0); pf::Session sess(graph, {.target = local.target()});   // "grpc://localhost:41233"
//
// A worker service runs any graph it is sent: an open port is remote code execution. Bind to a
// private address, set a cluster token, and use TLS across untrusted networks
// (docs/distributed.md).
#pragma once

#include <memory>
#include <string>

#include "placeflow/devices/device_set.h"
#include "placeflow/distributed/cluster_spec.h"
#include "placeflow/executor/session.h"

namespace pf {

struct ServerOptions {
  ClusterOptions cluster;  // token and TLS files (every task of a cluster uses the same)
  // Listen on every interface (0.0.0.0:port) instead of the host named in the cluster spec.
  bool bind_all_interfaces = false;
  int cpu_devices = 1;  // /device:CPU:0 .. CPU:n-1
};

class Server {
 public:
  // Starts serving at once. Throws pf::Error for a task not in the cluster, bad TLS files, or
  // an address that cannot be bound (a busy port), naming the address.
  Server(const ClusterSpec& cluster, const std::string& job, int task, ServerOptions options = {});
  ~Server();  // stops
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::string target() const;  // "grpc://host:port", the port bound when the spec said 0
  // The cluster this server serves: the spec it was given, with the port bound for its own task
  // when the spec said port 0 (what tasks and clients are told).
  const ClusterSpec& cluster() const;
  const std::string& task_name() const;  // "/job:ps/replica:0/task:0"
  const DeviceSet& devices() const;
  void Join();  // blocks until Stop()
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pf
