#include "placeflow/train/basic_hooks.h"

#include <fmt/format.h>

#include <cmath>

#include "placeflow/core/logging.h"
#include "placeflow/train/variables.h"

namespace pf::train {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int64_t Read(Session& session, const Variable& step) {
  return session.Run({step.value()})[0].scalar<int64_t>();
}

void Emit(const std::function<void(const std::string&)>& log, const std::string& line) {
  if (log) {
    log(line);
  } else {
    PF_LOG_INFO("{}", line);
  }
}

// A one-element tensor's value as a double (float, double, the integers), for NaN checks and
// logs.
double ScalarValue(const Tensor& t) {
  if (t.num_elements() != 1)
    throw Error(errors::InvalidArgument("expected one value, got ", DTypeName(t.dtype()), " ",
                                        t.shape().ToString()));
  switch (t.dtype()) {
    case DT_FLOAT:
      return t.data<float>()[0];
    case DT_DOUBLE:
      return t.data<double>()[0];
    case DT_INT32:
      return t.data<int32_t>()[0];
    case DT_INT64:
      return static_cast<double>(t.data<int64_t>()[0]);
    default:
      throw Error(errors::InvalidArgument("expected a float, double or integer scalar, got ",
                                          DTypeName(t.dtype()), " ", t.shape().ToString()));
  }
}

}  // namespace

Variable GlobalStepOf(Graph* graph, const std::string& who) {
  Variable step = FindVariable(graph, "global_step");
  if (!step.valid())
    throw Error(errors::FailedPrecondition(
        who,
        " needs the global step: create it with train::GetOrCreateGlobalStep and pass it to "
        "the optimizer's Minimize"));
  return step;
}

// ---- StepTimer ----

StepTimer::StepTimer(int64_t every_steps, double every_secs)
    : every_steps_(every_steps), every_secs_(every_secs) {}

bool StepTimer::ShouldTrigger(int64_t step) const {
  if (!last_step_) return true;
  if (step == *last_step_) return false;
  if (every_secs_ > 0) return SecondsSince(last_time_) >= every_secs_;
  return every_steps_ > 0 && step >= *last_step_ + every_steps_;
}

void StepTimer::Triggered(int64_t step) {
  last_step_ = step;
  last_time_ = std::chrono::steady_clock::now();
}

// ---- StopAtStepHook ----

StopAtStepHook::StopAtStepHook(int64_t num_steps, int64_t last_step)
    : num_steps_(num_steps), last_step_(last_step) {
  if (num_steps < 0 && last_step < 0)
    throw Error(errors::InvalidArgument("StopAtStepHook: num_steps or last_step must be >= 0"));
}

void StopAtStepHook::Begin() { graph_ = nullptr; }

void StopAtStepHook::AfterCreateSession(Session& session) {
  if (!step_.valid()) step_ = GlobalStepOf(&session.graph(), "StopAtStepHook");
  // NumSteps counts from where the first session started (not again after a recovery).
  if (graph_ == nullptr && num_steps_ >= 0) last_step_ = Read(session, step_) + num_steps_;
  graph_ = &session.graph();
}

SessionRunArgs StopAtStepHook::BeforeRun(SessionRunContext&) { return {{step_.value()}}; }

void StopAtStepHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  // The value read during the step may be from before its update: read again near the end.
  const int64_t stale = values.results[0].scalar<int64_t>();
  if (stale + 1 >= last_step_ && Read(context.session(), step_) >= last_step_)
    context.RequestStop();
}

// ---- NanTensorHook ----

NanTensorHook::NanTensorHook(Output loss, bool fail_on_nan_loss,
                             std::function<std::string(double)> describe)
    : loss_(loss), fail_(fail_on_nan_loss), describe_(std::move(describe)) {
  if (!loss.node) throw Error(errors::InvalidArgument("NanTensorHook: no loss tensor"));
}

SessionRunArgs NanTensorHook::BeforeRun(SessionRunContext&) { return {{loss_}}; }

void NanTensorHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const double v = ScalarValue(values.results[0]);
  if (std::isfinite(v)) return;
  if (describe_ && fail_) throw Error(errors::InvalidArgument(describe_(v)));
  Variable step = FindVariable(&context.session().graph(), "global_step");
  const std::string at =
      step.valid() ? fmt::format(" at global step {}", Read(context.session(), step)) : "";
  const std::string what = std::isnan(v) ? "NaN" : "Inf";
  const std::string message = fmt::format("{} loss during training: {} = {}{}", what, loss_.name(),
                                          std::isnan(v) ? "nan" : "inf", at);
  if (fail_) throw Error(errors::InvalidArgument(message));
  PF_LOG_WARN("{}; stopping", message);
  context.RequestStop();
}

// ---- CheckpointSaverHook ----

CheckpointSaverHook::CheckpointSaverHook(std::string checkpoint_dir, Options options)
    : dir_(std::move(checkpoint_dir)),
      o_(std::move(options)),
      timer_(o_.every_steps, o_.every_secs) {
  if ((o_.every_steps > 0) == (o_.every_secs > 0))
    throw Error(errors::InvalidArgument(
        "CheckpointSaverHook: exactly one of every_steps and every_secs must be positive, got ",
        o_.every_steps, " and ", o_.every_secs));
  if (dir_.empty()) throw Error(errors::InvalidArgument("CheckpointSaverHook: no directory"));
}

void CheckpointSaverHook::Begin() { ThrowIfError(Saver::CheckDirectory(dir_)); }

