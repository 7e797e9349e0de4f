#include "placeflow/distributed/cluster_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <sstream>

namespace pf {
namespace {

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? s.npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\n");
  return std::string(s.substr(b, e - b + 1));
}

Status CheckAddress(const std::string& job, size_t task, const std::string& address) {
  // host:port, host may be a bracketed IPv6 literal.
  size_t colon = address.rfind(':');
  bool ok = colon != std::string::npos && colon > 0 && colon + 1 < address.size();
  if (ok) {
    for (size_t i = colon + 1; i < address.size(); ++i) ok = ok && std::isdigit(address[i]);
    ok = ok && std::stol(address.substr(colon + 1)) < 65536;
  }
  if (!ok) {
    return errors::InvalidArgument("Task ", task, " of job '", job, "' has address '", address,
                                   "': expected host:port");
  }
  return Status::OK();
}

StatusOr<ClusterSpec> FromStruct(const google::protobuf::Struct& jobs) {
  ClusterSpec::Jobs out;
  for (const auto& [job, value] : jobs.fields()) {
    if (!value.has_list_value()) {
      return errors::InvalidArgument("Cluster JSON: job '", job,
                                     "' must be a list of \"host:port\" strings");
    }
    for (const auto& task : value.list_value().values()) {
      if (!task.has_string_value()) {
        return errors::InvalidArgument("Cluster JSON: job '", job,
                                       "' must be a list of \"host:port\" strings");
      }
      out[job].push_back(task.string_value());
    }
  }
  try {
    return ClusterSpec(std::move(out));
  } catch (const Error& e) {
    return e.status();
  }
}

StatusOr<google::protobuf::Struct> ParseJsonObject(std::string_view json) {
  google::protobuf::Struct s;
  auto st = google::protobuf::util::JsonStringToMessage(std::string(json), &s);
  if (!st.ok()) {
    return errors::InvalidArgument("Cluster JSON does not parse: ", std::string(st.message()));
  }
  return s;
}

}  // namespace

ClusterSpec::ClusterSpec(Jobs jobs) : jobs_(std::move(jobs)) { ThrowIfError(Validate(jobs_)); }

Status ClusterSpec::Validate(const Jobs& jobs) {
  for (const auto& [job, tasks] : jobs) {
    bool name_ok = !job.empty() && std::isalpha(job[0]);
    for (char c : job) name_ok = name_ok && (std::isalnum(c) || c == '_');
    if (!name_ok) {
      return errors::InvalidArgument("Job name '", job,
                                     "' must start with a letter and hold only letters, digits "
                                     "and '_'");
    }
    if (tasks.empty()) return errors::InvalidArgument("Job '", job, "' has no tasks");
    for (size_t i = 0; i < tasks.size(); ++i) PF_RETURN_IF_ERROR(CheckAddress(job, i, tasks[i]));
  }
  return Status::OK();
}

StatusOr<ClusterSpec> ClusterSpec::Parse(std::string_view text) {
  Jobs jobs;
  for (const std::string& part : Split(text, ';')) {
    std::string job_text = Trim(part);
    if (job_text.empty()) continue;
    size_t eq = job_text.find('=');
    if (eq == std::string::npos) {
      return errors::InvalidArgument("Cluster spec '", text, "': '", job_text,
                                     "' should be job=host:port[,host:port...]");
    }
    std::string job = Trim(job_text.substr(0, eq));
    if (jobs.count(job)) {
      return errors::InvalidArgument("Cluster spec '", text, "' names job '", job, "' twice");
    }
    for (const std::string& a : Split(job_text.substr(eq + 1), ',')) jobs[job].push_back(Trim(a));
  }
  PF_RETURN_IF_ERROR(Validate(jobs));
  ClusterSpec spec;
  spec.jobs_ = std::move(jobs);
  return spec;
}

StatusOr<ClusterSpec> ClusterSpec::FromJson(std::string_view json) {
  PF_ASSIGN_OR_RETURN(google::protobuf::Struct s, ParseJsonObject(json));
  auto it = s.fields().find("cluster");
  if (it != s.fields().end()) {
    if (!it->second.has_struct_value())
      return errors::InvalidArgument("TF_CONFIG: \"cluster\" must be an object of jobs");
    return FromStruct(it->second.struct_value());
  }
  return FromStruct(s);
}

StatusOr<ClusterSpec> ClusterSpec::FromJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return errors::NotFound("Cannot open cluster file '", path, "'");
  std::stringstream text;
  text << in.rdbuf();
  auto spec = FromJson(text.str());
  if (!spec.ok()) return spec.status().WithSuffix(fmt::format(" (in '{}')", path));
  return spec;
}

int ClusterSpec::num_tasks(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

StatusOr<std::string> ClusterSpec::TaskAddress(const std::string& job, int task) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || task < 0 || task >= static_cast<int>(it->second.size())) {
    return errors::InvalidArgument("Task /job:", job, "/task:", task, " is not in the cluster (",
                                   ToString(), ")");
  }
  return it->second[task];
}

std::vector<std::string> ClusterSpec::TaskNames() const {
  std::vector<std::string> names;
  for (const auto& [job, tasks] : jobs_) {
    for (size_t i = 0; i < tasks.size(); ++i)
      names.push_back(fmt::format("/job:{}/replica:0/task:{}", job, i));
  }
  return names;
}

std::string ClusterSpec::ToString() const {
  std::vector<std::string> parts;
  for (const auto& [job, tasks] : jobs_)
    parts.push_back(fmt::format("{}={}", job, fmt::join(tasks, ",")));
  return fmt::format("{}", fmt::join(parts, ";"));
}

StatusOr<TfConfig> ParseTfConfig(std::string_view json) {
  TfConfig config;
  PF_ASSIGN_OR_RETURN(config.cluster, ClusterSpec::FromJson(json));
  PF_ASSIGN_OR_RETURN(google::protobuf::Struct s, ParseJsonObject(json));
  auto it = s.fields().find("task");
  if (it == s.fields().end()) return config;
  const auto& task = it->second.struct_value().fields();
  auto type = task.find("type");
  auto index = task.find("index");
  if (type == task.end() || !type->second.has_string_value()) {
    return errors::InvalidArgument("TF_CONFIG: \"task\" needs a string \"type\" (the job name)");
  }
  config.job = type->second.string_value();
  if (index != task.end()) config.task = static_cast<int>(index->second.number_value());
  PF_RETURN_IF_ERROR(config.cluster.TaskAddress(config.job, config.task).status());
  return config;
}

}  // namespace pf
