// MonitoredSession and its hooks (train/monitored_session.h, train/basic_hooks.h), in process.
// The cluster side (a worker waiting for its chief) is in tests/distributed/training_test.cc.
#include "placeflow/train/monitored_session.h"

#include <filesystem>

#include "placeflow/train/basic_hooks.h"
#include "tests/testing/test_util.h"

namespace pf::monitored_session_test {
namespace {

using Catch::Matchers::Contains;

// loss = (w - 3)^2 by SGD (rate 0.1): w_k = 3 - 3 * 0.8^k from w_0 = 0, so the values are known.
struct Quadratic {
  Graph g;
  Variable w, step;
  Output loss;
  Operation train;
  Quadratic() {
    Scope root = Scope::Root(&g);
    w = GetVariable(root, "w", {}, init::Zeros());
    step = train::GetOrCreateGlobalStep(root);
    Output d = ops::Sub(root, w.value(), ops::Const(root, 3.f));
    loss = ops::Square(root.WithOpName("loss"), d);
    train = train::GradientDescent(0.1).Minimize(root, loss, &step);
  }
};

std::unique_ptr<train::MonitoredSession> Monitored(
    Quadratic& q, std::vector<std::shared_ptr<train::SessionRunHook>> hooks,
    const std::string& checkpoint_dir = "") {
  train::SessionCreatorOptions co;
  co.graph = &q.g;
  co.checkpoint_dir = checkpoint_dir;
  co.log = [](const std::string&) {};
  return std::make_unique<train::MonitoredSession>(std::make_unique<train::ChiefSessionCreator>(co),
                                                   std::move(hooks));
}

int64_t StepOf(train::MonitoredSession& s, Quadratic& q) {
  return s.raw_session().Run({q.step.value()})[0].scalar<int64_t>();
}

TEST_CASE("StopAtStepHook stops exactly at last_step; NumSteps counts from the start",
          "[monitored]") {
  Quadratic q;
  auto stop = std::make_shared<train::StopAtStepHook>(train::StopAtStepHook::LastStep(7));
  auto sess = Monitored(q, {stop});
  int runs = 0;
  while (!sess->ShouldStop()) {
    sess->Run({}, {q.loss}, {q.train});
    ++runs;
    REQUIRE(runs <= 20);
  }
  CHECK(runs == 7);
  CHECK(StepOf(*sess, q) == 7);
  // Seven SGD steps from 0: w = 3 - 3 * 0.8^7.
  CHECK(sess->raw_session().Run({q.w.value()})[0].scalar<float>() ==
        Approx(3 - 3 * std::pow(0.8, 7)).epsilon(1e-5));
  sess->Close();

  // A session already at step 7 (the same graph's variables restored by hand: one more session
  // on an initialised one): NumSteps(3) ends at 10, LastStep(5) stops after the first step.
  Session raw(q.g);
  raw.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&q.g))});
  Scope root = Scope::Root(&q.g);
  raw.Run({}, {}, {ops::Assign(root, q.step.ref(), ops::Const(root, Tensor::Scalar<int64_t>(7)))});
  train::SessionCreatorOptions co;
  co.session = &raw;
  co.ready = true;
  train::MonitoredSession more(
      std::make_unique<train::ChiefSessionCreator>(co),
      {std::make_shared<train::StopAtStepHook>(train::StopAtStepHook::NumSteps(3))});
  runs = 0;
  while (!more.ShouldStop() && runs < 20) {
    more.Run({}, {}, {q.train});
    ++runs;
  }
  CHECK(runs == 3);
  CHECK(raw.Run({q.step.value()})[0].scalar<int64_t>() == 10);
  train::MonitoredSession past(
      std::make_unique<train::ChiefSessionCreator>(co),
      {std::make_shared<train::StopAtStepHook>(train::StopAtStepHook::LastStep(5))});
  past.Run({}, {}, {q.train});
  CHECK(past.ShouldStop());
}

