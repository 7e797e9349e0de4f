// TensorFlow's basic session-run hooks (tf.train.*Hook) for MonitoredSession
// (train/monitored_session.h). Each reads the graph's "global_step" variable where it counts
// steps (train::GetOrCreateGlobalStep); one without it is an error at Begin naming the hook.
//
//   auto stop = std::make_shared<pf::train::StopAtStepHook>(
//       pf::train::StopAtStepHook::LastStep(1000));                 // or NumSteps(100)
//   auto nan = std::make_shared<pf::train::NanTensorHook>(loss);    // fails on a NaN loss
//   auto save = std::make_shared<pf::train::CheckpointSaverHook>(
//       "ckpt", pf::train::CheckpointSaverHook::Options{.every_steps = 100});
//   auto log = std::make_shared<pf::train::LoggingTensorHook>(
//       std::vector<pf::Output>{loss, accuracy}, /*every_steps=*/50);
//
// The summary hooks (SummarySaverHook, StepCounterHook) are in train/summary_hooks.h.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "placeflow/train/monitored_session.h"
#include "placeflow/train/progress_bar.h"

namespace pf::train {

// The graph's "global_step" variable; FailedPrecondition naming `who` when there is none.
Variable GlobalStepOf(Graph* graph, const std::string& who);

// Fires every `every_steps` steps or every `every_secs` seconds (TF's SecondOrStepTimer): the
// first step always fires.
class StepTimer {
 public:
  StepTimer(int64_t every_steps, double every_secs);
  bool ShouldTrigger(int64_t step) const;
  void Triggered(int64_t step);
  std::optional<int64_t> last_triggered() const { return last_step_; }

 private:
  int64_t every_steps_;
  double every_secs_;
  std::optional<int64_t> last_step_;
  std::chrono::steady_clock::time_point last_time_;
};

// Requests a stop once the global step reaches the last step: LastStep(n) stops at global step
// n; NumSteps(n) at the global step the session started from plus n (counted when the session
// is created, so a restored run trains n more).
class StopAtStepHook : public SessionRunHook {
 public:
  static StopAtStepHook NumSteps(int64_t num_steps) { return StopAtStepHook(num_steps, -1); }
  static StopAtStepHook LastStep(int64_t last_step) { return StopAtStepHook(-1, last_step); }
  void Begin() override;
  void AfterCreateSession(Session& session) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  int64_t last_step() const { return last_step_; }

 private:
  StopAtStepHook(int64_t num_steps, int64_t last_step);
  int64_t num_steps_, last_step_;
  Graph* graph_ = nullptr;
  Variable step_;
};

// Checks `loss` after every step: a NaN or infinite value throws InvalidArgument ("NaN loss
// during training: <tensor> = nan at global step N") or, with fail_on_nan_loss false, logs it
// and requests a stop. `describe` (given the value) replaces the message (a program's own words).
class NanTensorHook : public SessionRunHook {
 public:
  explicit NanTensorHook(Output loss, bool fail_on_nan_loss = true,
                         std::function<std::string(double value)> describe = nullptr);
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;

 private:
  Output loss_;
  bool fail_;
  std::function<std::string(double)> describe_;
};

// Saves a checkpoint "<dir>/model-<global step>" every `every_steps` steps or `every_secs`
// seconds (one of them), when the session is created (save_on_create) and at the end (unless the
// last step was saved), with the scaffold's saver or one of every global variable.
class CheckpointSaverHook : public SessionRunHook {
 public:
  struct Options {
    int64_t every_steps = 0;
    double every_secs = 0;
    std::string basename = "model";
    bool save_on_create = true;  // TensorFlow saves the initial state
    bool save_at_end = true;
    std::shared_ptr<Saver> saver;  // null: a Saver of every global variable, keeping 5
    // "saved <path>" after each save; null: spdlog's info log.
    std::function<void(const std::string&)> log;
  };
  // InvalidArgument unless exactly one of every_steps and every_secs is positive.
  CheckpointSaverHook(std::string checkpoint_dir, Options options);
  void Begin() override;
  void AfterCreateSession(Session& session) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  void End(Session& session) override;
  // The checkpoints written so far, oldest first, and the global step of the last one.
  const std::vector<std::string>& saved() const { return saved_; }
  std::optional<int64_t> last_saved_step() const { return last_saved_step_; }

 private:
  void Save(Session& session, int64_t step);
  std::string dir_;
  Options o_;
  StepTimer timer_;
  Variable step_;
  std::vector<std::string> saved_;
  std::optional<int64_t> last_saved_step_;
};

// Logs the values of `tensors` every `every_steps` steps (through the placeflow logger, shown at
// its default level as requested output, or `log`):
// "loss = 0.31, accuracy = 0.9 (0.012 sec)" with the time since the last line.
class LoggingTensorHook : public SessionRunHook {
 public:
  LoggingTensorHook(std::vector<Output> tensors, int64_t every_steps,
                    std::function<void(const std::string&)> log = nullptr);
  void Begin() override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  // The line for these values (tests).
  std::string Line(const std::vector<Tensor>& values) const;

 private:
  std::vector<Output> tensors_;
  int64_t every_;
  std::function<void(const std::string&)> log_;
  int64_t iter_ = 0;
  std::chrono::steady_clock::time_point last_;
};

// A Keras-style progress bar (train/progress_bar.h) over `total_steps` global steps, showing
// `loss` (averaged over the steps drawn) and examples/s for `batch` examples per step; finished
// at End.
class ProgressBarHook : public SessionRunHook {
 public:
  ProgressBarHook(FILE* out, int64_t total_steps, Output loss, int64_t batch);
  void Begin() override;
  void AfterCreateSession(Session& session) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  void End(Session& session) override;

 private:
  FILE* out_;
  progress::Mode mode_;  // a bar on a terminal; plain lines (every tenth) in a log or pipe
  int64_t total_, batch_;
  Output loss_;
  Variable step_;
  int64_t first_ = 0, done_ = 0;
  double loss_sum_ = 0;
  int64_t loss_count_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::optional<progress::ProgressBar> bar_;
};

}  // namespace pf::train
