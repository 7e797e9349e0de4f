#include "placeflow/train/session_manager.h"

#include <chrono>
#include <thread>
#include <vector>

#include "placeflow/core/logging.h"
#include "placeflow/core/strings.h"
#include "placeflow/train/variables.h"

namespace pf::train {
namespace {

// Reads every variable of `graph`: OK once the ps tasks answer and hold initialised values.
Status ProbeVariables(Session& session, Graph* graph) {
  std::vector<Output> values;
  for (const Variable& v : GlobalVariables(graph)) values.push_back(v.value());
  std::vector<Tensor> out;
  return session.TryRun({}, values, {}, &out);
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

bool IsTaskComingBack(const Status& s) {
  return s.code() == Code::kUnavailable || s.code() == Code::kAborted ||
         s.code() == Code::kCancelled || s.code() == Code::kDeadlineExceeded || IsTaskRestart(s);
}

bool IsRecoverableError(const Status& s) {
  return IsTaskComingBack(s) || IsUninitializedVariable(s);
}

Status WaitForVariables(Session& session, Graph* graph, const WaitOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  std::string last;
  while (true) {
    Status s = ProbeVariables(session, graph);
    if (s.ok() || !IsRecoverableError(s)) return s;
    if (SecondsSince(start) > o.timeout_s)
      return errors::DeadlineExceeded("waited ", o.timeout_s, " s; last: ", FirstLine(s.message()));
    if (FirstLine(s.message()) != last) {
      last = FirstLine(s.message());
      const std::string line = "waiting for " + o.waiting_for + ": " + last;
      if (o.log) {
        o.log(line);
      } else {
        PF_LOG_INFO("{}", line);
      }
    }
    if (o.restore && IsUninitializedVariable(s)) {
      try {
        o.restore();  // a restarted ps: its variables are gone
        continue;
      } catch (const Error& e) {
        if (!IsTaskComingBack(e.status())) throw;  // (the ps went away again: wait for it)
      }
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_interval_s));
  }
}

Status WaitForChief(Session& session, Graph* graph, int worker_index, double timeout_s,
                    std::function<void(const std::string&)> log) {
  WaitOptions o;
  o.timeout_s = timeout_s;
  o.waiting_for = "the chief to initialise the variables";
  o.log = std::move(log);
  Status s = WaitForVariables(session, graph, o);
  if (s.code() == Code::kDeadlineExceeded) {
    return errors::DeadlineExceeded(
        "Worker ", worker_index,
        " waited for the chief (worker 0) to initialise the variables: ", s.message());
  }
  return s;
}

}  // namespace pf::train
