// ClusterSpec: the tasks of a cluster, job name -> one "host:port" per task (tf.train.ClusterSpec).
//
//   pf::ClusterSpec cluster = pf::ClusterSpec::Parse("ps=localhost:2222;worker=localhost:2223,"
//                                                   "localhost:2224").ValueOrThrow();
//   cluster.TaskAddress("worker", 1).ValueOrThrow();   // "localhost:2224"
//   pf::TfConfig c = pf::ParseTfConfig(std::getenv("TF_CONFIG")).ValueOrThrow();
//   // {"cluster": {"ps": ["h:p"], "worker": ["h:p", "h:p"]}, "task": {"type": "worker", "index":
//   1}}
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "placeflow/core/status.h"

namespace pf {

class ClusterSpec {
 public:
  using Jobs = std::map<std::string, std::vector<std::string>>;
  ClusterSpec() = default;
  // Throws pf::Error on a bad job name or address (see Validate).
  explicit ClusterSpec(Jobs jobs);

  // "ps=h:p,h:p;worker=h:p,..." (jobs separated by ';', tasks by ',').
  static StatusOr<ClusterSpec> Parse(std::string_view text);
  // A JSON object of jobs ({"ps": ["h:p"], ...}), or a TF_CONFIG object with a "cluster" field.
  static StatusOr<ClusterSpec> FromJson(std::string_view json);
  static StatusOr<ClusterSpec> FromJsonFile(const std::string& path);

  const Jobs& jobs() const { return jobs_; }
  bool empty() const { return jobs_.empty(); }
  int num_tasks(const std::string& job) const;
  // Errors name the cluster's jobs and task counts.
  StatusOr<std::string> TaskAddress(const std::string& job, int task) const;
  // "/job:J/replica:0/task:T" for every task, in job then task order.
  std::vector<std::string> TaskNames() const;
  std::string ToString() const;  // the Parse format
  bool operator==(const ClusterSpec& o) const { return jobs_ == o.jobs_; }

 private:
  static Status Validate(const Jobs& jobs);
  Jobs jobs_;
};

// TF_CONFIG: the cluster and which task this process is ("task": {"type", "index"}).
struct TfConfig {
  ClusterSpec cluster;
  std::string job;  // empty when the JSON has no "task"
  int task = 0;
};
StatusOr<TfConfig> ParseTfConfig(std::string_view json);

}  // namespace pf
