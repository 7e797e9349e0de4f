#include "placeflow/train/summary_hooks.h"

#include "placeflow/core/logging.h"

namespace pf::train {

// ---- SummarySaverHook ----

SummarySaverHook::SummarySaverHook(std::shared_ptr<SummaryWriter> writer, Output summary,
                                   int64_t every_steps)
    : writer_(std::move(writer)), summary_(summary), timer_(every_steps, 0) {
  if (!writer_) throw Error(errors::InvalidArgument("SummarySaverHook: no SummaryWriter"));
  if (!summary_.node)
    throw Error(errors::InvalidArgument(
        "SummarySaverHook: no summary tensor (the graph's \"summaries\" collection is empty?)"));
  if (every_steps < 1)
    throw Error(
        errors::InvalidArgument("SummarySaverHook: every_steps must be >= 1, got ", every_steps));
}

void SummarySaverHook::AfterCreateSession(Session& session) {
  if (!step_.valid()) step_ = GlobalStepOf(&session.graph(), "SummarySaverHook");
  last_step_ = session.Run({step_.value()})[0].scalar<int64_t>();
}

SessionRunArgs SummarySaverHook::BeforeRun(SessionRunContext&) {
  // Whether the step about to run is due, on the count since the last exact read (other
  // workers' steps show up at the next write's read).
  fetching_ = timer_.ShouldTrigger(last_step_ + 1);
  if (!fetching_) return {};
  return {{summary_}};
}

void SummarySaverHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  ++last_step_;
  if (!graph_written_) {
    writer_->AddGraph(context.session().graph(), context.session().DevicePlacement());
    graph_written_ = true;
  }
  if (!fetching_) return;
  // The global step after this step, read once the step is done (a read inside it may come
  // before or after its update).
  last_step_ = context.session().Run({step_.value()})[0].scalar<int64_t>();
  timer_.Triggered(last_step_);
  writer_->AddSummary(values.results[0], last_step_);
}

void SummarySaverHook::End(Session&) { writer_->Flush(); }

// ---- StepCounterHook ----

StepCounterHook::StepCounterHook(std::shared_ptr<SummaryWriter> writer, int64_t every_steps)
    : writer_(std::move(writer)), every_(every_steps) {
  if (every_steps < 1)
    throw Error(
        errors::InvalidArgument("StepCounterHook: every_steps must be >= 1, got ", every_steps));
}

void StepCounterHook::AfterCreateSession(Session& session) {
  if (!step_.valid()) step_ = GlobalStepOf(&session.graph(), "StepCounterHook");
  last_step_ = session.Run({step_.value()})[0].scalar<int64_t>();
  last_time_ = std::chrono::steady_clock::now();
}

SessionRunArgs StepCounterHook::BeforeRun(SessionRunContext&) { return {{step_.value()}}; }

void StepCounterHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  // The value read during the step may precede its update: +1, then an exact read when due.
  if (values.results[0].scalar<int64_t>() + 1 - last_step_ < every_) return;
  const int64_t step = context.session().Run({step_.value()})[0].scalar<int64_t>();
  if (step - last_step_ < every_) return;
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - last_time_).count();
  last_rate_ = seconds > 0 ? static_cast<double>(step - last_step_) / seconds : 0;
  if (writer_) writer_->AddScalar("global_step/sec", last_rate_, step);
  PF_LOG_INFO("global_step/sec: {:.4g}", last_rate_);
  last_step_ = step;
  last_time_ = now;
}

}  // namespace pf::train