TEST_CASE("CheckpointSaverHook writes every N steps; a new chief restores and goes on",
          "[monitored]") {
  testing::TempDir dir("pf_monitored_ckpt");
  const std::string ckpt = dir.path.string();
  std::vector<float> w_at_end;
  {
    Quadratic q;
    train::CheckpointSaverHook::Options so;
    so.every_steps = 3;
    so.log = [](const std::string&) {};
    auto saver_hook = std::make_shared<train::CheckpointSaverHook>(ckpt, so);
    auto sess = Monitored(
        q,
        {saver_hook, std::make_shared<train::StopAtStepHook>(train::StopAtStepHook::LastStep(10))},
        ckpt);
    while (!sess->ShouldStop()) sess->Run({}, {}, {q.train});
    w_at_end = sess->raw_session().Run({q.w.value()})[0].ToVector<float>();
    sess->Close();
    // At creation (0), every third step, and the last one at End.
    std::vector<std::string> expected;
    for (int s : {0, 3, 6, 9, 10}) expected.push_back(ckpt + "/model-" + std::to_string(s));
    REQUIRE(saver_hook->saved().size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      CHECK_THAT(saver_hook->saved()[i], Contains(expected[i]));
      CHECK(std::filesystem::exists(saver_hook->saved()[i]));
    }
    CHECK_THAT(Saver::LatestCheckpoint(ckpt), Contains("model-10"));
  }
  // A fresh process's graph: the chief restores step 10 and w, and trains on to 12.
  Quadratic q;
  std::vector<std::string> lines;
  train::SessionCreatorOptions co;
  co.graph = &q.g;
  co.checkpoint_dir = ckpt;
  co.log = [&](const std::string& l) { lines.push_back(l); };
  train::MonitoredSession sess(
      std::make_unique<train::ChiefSessionCreator>(co),
      {std::make_shared<train::StopAtStepHook>(train::StopAtStepHook::NumSteps(2))});
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Contains("restored " + ckpt + "/model-10"));
  CHECK_THAT(lines[0], Contains("(global_step=10)"));
  CHECK(sess.raw_session().Run({q.w.value()})[0].ToVector<float>() == w_at_end);
  while (!sess.ShouldStop()) sess.Run({}, {}, {q.train});
  CHECK(sess.raw_session().Run({q.step.value()})[0].scalar<int64_t>() == 12);
  CHECK(sess.raw_session().Run({q.w.value()})[0].scalar<float>() ==
        Approx(3 - 3 * std::pow(0.8, 12)).epsilon(1e-5));
}

TEST_CASE("NanTensorHook fails naming the tensor, or stops without failing", "[monitored]") {
  // loss = log(x) fed: x = -1 gives NaN, x = 0 gives -inf.
  Graph g;
  Scope root = Scope::Root(&g);
  Variable step = train::GetOrCreateGlobalStep(root);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {});
  Output loss = ops::Log(root.WithOpName("log_loss"), x);
  Operation bump = ops::AssignAdd(root, step.ref(), ops::Const(root, Tensor::Scalar<int64_t>(1)));
  {
    auto sess = [&](bool fail) {
      train::SessionCreatorOptions co;
      co.graph = &g;
      co.log = [](const std::string&) {};
      return std::make_unique<train::MonitoredSession>(
          std::make_unique<train::ChiefSessionCreator>(co),
          std::vector<std::shared_ptr<train::SessionRunHook>>{
              std::make_shared<train::NanTensorHook>(loss, fail)});
    };
    auto failing = sess(true);
    failing->Run({{x, Tensor::Scalar<float>(2.f)}}, {}, {bump});  // finite: nothing happens
    CHECK_FALSE(failing->ShouldStop());
    try {
      failing->Run({{x, Tensor::Scalar<float>(-1.f)}}, {}, {bump});
      FAIL("no error for a NaN loss");
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInvalidArgument);
      CHECK_THAT(e.what(), Contains("NaN loss during training: log_loss:0 = nan at global step 2"));
    }
    auto stopping = sess(false);
    stopping->Run({{x, Tensor::Scalar<float>(0.f)}}, {}, {bump});
    CHECK(stopping->ShouldStop());
  }
}

// Records what the MonitoredSession does with a hook, in order.
struct RecordingHook : train::SessionRunHook {
  std::vector<std::string>* log;
  std::string name;
  Output extra;
  RecordingHook(std::vector<std::string>* l, std::string n, Output e)
      : log(l), name(std::move(n)), extra(e) {}
  void Begin() override { log->push_back(name + ".Begin"); }
  void AfterCreateSession(Session&) override { log->push_back(name + ".AfterCreateSession"); }
  train::SessionRunArgs BeforeRun(train::SessionRunContext& c) override {
    log->push_back(name + ".BeforeRun fetches=" + std::to_string(c.fetches().size()));
    return {{extra}};
  }
  void AfterRun(train::SessionRunContext& c, const train::SessionRunValues& v) override {
    log->push_back(fmt::format("{}.AfterRun {}", name, v.results.at(0).scalar<float>()));
    if (name == "b") c.RequestStop();
  }
  void End(Session&) override { log->push_back(name + ".End"); }
};

