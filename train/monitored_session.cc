#include "placeflow/train/monitored_session.h"

#include <chrono>

#include "placeflow/core/logging.h"
#include "placeflow/core/strings.h"
#include "placeflow/train/basic_hooks.h"
#include "placeflow/train/session_manager.h"
#ifdef PF_WITH_PROTOBUF
#include "placeflow/ops/summary/summary.h"
#include "placeflow/train/summary_hooks.h"
#endif
#include "placeflow/train/variables.h"

namespace pf::train {
namespace {

int64_t ReadGlobalStep(Session& session) {
  Variable step = FindVariable(&session.graph(), "global_step");
  if (!step.valid()) return -1;
  return session.Run({step.value()})[0].scalar<int64_t>();
}

}  // namespace

// ---- SessionCreator ----

SessionCreator::SessionCreator(SessionCreatorOptions options) : o_(std::move(options)) {
  if (o_.graph == nullptr && o_.session != nullptr) o_.graph = &o_.session->graph();
  if (o_.graph == nullptr)
    throw Error(errors::InvalidArgument("SessionCreator: no graph (SessionCreatorOptions::graph)"));
  if (o_.session != nullptr && &o_.session->graph() != o_.graph)
    throw Error(errors::InvalidArgument(
        "SessionCreator: SessionCreatorOptions::session runs another graph than ::graph"));
}

SessionCreator::~SessionCreator() = default;

Session& SessionCreator::OpenSession() {
  if (o_.session != nullptr) return *o_.session;
  if (!own_) own_ = std::make_unique<Session>(*o_.graph, o_.session_options);
  return *own_;
}

Session& SessionCreator::session() { return OpenSession(); }

Saver& SessionCreator::saver() {
  if (o_.scaffold.saver) return *o_.scaffold.saver;
  if (!saver_) saver_ = std::make_shared<Saver>(o_.graph);
  return *saver_;
}

void SessionCreator::Log(const std::string& line) const {
  if (o_.log) {
    o_.log(line);
  } else {
    PF_LOG_INFO("{}", line);
  }
}

void SessionCreator::RunLocalInit() {
  if (o_.scaffold.local_init_op.node) session().Run({}, {}, {o_.scaffold.local_init_op});
}

bool ChiefSessionCreator::RestoreLatest() {
  if (o_.checkpoint_dir.empty()) return false;
  const std::string latest = Saver::LatestCheckpoint(o_.checkpoint_dir);
  if (latest.empty()) return false;
  saver().Restore(session(), latest, o_.restore_options);
  Log("restored " + latest + " (global_step=" + std::to_string(ReadGlobalStep(session())) + ")");
  return true;
}

void ChiefSessionCreator::RestoreOrInitialize() {
  if (!RestoreLatest()) Initialize();
}

void ChiefSessionCreator::Initialize() {
  Operation init = o_.scaffold.init_op ? *o_.scaffold.init_op
                                       : GlobalVariablesInitializer(Scope::Root(o_.graph));
  if (init.node) session().Run({}, {}, {init});
  if (o_.scaffold.init_fn) o_.scaffold.init_fn(session());
}

Session& ChiefSessionCreator::CreateSession() {
  Session& s = OpenSession();
  if (!o_.ready) {
    if (!o_.restore_on_create) {
      Initialize();
    } else {
      if (!o_.checkpoint_dir.empty() && Saver::LatestCheckpoint(o_.checkpoint_dir).empty())
        Log("no checkpoint in " + o_.checkpoint_dir + ": starting fresh");
      RestoreOrInitialize();
    }
  }
  RunLocalInit();
  return s;
}

bool SessionCreator::Recovers(const Status& error) const {
  const bool cluster = o_.recover.value_or(!o_.session_options.target.empty());
  return cluster && IsRecoverableError(error);
}

bool ChiefSessionCreator::Recover(const Status& error) {
  if (!Recovers(error)) return false;
  Log("step failed: " + FirstLine(error.message()));
  WaitOptions w;
  w.timeout_s = o_.wait_timeout_s;
  w.waiting_for = "the ps tasks";
  w.restore = [this] { RestoreOrInitialize(); };
  w.log = o_.log;
  if (!WaitForVariables(session(), o_.graph, w).ok()) return false;
  RunLocalInit();
  Log("recovered: the step runs again");
  return true;
}

Session& WorkerSessionCreator::CreateSession() {
  Session& s = OpenSession();
  ThrowIfError(WaitForChief(s, o_.graph, o_.worker_index, o_.wait_timeout_s, o_.log));
  RunLocalInit();
  return s;
}

bool WorkerSessionCreator::Recover(const Status& error) {
  if (!Recovers(error)) return false;
  Log("step failed: " + FirstLine(error.message()));
  WaitOptions w;
  w.timeout_s = o_.wait_timeout_s;
  w.waiting_for = "the ps tasks";
  w.log = o_.log;
  if (!WaitForVariables(session(), o_.graph, w).ok()) return false;
  RunLocalInit();
  Log("recovered: the step runs again");
  return true;
}

// ---- MonitoredSession ----

MonitoredSession::MonitoredSession(std::unique_ptr<SessionCreator> creator,
                                   std::vector<std::shared_ptr<SessionRunHook>> hooks)
    : creator_(std::move(creator)), hooks_(std::move(hooks)) {
  if (!creator_) throw Error(errors::InvalidArgument("MonitoredSession: no session creator"));
  for (auto& h : hooks_) {
    if (!h) throw Error(errors::InvalidArgument("MonitoredSession: a hook is null"));
  }
  for (auto& h : hooks_) h->Begin();
  session_ = &creator_->CreateSession();
  for (auto& h : hooks_) h->AfterCreateSession(*session_);
}

MonitoredSession::~MonitoredSession() {
  try {
    Close();
  } catch (const std::exception& e) {
    PF_LOG_ERROR("MonitoredSession: closing failed: {}", e.what());
  }
}

void MonitoredSession::Close() {
  if (closed_) return;
  closed_ = true;
  if (failed_) return;
  for (auto& h : hooks_) h->End(*session_);
}

std::vector<Tensor> MonitoredSession::Run(const FeedDict& feeds, const std::vector<Output>& fetches,
                                          const std::vector<Operation>& targets,
                                          const RunOptions& run_options, RunMetadata* metadata) {
  if (closed_) throw Error(errors::FailedPrecondition("MonitoredSession: Run after Close"));
  while (true) {
    try {
      return RunOnce(feeds, fetches, targets, run_options, metadata);
    } catch (const Error& e) {
      bool recovered = false;
      try {
        recovered = creator_->Recover(e.status());
      } catch (...) {
        failed_ = true;
        throw;
      }
      if (!recovered) {
        // The end of the input is no failure (TensorFlow stops on it): the hooks still end.
        if (e.code() != Code::kOutOfRange) failed_ = true;
        throw;
      }
      for (auto& h : hooks_) h->AfterCreateSession(*session_);
    }
  }
}

std::vector<Tensor> MonitoredSession::RunOnce(const FeedDict& feeds,
                                              const std::vector<Output>& fetches,
                                              const std::vector<Operation>& targets,
                                              const RunOptions& run_options,
                                              RunMetadata* metadata) {
  SessionRunContext context(*session_, feeds, fetches);
  FeedDict all_feeds = feeds;
  std::vector<Output> all_fetches = fetches;
  std::vector<Operation> all_targets = targets;
  std::vector<size_t> first(hooks_.size()), count(hooks_.size());
  RunOptions ro = run_options;
  for (size_t i = 0; i < hooks_.size(); ++i) {
    SessionRunArgs args = hooks_[i]->BeforeRun(context);
    first[i] = all_fetches.size();
    count[i] = args.fetches.size();
    all_fetches.insert(all_fetches.end(), args.fetches.begin(), args.fetches.end());
    all_targets.insert(all_targets.end(), args.targets.begin(), args.targets.end());
    for (auto& [out, value] : args.feeds) {
      for (const auto& [existing, unused] : all_feeds) {
        if (existing == out)
          throw Error(errors::InvalidArgument("MonitoredSession: ", out.name(),
                                              " is fed twice (by the caller or another hook)"));
      }
      all_feeds.emplace_back(out, std::move(value));
    }
    ro.trace = ro.trace || args.trace;
  }
  RunMetadata own_md;
  RunMetadata* md = metadata != nullptr ? metadata : &own_md;
  const auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> out = session_->Run(ro, all_feeds, all_fetches, all_targets, md);
  const double step_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t i = 0; i < hooks_.size(); ++i) {
    SessionRunValues values;
    values.results.assign(out.begin() + first[i], out.begin() + first[i] + count[i]);
    values.metadata = ro.trace ? md : nullptr;
    values.step_s = step_s;
    hooks_[i]->AfterRun(context, values);
  }
  if (context.stop_requested()) stop_ = true;
  out.resize(fetches.size());
  return out;
}

