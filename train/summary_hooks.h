// The summary hooks of MonitoredSession (train/monitored_session.h), writing TensorBoard event
// files through a SummaryWriter (train/summary_writer.h). Built with protobuf (PF_WITH_PROTOBUF).
//
//   auto writer = std::make_shared<pf::SummaryWriter>("runs/a");
//   hooks.push_back(std::make_shared<pf::train::SummarySaverHook>(
//       writer, pf::summary::MergeAll(root), /*every_steps=*/100));
//   hooks.push_back(std::make_shared<pf::train::StepCounterHook>(writer, /*every_steps=*/100));
#pragma once

#include <chrono>
#include <memory>

#include "placeflow/train/basic_hooks.h"
#include "placeflow/train/summary_writer.h"

namespace pf::train {

// Fetches `summary` (a serialized Summary: summary::MergeAll's output) every `every_steps`
// steps (the first step, then counted from it) and writes it at the global step after that step;
// the graph (with the devices placed so far) once, after the first step. The writer is flushed at
// End.
class SummarySaverHook : public SessionRunHook {
 public:
  SummarySaverHook(std::shared_ptr<SummaryWriter> writer, Output summary, int64_t every_steps);
  void AfterCreateSession(Session& session) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  void End(Session& session) override;

 private:
  std::shared_ptr<SummaryWriter> writer_;
  Output summary_;
  StepTimer timer_;
  Variable step_;
  int64_t last_step_ = 0;  // the global step after the last step (exact at each write)
  bool graph_written_ = false, fetching_ = false;
};

// Steps per second over every `every_steps` global steps (from the session's creation), as the
// scalar "global_step/sec" at the global step (and an info log line "global_step/sec: <rate>").
// The writer may be null: log only.
class StepCounterHook : public SessionRunHook {
 public:
  StepCounterHook(std::shared_ptr<SummaryWriter> writer, int64_t every_steps);
  void AfterCreateSession(Session& session) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  double last_rate() const { return last_rate_; }

 private:
  std::shared_ptr<SummaryWriter> writer_;
  int64_t every_;
  Variable step_;
  int64_t last_step_ = -1;
  std::chrono::steady_clock::time_point last_time_;
  double last_rate_ = 0;
};

}  // namespace pf::train
