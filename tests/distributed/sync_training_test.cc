// Synchronous between-graph training (SyncReplicasOptimizer) on a loopback cluster: the same
// result as one process with the whole batch, stale gradients dropped and counted, backup
// workers, and a timeout instead of a hang.
#include <future>
#include <thread>

#include "placeflow/distributed/cluster_spec.h"
#include "placeflow/distributed/server.h"
#include "tests/distributed/cluster_util.h"
#include "tests/testing/test_util.h"

namespace pf::sync_training_test {
namespace {

using Catch::Matchers::Contains;

constexpr float kLearningRate = 0.1f;

// y = x w + b (w = [1, -2, 3], b = 0.5), as every worker builds it.
struct Model {
  Graph g;
  Output x, y, loss;
  Variable w, b, step;
  Operation init, train;
  std::unique_ptr<train::GradientDescent> sgd;
  std::unique_ptr<train::SyncReplicasOptimizer> sync;

  // A worker of a sync cluster.
  Model(const std::string& worker_device, int batch, int to_aggregate, int total) {
    train::ReplicaDeviceSetter setter(1, worker_device);
    Build(setter.Apply(Scope::Root(&g)), batch);
    sgd = std::make_unique<train::GradientDescent>(kLearningRate);
    sync = std::make_unique<train::SyncReplicasOptimizer>(*sgd, to_aggregate, total);
    train = sync->Minimize(Scope::Root(&g).WithDevice(worker_device), loss, step);
    init = GlobalVariablesInitializer(Scope::Root(&g));
  }
  // One process, plain SGD.
  explicit Model(int batch) {
    Build(Scope::Root(&g), batch);
    sgd = std::make_unique<train::GradientDescent>(kLearningRate);
    train = sgd->Minimize(Scope::Root(&g), loss, &step);
    init = GlobalVariablesInitializer(Scope::Root(&g));
  }
  void Build(const Scope& s, int batch) {
    x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, {batch, 3});
    y = ops::Placeholder(s.WithOpName("y"), DT_FLOAT, {batch, 1});
    w = GetVariable(s, "w", {3, 1}, init::GlorotUniform(7));
    b = GetVariable(s, "b", {1}, init::Zeros());
    step = train::GetOrCreateGlobalStep(s);
    loss = ops::MeanSquaredError(s, ops::Add(s, ops::MatMul(s, x, w.value()), b.value()), y);
  }
  FeedDict Feed(const Tensor& xs, const Tensor& ys) const { return {{x, xs}, {y, ys}}; }
};

// Rows [begin, end) of batch `seed` (32 rows).
void Batch(uint32_t seed, int begin, int end, Tensor* x, Tensor* y) {
  Tensor all = testing::RandomTensor({32, 3}, seed);
  *x = Tensor(DT_FLOAT, {end - begin, 3});
  *y = Tensor(DT_FLOAT, {end - begin, 1});
  for (int i = begin; i < end; ++i) {
    const float* r = all.data<float>() + 3 * i;
    std::copy(r, r + 3, x->data<float>() + 3 * (i - begin));
    y->data<float>()[i - begin] = r[0] - 2 * r[1] + 3 * r[2] + 0.5f;
  }
}

// A ps and `workers` worker servers in this process, one model and session per worker; the
// chief has initialised everything and every worker its local step.
struct SyncCluster {
  std::unique_ptr<Server> ps;
  std::vector<std::unique_ptr<Server>> servers;
  std::vector<std::unique_ptr<Model>> models;
  std::vector<std::unique_ptr<Session>> sessions;