// ---- MonitoredTrainingSession ----

std::unique_ptr<MonitoredSession> MonitoredTrainingSession(
    Graph* graph, const MonitoredTrainingSessionOptions& o) {
  SessionCreatorOptions co;
  co.graph = graph;
  co.session_options = o.session_options;
  co.scaffold = o.scaffold;
  co.checkpoint_dir = o.checkpoint_dir;
  co.wait_timeout_s = o.wait_timeout_s;
  co.worker_index = o.worker_index;
  co.log = o.log;
  std::unique_ptr<SessionCreator> creator;
  if (o.is_chief) {
    creator = std::make_unique<ChiefSessionCreator>(co);
  } else {
    creator = std::make_unique<WorkerSessionCreator>(co);
  }
  std::vector<std::shared_ptr<SessionRunHook>> hooks = o.hooks;
  if (o.is_chief) {
    hooks.insert(hooks.end(), o.chief_only_hooks.begin(), o.chief_only_hooks.end());
    if (!o.checkpoint_dir.empty()) {
#ifdef PF_WITH_PROTOBUF
      // TensorFlow's defaults: summaries and steps/sec into the checkpoint directory.
      if (o.log_step_count_steps > 0 || o.save_summaries_steps > 0) {
        auto writer = std::make_shared<SummaryWriter>(o.checkpoint_dir);
        if (o.log_step_count_steps > 0)
          hooks.push_back(std::make_shared<StepCounterHook>(writer, o.log_step_count_steps));
        if (o.save_summaries_steps > 0 && !graph->GetCollection(summary::kSummaries).empty()) {
          hooks.push_back(std::make_shared<SummarySaverHook>(
              writer, summary::MergeAll(Scope::Root(graph)), o.save_summaries_steps));
        }
      }
#endif
      if (o.save_checkpoint_steps > 0 || o.save_checkpoint_secs > 0) {
        CheckpointSaverHook::Options so;
        so.every_steps = o.save_checkpoint_steps;
        so.every_secs = o.save_checkpoint_steps > 0 ? 0 : o.save_checkpoint_secs;
        so.saver = o.scaffold.saver;
        so.log = o.log;
        hooks.push_back(std::make_shared<CheckpointSaverHook>(o.checkpoint_dir, so));
      }
    }
  }
  return std::make_unique<MonitoredSession>(std::move(creator), std::move(hooks));
}

}  // namespace pf::train
