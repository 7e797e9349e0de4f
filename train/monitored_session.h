// MonitoredTrainingSession (TensorFlow 1.x's tf.train.MonitoredTrainingSession): a session that
// initialises or restores its variables (the chief), waits for them (the other workers), runs
// hooks around every step, and recovers when a ps task restarts.
//
//   pf::train::MonitoredTrainingSessionOptions o;
//   o.is_chief = true;
//   o.checkpoint_dir = "ckpt";                      // restore from here; save every 600 s
//   o.hooks = {std::make_shared<pf::train::StopAtStepHook>(pf::train::StopAtStepHook::LastStep(
//                  1000)),
//              std::make_shared<pf::train::NanTensorHook>(loss)};
//   auto sess = pf::train::MonitoredTrainingSession(&g, o);
//   while (!sess->ShouldStop()) sess->Run({{x, batch_x}, {y, batch_y}}, {loss}, {train_op});
//   sess->Close();                                  // hooks' End (a last checkpoint)
//
// A step (MonitoredSession::Run): every hook's BeforeRun may add tensors to fetch, ops to run
// and feeds; one Session::Run fetches them with the caller's; each hook's AfterRun receives its
// own values. A hook calls context.RequestStop() to end the loop (ShouldStop turns true).
// Begin runs when the MonitoredSession is made (before the session is created: a hook may still
// add ops to the graph), AfterCreateSession once the variables are ready (again after a
// recovery), End in Close when no step failed.
//
// Recovery: a step on a cluster session that fails because a task is coming back (Unavailable,
// Aborted, a restarted task) or finds a variable uninitialised (a restarted ps lost them) is
// retried once the session creator has made the variables ready again (the chief restores the
// latest checkpoint, else runs the initialisers; the others wait), as TensorFlow's
// _RecoverableSession does.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "placeflow/executor/session.h"
#include "placeflow/train/saver.h"

namespace pf::train {

// What a hook adds to a step.
struct SessionRunArgs {
  SessionRunArgs() = default;
  SessionRunArgs(std::vector<Output> f) : fetches(std::move(f)) {}  // NOLINT: {{loss}}
  std::vector<Output> fetches;  // their values reach the hook's AfterRun, in order
  std::vector<Operation> targets;
  FeedDict feeds;
  bool trace = false;  // trace the step (RunOptions::trace); the metadata reaches AfterRun
};

// What a hook gets back from a step.
struct SessionRunValues {
  std::vector<Tensor> results;            // its SessionRunArgs::fetches' values
  const RunMetadata* metadata = nullptr;  // when some hook asked for a trace
  double step_s = 0;                      // the wall time of the step's Session::Run
};

// The step in progress, as a hook sees it.
class SessionRunContext {
 public:
  SessionRunContext(Session& session, const FeedDict& feeds, const std::vector<Output>& fetches)
      : session_(session), feeds_(feeds), fetches_(fetches) {}
  Session& session() const { return session_; }
  // The caller's feeds and fetches (without the hooks').
  const FeedDict& feeds() const { return feeds_; }
  const std::vector<Output>& fetches() const { return fetches_; }
  // Ends the loop after this step: MonitoredSession::ShouldStop becomes true.
  void RequestStop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }

 private:
  Session& session_;
  const FeedDict& feeds_;
  const std::vector<Output>& fetches_;
  bool stop_requested_ = false;
};

class SessionRunHook {
 public:
  virtual ~SessionRunHook() = default;
  // Before the session is created: the graph may still grow.
  virtual void Begin() {}
  // Once the variables are ready (initialised, restored or waited for), and again after a
  // recovery.
  virtual void AfterCreateSession(Session& session) {}
  virtual SessionRunArgs BeforeRun(SessionRunContext& context) { return {}; }
  virtual void AfterRun(SessionRunContext& context, const SessionRunValues& values) {}
  // At Close, when no step failed.
  virtual void End(Session& session) {}
};

// TensorFlow's Scaffold: how a session's variables are made ready.
struct Scaffold {
  // The chief runs it when there is no checkpoint to restore. Unset: the graph's global variables
  // initializer (made when the session is created); set to Operation(): nothing to run.
  std::optional<Operation> init_op;
  // Every task runs it once the variables are ready (local variables, per-worker state).
  Operation local_init_op;
  // The chief calls it after init_op (not after a restore): values that do not come from
  // initialisers (pretrained weights).
  std::function<void(Session&)> init_fn;
  // Restores (and, for CheckpointSaverHook, saves); null: a Saver of every global variable.
  std::shared_ptr<Saver> saver;
};

struct SessionCreatorOptions {
  // The session's graph (required) and options (target: a cluster's "grpc://host:port").
  Graph* graph = nullptr;
  SessionOptions session_options;
  // Use this open session instead of opening one (it must run `graph`); not owned.
  Session* session = nullptr;
  // The session's variables are already initialised: the chief neither initialises nor restores.
  bool ready = false;
  Scaffold scaffold;
  // The chief restores the latest checkpoint here when there is one ("": never restores).
  std::string checkpoint_dir;
  // false: the chief starts from the initialisers even when checkpoint_dir holds a checkpoint
  // (a recovery after a ps restart still restores the latest one).
  bool restore_on_create = true;
  RestoreOptions restore_options;
  // The longest a worker waits for the chief, and any task for its variables after a failure.
  double wait_timeout_s = 120;
  int worker_index = 0;  // in the worker's messages
  // Progress lines ("restored ...", "waiting for ..."); null: spdlog's info log.
  std::function<void(const std::string&)> log;
  // Whether a failed step is recovered from (Recover): unset, when the session is a cluster's
  // (session_options.target set); an adopted `session` says so here.
  std::optional<bool> recover;
};