void CheckpointSaverHook::AfterCreateSession(Session& session) {
  if (!step_.valid()) step_ = GlobalStepOf(&session.graph(), "CheckpointSaverHook");
  if (!o_.saver) o_.saver = std::make_shared<Saver>(&session.graph());
  const int64_t step = Read(session, step_);
  if (o_.save_on_create && timer_.last_triggered() != step) Save(session, step);
  timer_.Triggered(step);
}

SessionRunArgs CheckpointSaverHook::BeforeRun(SessionRunContext&) { return {{step_.value()}}; }

void CheckpointSaverHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const int64_t stale = values.results[0].scalar<int64_t>();
  if (!timer_.ShouldTrigger(stale + 1)) return;
  const int64_t step = Read(context.session(), step_);
  if (timer_.ShouldTrigger(step)) {
    timer_.Triggered(step);
    Save(context.session(), step);
  }
}

void CheckpointSaverHook::End(Session& session) {
  if (!o_.save_at_end || !step_.valid()) return;
  const int64_t step = Read(session, step_);
  if (timer_.last_triggered() != step) Save(session, step);
}

void CheckpointSaverHook::Save(Session& session, int64_t step) {
  saved_.push_back(o_.saver->Save(session, dir_ + "/" + o_.basename, step));
  last_saved_step_ = step;
  Emit(o_.log, "saved " + saved_.back());
}

// ---- LoggingTensorHook ----

LoggingTensorHook::LoggingTensorHook(std::vector<Output> tensors, int64_t every_steps,
                                     std::function<void(const std::string&)> log)
    : tensors_(std::move(tensors)), every_(every_steps), log_(std::move(log)) {
  if (every_ < 1)
    throw Error(
        errors::InvalidArgument("LoggingTensorHook: every_steps must be >= 1, got ", every_steps));
  if (tensors_.empty()) throw Error(errors::InvalidArgument("LoggingTensorHook: no tensors"));
}

void LoggingTensorHook::Begin() {
  iter_ = 0;
  last_ = std::chrono::steady_clock::now();
}

SessionRunArgs LoggingTensorHook::BeforeRun(SessionRunContext&) {
  if (iter_ % every_ != 0) return {};
  return {tensors_};
}

std::string LoggingTensorHook::Line(const std::vector<Tensor>& values) const {
  std::string line;
  for (size_t i = 0; i < tensors_.size() && i < values.size(); ++i) {
    const Tensor& t = values[i];
    line += (i ? ", " : "") + tensors_[i].name() + " = ";
    const bool number = t.dtype() == DT_FLOAT || t.dtype() == DT_DOUBLE || t.dtype() == DT_INT32 ||
                        t.dtype() == DT_INT64;
    line += number && t.num_elements() == 1 ? fmt::format("{:g}", ScalarValue(t)) : t.DebugString();
  }
  return line;
}

void LoggingTensorHook::AfterRun(SessionRunContext&, const SessionRunValues& values) {
  if (iter_++ % every_ != 0) return;
  std::string line = Line(values.results);
  if (iter_ > 1) line += fmt::format(" ({:.3f} sec)", SecondsSince(last_));
  last_ = std::chrono::steady_clock::now();
  // Output the user asked for: shown at the default level (warn), as log_device_placement is.
  if (log_) {
    log_(line);
  } else {
    LogRequested(line);
  }
}

// ---- ProgressBarHook ----

ProgressBarHook::ProgressBarHook(FILE* out, int64_t total_steps, Output loss, int64_t batch)
    : out_(out),
      mode_(progress::Resolve(progress::Mode::kAuto, out)),
      total_(total_steps),
      batch_(batch),
      loss_(loss) {
  if (total_steps < 1)
    throw Error(errors::InvalidArgument("ProgressBarHook: total_steps must be >= 1"));
}

void ProgressBarHook::Begin() { start_ = std::chrono::steady_clock::now(); }

void ProgressBarHook::AfterCreateSession(Session& session) {
  if (step_.valid()) return;  // after a recovery: the same bar goes on
  step_ = GlobalStepOf(&session.graph(), "ProgressBarHook");
  first_ = Read(session, step_);
  bar_.emplace(out_, std::max<int64_t>(1, total_ - first_));
}

SessionRunArgs ProgressBarHook::BeforeRun(SessionRunContext&) { return {{loss_}}; }

void ProgressBarHook::AfterRun(SessionRunContext&, const SessionRunValues& values) {
  loss_sum_ += ScalarValue(values.results[0]);
  ++loss_count_;
  ++done_;
  const double elapsed = SecondsSince(start_);
  const progress::Metrics metrics = {{"loss", loss_sum_ / loss_count_}};
  if (mode_ == progress::Mode::kBar) {
    bar_->Update(done_, metrics, done_ * batch_ / elapsed);
  } else if (mode_ == progress::Mode::kLines && done_ % std::max<int64_t>(1, total_ / 10) == 0) {
    std::fprintf(out_, "%s\n",
                 bar_->Line(done_, elapsed, metrics, done_ * batch_ / elapsed, false).c_str());
    std::fflush(out_);
  }
}

void ProgressBarHook::End(Session&) {
  if (!bar_) return;
  const double elapsed = std::max(1e-9, SecondsSince(start_));
  const progress::Metrics metrics = {{"loss", loss_count_ ? loss_sum_ / loss_count_ : 0.0}};
  if (mode_ == progress::Mode::kBar) {
    bar_->Finish(done_, metrics, done_ * batch_ / elapsed);
  } else {  // the totals, also when quiet (as pf-train's epoch summaries)
    std::fprintf(out_, "%s\n",
                 bar_->Line(done_, elapsed, metrics, done_ * batch_ / elapsed, true).c_str());
  }
  bar_.reset();
}

}  // namespace pf::train