  SyncCluster(int workers, int batch, int to_aggregate) {
    std::vector<std::string> addr;
    auto spec =
        ClusterSpec::Parse(testing::LoopbackCluster({{"ps", 1}, {"worker", workers}}, &addr))
            .ValueOrThrow();
    ps = std::make_unique<Server>(spec, "ps", 0);
    for (int i = 0; i < workers; ++i)
      servers.push_back(std::make_unique<Server>(spec, "worker", i));
    for (int i = 0; i < workers; ++i) {
      models.push_back(std::make_unique<Model>("/job:worker/task:" + std::to_string(i), batch,
                                               to_aggregate, workers));
      SessionOptions o;
      o.target = servers[i]->target();
      sessions.push_back(std::make_unique<Session>(models.back()->g, o));
    }
    Model& chief = *models[0];
    sessions[0]->Run({}, {}, {chief.init});  // then what reads the initialised global step
    sessions[0]->Run(
        {}, {}, {chief.sync->chief_init_op(), chief.sync->InitTokensOp(Scope::Root(&chief.g))});
    for (int i = 0; i < workers; ++i)
      sessions[i]->Run({}, {}, {models[i]->sync->local_step_init_op()});
  }
  // Worker i's step on rows [begin, end) of batch `seed`.
  Status Step(int i, uint32_t seed, int begin, int end, int64_t timeout_ms = 60000) {
    Tensor x, y;
    Batch(seed, begin, end, &x, &y);
    RunOptions o;
    o.timeout_in_ms = timeout_ms;
    std::vector<Tensor> out;
    return sessions[i]->TryRun(models[i]->Feed(x, y), {}, {models[i]->train}, &out, o);
  }
  int64_t GlobalStep() { return sessions[0]->Run({models[0]->step.value()})[0].scalar<int64_t>(); }
  int64_t Dropped() {
    return sessions[0]->Run({models[0]->sync->num_dropped()})[0].scalar<int64_t>();
  }
};

// Runs worker(0) and worker(1) on two threads; the first error, or OK.
Status RunTwoWorkers(const std::function<Status(int)>& worker) {
  auto w0 = std::async(std::launch::async, worker, 0);
  auto w1 = std::async(std::launch::async, worker, 1);
  Status s0 = w0.get(), s1 = w1.get();
  return s0.ok() ? s1 : s0;
}

TEST_CASE("Sync replicas: two workers with a batch of 16 each match one process with 32",
          "[distributed][sync]") {
  constexpr int kSteps = 5;
  SyncCluster c(/*workers=*/2, /*batch=*/16, /*to_aggregate=*/2);
  train::SyncReplicasChief chief(*c.sessions[0], *c.models[0]->sync, /*last_step=*/kSteps);
  // Both workers' step k, then step k + 1: the tokens sit in one queue, so a worker a whole step
  // ahead would take the other's token (as in TensorFlow) and hand in two gradients of one
  // update, or, after its last step, leave the other waiting for a token that never comes (this
  // test hung 1 run in 10 before the barrier). In lockstep every update averages one gradient
  // of each worker, which is what a batch of 32 in one process computes.
  for (int k = 0; k < kSteps; ++k) {
    INFO("step " << k);
    REQUIRE(RunTwoWorkers([&](int i) { return c.Step(i, 100 + k, 16 * i, 16 * (i + 1)); }).ok());
  }
  chief.Stop();
  REQUIRE(chief.status().ok());
  CHECK(chief.updates() == kSteps);
  CHECK(c.GlobalStep() == kSteps);
  CHECK(c.Dropped() == 0);
  // Each worker's local step followed the global step.
  CHECK(c.sessions[1]->Run({c.models[1]->sync->local_step().value()})[0].scalar<int64_t>() ==
        kSteps);

  Model one(32);
  Session sess(one.g);
  sess.Run({}, {}, {one.init});
  const Tensor w_init = sess.Run({one.w.value()})[0];
  for (int k = 0; k < kSteps; ++k) {
    Tensor x, y;
    Batch(100 + k, 0, 32, &x, &y);
    sess.Run(one.Feed(x, y), {}, {one.train});
  }
  auto want = sess.Run({one.w.value(), one.b.value()});
  auto got = c.sessions[1]->Run({c.models[1]->w.value(), c.models[1]->b.value()});
  // The mean of two half-batch means vs one whole-batch mean: float32 rounding apart.
  CHECK(testing::MaxAbsDiff(got[0], want[0]) < 1e-5);
  CHECK(testing::MaxAbsDiff(got[1], want[1]) < 1e-5);
  CHECK(testing::MaxAbsDiff(want[0], w_init) > 1e-2);  // the steps did move the weights
}

TEST_CASE("Sync replicas: a gradient from an older step is dropped and counted",
          "[distributed][sync]") {
  SyncCluster c(/*workers=*/3, /*batch=*/8, /*to_aggregate=*/2);
  train::SyncReplicasChief chief(*c.sessions[0], *c.models[0]->sync, 0, /*timeout_s=*/1);
  auto w0 = std::async(std::launch::async, [&] { return c.Step(0, 1, 0, 8); });
  auto w1 = std::async(std::launch::async, [&] { return c.Step(1, 2, 0, 8); });
  REQUIRE(w0.get().ok());
  REQUIRE(w1.get().ok());
  CHECK(c.GlobalStep() == 1);
  CHECK(c.Dropped() == 0);
  const auto w_before = c.sessions[0]->Run({c.models[0]->w.value()});
  // Worker 2 still computes at step 0: its gradient is stale, and it takes the third token.
  REQUIRE(c.Step(2, 3, 0, 8).ok());
  CHECK(c.Dropped() == 1);
  CHECK(c.GlobalStep() == 1);
  CHECK(c.sessions[2]->Run({c.models[2]->sync->local_step().value()})[0].scalar<int64_t>() == 1);
  CHECK(c.sessions[0]->Run({c.models[0]->w.value()})[0].BitwiseEqual(w_before[0]));
  // Now at step 1, worker 2's gradient counts.
  auto w2 = std::async(std::launch::async, [&] { return c.Step(2, 4, 0, 8); });
  REQUIRE(c.Step(0, 5, 0, 8).ok());
  REQUIRE(w2.get().ok());
  CHECK(c.GlobalStep() == 2);
  CHECK(c.Dropped() == 1);
}

TEST_CASE("Sync replicas: with a backup worker, progress goes on while one worker is gone",
          "[distributed][sync]") {
  SyncCluster c(/*workers=*/3, /*batch=*/8, /*to_aggregate=*/2);
  constexpr int kLastStep = 8;
  train::SyncReplicasChief chief(*c.sessions[0], *c.models[0]->sync, kLastStep);
  // As pf-train's workers: train until the global step is reached. Worker 2 never runs.
  std::atomic<int> steps_run{0};
  auto worker = [&](int i) {
    for (int k = 0; c.GlobalStep() < kLastStep; ++k) {
      Status s = c.Step(i, 10 * i + k, 0, 8, /*timeout_ms=*/30000);
      if (!s.ok()) return s;
      ++steps_run;
    }
    return Status::OK();
  };
  REQUIRE(RunTwoWorkers(worker).ok());
  chief.Stop();
  REQUIRE(chief.status().ok());
  CHECK(c.GlobalStep() == kLastStep);
  // Every update took two fresh gradients; the tokens meant for the missing worker make some of
  // the others' gradients stale, and at most one per worker was handed in after the last update.
  const int64_t stale = c.Dropped();
  CHECK(2 * kLastStep + stale <= steps_run);
  CHECK(steps_run <= 2 * kLastStep + stale + 2);
}

TEST_CASE("Sync replicas: a missing worker without backup ends the step with a timeout",
          "[distributed][sync]") {
  SyncCluster c(/*workers=*/2, /*batch=*/8, /*to_aggregate=*/2);
  train::SyncReplicasChief chief(*c.sessions[0], *c.models[0]->sync, 0, /*timeout_s=*/0.5);
  Status s = c.Step(0, 1, 0, 8, /*timeout_ms=*/800);
  CHECK(s.code() == Code::kDeadlineExceeded);
  CHECK_THAT(s.message(), Contains("timed out after 800 ms") &&
                              Contains("dequeue from queue 'sync_token_q' (empty)"));
  CHECK(c.GlobalStep() == 0);
  chief.Stop();
  CHECK(chief.status().ok());
  CHECK(chief.updates() == 0);
}

}  // namespace
}  // namespace pf::sync_training_test