TEST_CASE("MonitoredSession calls the hooks in TensorFlow's order with their own fetches",
          "[monitored]") {
  Graph g;
  Scope root = Scope::Root(&g);
  train::GetOrCreateGlobalStep(root);
  Output two = ops::Const(root, 2.f), three = ops::Const(root, 3.f);
  Output sum = ops::Add(root, two, three);
  std::vector<std::string> log;
  train::SessionCreatorOptions co;
  co.graph = &g;
  co.log = [](const std::string&) {};
  train::MonitoredSession sess(std::make_unique<train::ChiefSessionCreator>(co),
                               {std::make_shared<RecordingHook>(&log, "a", two),
                                std::make_shared<RecordingHook>(&log, "b", three)});
  std::vector<Tensor> out = sess.Run({}, {sum});
  REQUIRE(out.size() == 1);  // the hooks' fetches are not the caller's
  CHECK(out[0].scalar<float>() == 5.f);
  CHECK(sess.ShouldStop());  // b asked
  sess.Close();
  sess.Close();  // once
  CHECK(log == std::vector<std::string>{"a.Begin", "b.Begin", "a.AfterCreateSession",
                                        "b.AfterCreateSession", "a.BeforeRun fetches=1",
                                        "b.BeforeRun fetches=1", "a.AfterRun 2", "b.AfterRun 3",
                                        "a.End", "b.End"});
}

TEST_CASE("LoggingTensorHook logs every N steps; ProgressBarHook draws to the last step",
          "[monitored]") {
  // The logged tensor depends on the step's feed only (a variable read races its update).
  Graph g;
  Scope root = Scope::Root(&g);
  Variable step = train::GetOrCreateGlobalStep(root);
  Output p = ops::Placeholder(root.WithOpName("p"), DT_FLOAT, {});
  Output twice = ops::Mul(root.WithOpName("twice"), p, ops::Const(root, 2.f));
  Operation bump = ops::AssignAdd(root, step.ref(), ops::Const(root, Tensor::Scalar<int64_t>(1)));
  std::vector<std::string> lines;
  auto logging = std::make_shared<train::LoggingTensorHook>(
      std::vector<Output>{twice}, 2, [&](const std::string& l) { lines.push_back(l); });
  FILE* out = std::tmpfile();
  auto bar = std::make_shared<train::ProgressBarHook>(out, 5, twice, 10);
  train::SessionCreatorOptions co;
  co.graph = &g;
  co.log = [](const std::string&) {};
  train::MonitoredSession sess(
      std::make_unique<train::ChiefSessionCreator>(co),
      {logging, bar, std::make_shared<train::StopAtStepHook>(train::StopAtStepHook::LastStep(5))});
  for (int i = 1; !sess.ShouldStop() && i < 20; ++i)
    sess.Run({{p, Tensor::Scalar<float>(static_cast<float>(i))}}, {}, {bump});
  sess.Close();
  // Steps 1, 3 and 5 log 2 * p; the later lines carry the time since the last one.
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "twice:0 = 2");
  CHECK_THAT(lines[1], Contains("twice:0 = 6 ("));
  CHECK_THAT(lines[2], Contains("twice:0 = 10 ("));
  CHECK_THAT(lines[2], Contains(" sec)"));
  std::rewind(out);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), out));
  std::fclose(out);
  CHECK_THAT(text, Contains("5/5"));
  CHECK_THAT(text, Contains("loss 6.0000"));  // the mean of 2, 4, ..., 10
  CHECK(text.back() == '\n');                 // finished at End
  // A file is no terminal: plain lines (the bar's text), nothing redrawn with \r.
  if (std::getenv("PF_PROGRESS") == nullptr) {
    CHECK(text.find('\r') == std::string::npos);
    CHECK_THAT(text, Contains("1/5"));
  }
}

TEST_CASE("A hook that needs the global step says so", "[monitored]") {
  Graph g;
  Scope root = Scope::Root(&g);
  GetVariable(root, "w", {}, init::Zeros());
  train::SessionCreatorOptions co;
  co.graph = &g;
  co.log = [](const std::string&) {};
  CHECK_THROWS_WITH(
      train::MonitoredSession(
          std::make_unique<train::ChiefSessionCreator>(co),
          {std::make_shared<train::StopAtStepHook>(train::StopAtStepHook::LastStep(3))}),
      Contains("StopAtStepHook needs the global step"));
  CHECK_THROWS_WITH(train::CheckpointSaverHook("x", {}),
                    Contains("exactly one of every_steps and every_secs"));
}

}  // namespace
}  // namespace pf::monitored_session_test