// Opens a session and makes its variables ready; makes them ready again after a failure.
class SessionCreator {
 public:
  explicit SessionCreator(SessionCreatorOptions options);
  virtual ~SessionCreator();
  // The session, with every variable ready. Throws pf::Error.
  virtual Session& CreateSession() = 0;
  // After a step failed with `error`: true once the variables are ready again (the step may be
  // retried), false for an error that is not a task coming back or an uninitialised variable,
  // or on a session that is not a cluster's. Throws when the variables do not come back within
  // wait_timeout_s.
  virtual bool Recover(const Status& error) = 0;
  Session& session();
  Graph* graph() const { return o_.graph; }
  const Scaffold& scaffold() const { return o_.scaffold; }
  Saver& saver();

 protected:
  Session& OpenSession();
  // Whether Recover should wait out `error` (a cluster session, a recoverable error).
  bool Recovers(const Status& error) const;
  void Log(const std::string& line) const;
  // The local init op, if any.
  void RunLocalInit();
  SessionCreatorOptions o_;

 private:
  std::unique_ptr<Session> own_;
  std::shared_ptr<Saver> saver_;
};

// The chief: restores the latest checkpoint of checkpoint_dir, else runs init_op and init_fn.
class ChiefSessionCreator : public SessionCreator {
 public:
  using SessionCreator::SessionCreator;
  Session& CreateSession() override;
  bool Recover(const Status& error) override;
  // Restores the latest checkpoint; false when there is none (or no checkpoint_dir).
  bool RestoreLatest();

 private:
  void RestoreOrInitialize();
  void Initialize();  // init_op, then init_fn
};

// A non-chief worker: waits (up to wait_timeout_s) until the chief has initialised every
// variable; then DeadlineExceeded "Worker <i> waited for the chief (worker 0) ...".
class WorkerSessionCreator : public SessionCreator {
 public:
  using SessionCreator::SessionCreator;
  Session& CreateSession() override;
  bool Recover(const Status& error) override;
};

class MonitoredSession {
 public:
  // Calls every hook's Begin, creates the session, then AfterCreateSession.
  MonitoredSession(std::unique_ptr<SessionCreator> creator,
                   std::vector<std::shared_ptr<SessionRunHook>> hooks = {});
  ~MonitoredSession();  // Close(); errors are logged
  MonitoredSession(const MonitoredSession&) = delete;
  MonitoredSession& operator=(const MonitoredSession&) = delete;

  // One step with the hooks (see the top of this file); returns the caller's fetches. Throws
  // pf::Error for a failed step that cannot be recovered (no hook's End runs then).
  std::vector<Tensor> Run(const FeedDict& feeds, const std::vector<Output>& fetches,
                          const std::vector<Operation>& targets = {},
                          const RunOptions& run_options = {}, RunMetadata* metadata = nullptr);
  bool ShouldStop() const { return stop_; }
  void RequestStop() { stop_ = true; }
  // Every hook's End (unless a step failed), once.
  void Close();
  // The session itself, for runs outside the hooks (evaluation): TF's _tf_sess().
  Session& raw_session() { return *session_; }
  SessionCreator& creator() { return *creator_; }

 private:
  std::vector<Tensor> RunOnce(const FeedDict& feeds, const std::vector<Output>& fetches,
                              const std::vector<Operation>& targets, const RunOptions& run_options,
                              RunMetadata* metadata);
  std::unique_ptr<SessionCreator> creator_;
  std::vector<std::shared_ptr<SessionRunHook>> hooks_;
  Session* session_ = nullptr;
  bool stop_ = false, closed_ = false, failed_ = false;
};

struct MonitoredTrainingSessionOptions {
  SessionOptions session_options;  // target: a cluster's server ("grpc://..."); "" in process
  bool is_chief = true;
  int worker_index = 0;
  // Restored from (chief) and saved to; also the summaries' directory. "": neither.
  std::string checkpoint_dir;
  Scaffold scaffold;
  std::vector<std::shared_ptr<SessionRunHook>> hooks;
  std::vector<std::shared_ptr<SessionRunHook>> chief_only_hooks;
  // With checkpoint_dir, on the chief: a CheckpointSaverHook every this many seconds, or steps
  // (steps win when > 0). Both 0: none.
  double save_checkpoint_secs = 600;
  int64_t save_checkpoint_steps = 0;
  // With checkpoint_dir, on the chief, in a build with protobuf: a SummarySaverHook of the
  // graph's "summaries" collection every this many steps (0: none), and a StepCounterHook
  // every log_step_count_steps (0: none).
  int64_t save_summaries_steps = 100;
  int64_t log_step_count_steps = 100;
  double wait_timeout_s = 120;  // a worker's wait for the chief
  std::function<void(const std::string&)> log;
};

// The chief's or a worker's session creator (with the options' graph, session and checkpoint
// directory), the default hooks, then the MonitoredSession.
std::unique_ptr<MonitoredSession> MonitoredTrainingSession(
    Graph* graph, const MonitoredTrainingSessionOptions& options);

}  // namespace pf::train
