// The Executor on its own (no Session, no placer): feeds and fetches, pending counts, the first
// error, asynchronous kernels, executors meeting in one StepGroup, and scheduling on small
// pools. Every step that could hang runs under a timeout so that a deadlock fails the test.
#include "placeflow/executor/executor.h"

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "tests/testing/test_util.h"

namespace pf::executor_test {
namespace {

using Catch::Matchers::Contains;

// ---- test-only ops ----
// Order in which TestExecRecord kernels ran, by node name.
std::mutex log_mu;
std::vector<std::string>* run_log = new std::vector<std::string>();

// Which thread ran each TestExecRecord node, by node name.
std::map<std::string, std::thread::id>* run_threads = new std::map<std::string, std::thread::id>();

std::vector<std::string> TakeLog() {
  std::lock_guard<std::mutex> lock(log_mu);
  return std::exchange(*run_log, {});
}

// How long each TestExecRecord node sleeps, in microseconds (0: none).
std::atomic<int> record_sleep_us{0};

// TestExecRecord(x: N floats) -> 1 + sum(x), logging its name; `cheap` picks inline scheduling.
class RecordOp : public OpKernel {
 public:
  explicit RecordOp(const Node& n) : OpKernel(n), cheap_(n.attr<bool>("cheap")) {}
  bool IsExpensive() const override { return !cheap_; }
  Status Compute(OpKernelContext* ctx) override {
    {
      std::lock_guard<std::mutex> lock(log_mu);
      run_log->push_back(name());
      (*run_threads)[name()] = std::this_thread::get_id();
    }
    if (const int us = record_sleep_us.load())
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    float sum = 1;
    for (int i = 0; i < ctx->num_inputs(); ++i) sum += ctx->input(i).data<float>()[0];
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    out->data<float>()[0] = sum;
    return Status::OK();
  }

 private:
  bool cheap_;
};

class FailOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override { return errors::Internal("boom"); }
};

// TestExecMeet(x) -> x once `meet_count` TestExecMeet kernels are running at the same time;
// an error after 30 s without them. Only kernels on different threads can meet.
std::atomic<int> meet_arrived{0};
int meet_count = 2;
class MeetOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    meet_arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (meet_arrived.load() < meet_count) {
      if (std::chrono::steady_clock::now() > deadline)
        return errors::DeadlineExceeded(name(), " met nobody: its branches ran one at a time");
      std::this_thread::yield();
    }
    return ctx->ForwardInput(0, 0);
  }
};

// TestExecWait() -> the tensor sent under `key`, asynchronously (like _Recv).
class WaitOp : public OpKernel {
 public:
  explicit WaitOp(const Node& n) : OpKernel(n), key_(n.attr<std::string>("key")) {}
  bool IsAsync() const override { return true; }
  Status Compute(OpKernelContext*) override { return errors::Internal("asynchronous only"); }
  void ComputeAsync(OpKernelContext* ctx, std::function<void(Status)> done) override {
    ctx->rendezvous()->RecvAsync(key_, [ctx, done](const Status& s, const Tensor& t) {
      done(s.ok() ? ctx->SetOutput(0, t) : s);
    });
  }

 private:
  std::string key_;
};

// TestExecSignal(x) -> x, sending x under `key` (like _Send).
class SignalOp : public OpKernel {
 public:
  explicit SignalOp(const Node& n) : OpKernel(n), key_(n.attr<std::string>("key")) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(ctx->rendezvous()->Send(key_, ctx->input(0)));
    return ctx->ForwardInput(0, 0);
  }

 private:
  std::string key_;
};

PF_REGISTER_OP(OpDef("TestExecRecord")
                   .InputList("x", "float", "N")
                   .Output("y", "float")
                   .RequiredAttr("N")
                   .Attr("cheap", false)
                   .SetStateful()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("TestExecRecord", "CPU"), RecordOp);
PF_REGISTER_OP(
    OpDef("TestExecFail").Input("x", "float").Output("y", "float").SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("TestExecFail", "CPU"), FailOp);
PF_REGISTER_OP(
    OpDef("TestExecMeet").Input("x", "float").Output("y", "float").SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("TestExecMeet", "CPU"), MeetOp);
PF_REGISTER_OP(OpDef("TestExecWait")
                   .Output("y", "float")
                   .RequiredAttr("key")
                   .SetStateful()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("TestExecWait", "CPU"), WaitOp);
PF_REGISTER_OP(OpDef("TestExecSignal")
                   .Input("x", "float")
                   .Output("y", "float")
                   .RequiredAttr("key")
                   .SetStateful()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("TestExecSignal", "CPU"), SignalOp);

Output Record(const Scope& s, const std::string& name, const std::vector<Output>& in,
              bool cheap = false) {
  return NodeBuilder(s.WithOpName(name), "TestExecRecord")
      .InputList(in)
      .Attr("cheap", cheap)
      .Finalize();
}
Output Fail(const Scope& s, const std::string& name, Output in) {
  return NodeBuilder(s.WithOpName(name), "TestExecFail").Input(in).Finalize();
}
Output Wait(const Scope& s, const std::string& name, const std::string& key) {
  return NodeBuilder(s.WithOpName(name), "TestExecWait").Attr("key", key).Finalize();
}
Output Signal(const Scope& s, const std::string& name, Output in, const std::string& key) {
  return NodeBuilder(s.WithOpName(name), "TestExecSignal").Input(in).Attr("key", key).Finalize();
}

float Scalar(const Tensor& t) { return t.data<float>()[0]; }

// One CPU device and the kernels its executors ask for (an executor borrows its kernels).
class Harness {
 public:
  explicit Harness(ThreadPool* pool = nullptr) : cpu_(NewCpuDevice(0)), pool_(pool) {}
  int64_t small_step_us = ExecutorSpec().small_step_us;

  std::unique_ptr<Executor> Create(const std::vector<Node*>& nodes,
                                   const std::vector<Output>& feeds,
                                   const std::vector<Output>& fetches) {
    auto exec = TryCreate(nodes, feeds, fetches);
    REQUIRE(exec.ok());
    return std::move(exec).value();
  }

  StatusOr<std::unique_ptr<Executor>> TryCreate(const std::vector<Node*>& nodes,
                                                const std::vector<Output>& feeds,
                                                const std::vector<Output>& fetches) {
    ExecutorSpec spec;
    spec.nodes = nodes;
    for (Node* n : nodes) spec.device[n] = cpu_.get();
    spec.feeds = feeds;
    spec.fetches = fetches;
    spec.pool = pool_;
    spec.small_step_us = small_step_us;
    return Executor::Create(spec, [this](const Node& n, Device*) -> StatusOr<OpKernel*> {
      PF_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> k, KernelRegistry::Global()->Create(n, "CPU"));
      kernels_.push_back(std::move(k));
      return kernels_.back().get();
    });
  }

 private:
  std::unique_ptr<Device> cpu_;
  ThreadPool* pool_;
  std::vector<std::unique_ptr<OpKernel>> kernels_;
};

std::vector<Node*> NodesOf(const std::vector<Output>& outputs) {
  std::vector<Node*> nodes;
  for (const Output& o : outputs) nodes.push_back(o.node);
  return nodes;
}

// Runs one step on a thread of its own and waits at most a minute for it, so that a deadlock
// fails the test instead of hanging it (the stuck thread is abandoned).
Status RunWithTimeout(const Executor& exec, const std::vector<Tensor>& feeds,
                      std::vector<Tensor>* fetches) {
  auto result = std::make_shared<std::promise<Status>>();
  std::future<Status> f = result->get_future();
  std::thread([&exec, feeds, fetches, result] {
    result->set_value(exec.Run(feeds, fetches));
  }).detach();
  if (f.wait_for(std::chrono::seconds(60)) != std::future_status::ready)
    FAIL("the step did not finish within 60 s");
  return f.get();
}

// Where a RunAsync step ends: `done` fulfils a future.
struct StepDone {
  std::promise<void> promise;
  std::future<void> future = promise.get_future();
  std::function<void()> Callback() {
    return [this] { promise.set_value(); };
  }
  bool Wait() { return future.wait_for(std::chrono::seconds(60)) == std::future_status::ready; }
};

TEST_CASE("Executor: feeds in, fetches out, one layout for every step", "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2});
  Output w = ops::Const(root.WithOpName("w"), Tensor::FromVector<float>({10, 20}, {2}));
  Output mul = ops::Mul(root.WithOpName("mul"), x, w);
  Output y = ops::Add(root.WithOpName("y"), mul, w);
  Harness h;
  // The fed placeholder is not part of the subgraph: its edges are cut.
  auto exec = h.Create(NodesOf({w, mul, y}), {x}, {y, x});
  CHECK(exec->num_nodes() == 3);
  for (float v : {1.f, 2.f}) {
    Tensor in = Tensor::FromVector<float>({v, 2 * v}, {2});
    std::vector<Tensor> out;
    RunMetadata stats;
    REQUIRE(exec->Run({in}, &out, /*step_id=*/0, &stats).ok());
    REQUIRE(out.size() == 2);
    CHECK(out[0].DebugString() ==
          Tensor::FromVector<float>({10 * v + 10, 40 * v + 20}, {2}).DebugString());
    CHECK(out[1].SharesBufferWith(in));  // a fetched feed is the fed tensor
    CHECK(stats.step_stats.size() == 3);
  }
}

TEST_CASE("Executor: pending counts join a diamond and control edges, fresh every step",
          "[executor]") {
  ThreadPool pool(2);
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root.WithOpName("c"), 0.f);
  Output a = Record(root, "a", {c});
  Output left = Record(root, "left", {a});
  Output right = Record(root, "right", {a}, /*cheap=*/true);
  Output join = Record(root, "join", {left, right});
  Output after = Record(root.WithControlDependencies({Operation(join.node)}), "after", {c});
  Harness h(&pool);
  auto exec = h.Create(NodesOf({c, a, left, right, join, after}), {}, {join});
  TakeLog();
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step);
    std::vector<Tensor> out;
    REQUIRE(RunWithTimeout(*exec, {}, &out).ok());
    CHECK(Scalar(out[0]) == 5);  // a = 1, left = right = 2, join = 1 + 2 + 2
    std::vector<std::string> log = TakeLog();
    REQUIRE(log.size() == 5);  // each node exactly once
    auto at = [&](const std::string& n) { return std::find(log.begin(), log.end(), n); };
    CHECK(log.front() == "a");
    CHECK(at("left") < at("join"));
    CHECK(at("right") < at("join"));
    CHECK(log.back() == "after");  // waits for join through the control edge
  }
}

TEST_CASE("Executor: the first error wins, names its node, and skips what depends on it",
          "[executor][errors]") {
  // No pool threads: everything runs inline in a fixed order, so "first" is well defined.
  ThreadPool inline_only(0);
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root.WithOpName("c"), 1.f);
  Output bad = Fail(root, "bad", c);
  Output also_bad = Fail(root, "also_bad", c);
  Output downstream = Record(root, "downstream", {bad});
  Harness h(&inline_only);
  auto exec = h.Create(NodesOf({c, bad, also_bad, downstream}), {}, {downstream, also_bad});
  TakeLog();
  std::vector<Tensor> out;
  Status s = RunWithTimeout(*exec, {}, &out);
  CHECK(s.code() == Code::kInternal);
  CHECK_THAT(s.message(), Contains("boom"));
  CHECK_THAT(
      s.message(),
      Contains("{{node bad}} = TestExecFail[] on /job:localhost/replica:0/task:0/device:CPU:0"));
  CHECK_THAT(s.message(), !Contains("also_bad"));
  CHECK(TakeLog().empty());  // downstream never ran
  CHECK_FALSE(out[0].IsInitialized());
}

TEST_CASE("Executor::Create rejects unplaced nodes, dangling inputs and foreign fetches",
          "[executor][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root.WithOpName("c"), 1.f);
  Output y = ops::Neg(root.WithOpName("y"), c);
  Harness h;
  auto dangling = h.TryCreate({y.node}, {}, {y});
  CHECK_THAT(dangling.status().message(),
             Contains("Input 'c:0' of node 'y' is neither fed nor in the subgraph"));
  auto foreign = h.TryCreate({c.node}, {}, {y});
  CHECK_THAT(foreign.status().message(), Contains("Fetch 'y:0' is not in the subgraph"));
  ExecutorSpec spec;
  spec.nodes = {c.node};
  auto unplaced = Executor::Create(spec, [](const Node&, Device*) -> StatusOr<OpKernel*> {
    return errors::Internal("no kernel expected");
  });
  CHECK_THAT(unplaced.status().message(), Contains("Node 'c' was not placed"));
}

TEST_CASE("Executors of one step meet in the StepGroup's rendezvous", "[executor][rendezvous]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root.WithOpName("c"), 41.f);
  Output sent = Signal(root, "send", c, "k");
  Output got = Wait(root, "recv", "k");
  Output plus_one = Record(root, "plus_one", {got});
  Harness h;
  auto sender = h.Create(NodesOf({c, sent}), {}, {sent});
  auto receiver = h.Create(NodesOf({got, plus_one}), {}, {plus_one});
  StepGroup group;
  std::vector<Tensor> sender_out, receiver_out;
  StepDone receiver_done, sender_done;
  // The receiver starts first: its waiting kernel holds no thread, so RunAsync returns.
  receiver->RunAsync({}, &receiver_out, 0, &group, receiver_done.Callback());
  sender->RunAsync({}, &sender_out, 0, &group, sender_done.Callback());
  REQUIRE(sender_done.Wait());
  REQUIRE(receiver_done.Wait());
  CHECK(group.status().ok());
  CHECK(Scalar(receiver_out[0]) == 42);
}

TEST_CASE("An error in one executor wakes another's waiting kernel", "[executor][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root.WithOpName("c"), 1.f);
  Output bad = Fail(root, "bad", c);
  Output never_sent = Signal(root, "send", bad, "k");
  Output waiting = Wait(root, "recv", "k");
  Harness h;
  auto failing = h.Create(NodesOf({c, bad, never_sent}), {}, {never_sent});
  auto receiver = h.Create(NodesOf({waiting}), {}, {waiting});
  StepGroup group;
  std::vector<Tensor> failing_out, receiver_out;
  StepDone receiver_done, failing_done;
  receiver->RunAsync({}, &receiver_out, 0, &group, receiver_done.Callback());
  failing->RunAsync({}, &failing_out, 0, &group, failing_done.Callback());
  REQUIRE(failing_done.Wait());
  REQUIRE(receiver_done.Wait());
  // The step reports the failing node, not the Recv it woke.
  CHECK_THAT(group.status().message(), Contains("{{node bad}}"));
  CHECK_THAT(group.status().message(), !Contains("recv"));
  CHECK_FALSE(receiver_out[0].IsInitialized());
}

TEST_CASE("Small pools finish wide steps and late sends without deadlock",
          "[executor][scheduling]") {
  const int threads = GENERATE(0, 1, 2);
  INFO(threads << " pool threads");
  ThreadPool pool(threads);
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root.WithOpName("c"), 0.f);
  std::vector<Output> all = {c};
  // A waiting kernel that only a send at the end of a long expensive chain completes.
  Output late = Wait(root, "late", "k");
  Output chain = c;
  for (int i = 0; i < 10; ++i) chain = Record(root, "chain", {chain});
  Output sent = Signal(root, "send", chain, "k");
  all.insert(all.end(), {late, sent});
  std::vector<Output> ends = {late, sent};
  // Eight branches of expensive and cheap kernels, more than the pool has threads.
  for (int b = 0; b < 8; ++b) {
    Output x = c;
    for (int i = 0; i < 3; ++i) {
      x = Record(root, "branch", {x}, /*cheap=*/i == 1);
      all.push_back(x);
    }
    ends.push_back(x);
  }
  for (Node* n = chain.node; n != c.node; n = n->input(0).node) all.push_back(Output(n, 0));
  Output total = Record(root, "total", ends);
  all.push_back(total);
  Harness h(&pool);
  auto exec = h.Create(NodesOf(all), {}, {total});
  for (int step = 0; step < 3; ++step) {
    std::vector<Tensor> out;
    REQUIRE(RunWithTimeout(*exec, {}, &out).ok());
    // late = sent = 10; each branch 3; total = 1 + 10 + 10 + 8 * 3.
    CHECK(Scalar(out[0]) == 45);
  }
  TakeLog();
}

// c -> first -> second [-> third, cheap] on a pool with a worker per core, whose caller hands
// expensive nodes to the pool unless the executor's last step took under `small_step_us`.
struct CallerBesidePool {
  CallerBesidePool(int64_t small_step_us, bool third)
      : pool(std::max(1, static_cast<int>(std::thread::hardware_concurrency()))), h(&pool) {
    Scope root = Scope::Root(&g);
    Output c = ops::Const(root.WithOpName("c"), 0.f);
    Output x = Record(root, "first", {c});
    Output y = Record(root, "second", {x});
    std::vector<Output> nodes = {c, x, y};
    if (third) nodes.push_back(Record(root, "third", {y}, /*cheap=*/true));
    h.small_step_us = small_step_us;
    exec = h.Create(NodesOf(nodes), {}, {nodes.back()});
  }
  ThreadPool pool;
  Graph g;
  Harness h;
  std::unique_ptr<Executor> exec;
};

TEST_CASE("A caller beside a pool with a worker per core hands expensive nodes to the pool",
          "[executor][scheduling][threads]") {
  // The caller runs the cheap root (c) and hands the chain to the pool: the chain runs on one
  // worker, never on the caller, which would be one thread more than cores. (It kept the first
  // expensive node inline before: mnist_mlp_epoch's caller and two workers shared two cores.)
  // No step counts as small here (see the next test).
  CallerBesidePool t(/*small_step_us=*/0, /*third=*/true);
  for (int step = 0; step < 3; ++step) {
    std::vector<Tensor> out;
    REQUIRE(t.exec->Run({}, &out).ok());
    CHECK(Scalar(out[0]) == 3);
    CHECK(run_threads->at("first") != std::this_thread::get_id());
    CHECK(run_threads->at("second") == run_threads->at("first"));
    CHECK(run_threads->at("third") == run_threads->at("first"));
  }
  TakeLog();
}

TEST_CASE("A caller beside a full pool runs a step itself when the last one was small",
          "[executor][scheduling][threads]") {
  // Handing a tiny step to a sleeping worker and waking the caller again costs more than the
  // step. Which thread runs `first` follows the previous step's time: unknown (the first step)
  // or at least small_step_us hands the step over, less keeps it on the caller. The bound is
  // 20 ms here (50 us by default), so that a slow machine or a sanitizer keeps short steps short.
  CallerBesidePool t(/*small_step_us=*/20'000, /*third=*/false);
  const auto caller = std::this_thread::get_id();
  // Per step: the nodes' sleep, and whether `first` runs on the caller.
  const std::vector<std::pair<int, bool>> steps = {
      {0, false},      // no step before: handed over
      {0, true},       // the last step was short
      {0, true},       //
      {15'000, true},  // decided by the last (short) step; this one takes 30 ms
      {0, false},      // the last step was long
      {0, true},       // short again
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    INFO("step " << i);
    record_sleep_us = steps[i].first;
    std::vector<Tensor> out;
    REQUIRE(t.exec->Run({}, &out).ok());
    CHECK(Scalar(out[0]) == 2);
    CHECK((run_threads->at("first") == caller) == steps[i].second);
    CHECK(run_threads->at("second") == run_threads->at("first"));
  }
  record_sleep_us = 0;
  TakeLog();
}

TEST_CASE("An expensive chain stays on one thread; independent branches run side by side",
          "[executor][scheduling][threads]") {
  ThreadPool pool(1);  // one worker and the caller
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root.WithOpName("c"), 0.f);
  std::vector<Output> all = {c}, ends;
  std::vector<std::vector<std::string>> branches(8);
  for (int b = 0; b < 8; ++b) {
    Output x = c;
    // The first two branches start by meeting each other: they must run at the same time.
    if (b < 2) {
      x = NodeBuilder(root.WithOpName("meet"), "TestExecMeet").Input(x).Finalize();
      all.push_back(x);
    }
    for (int i = 0; i < 10; ++i) {
      x = Record(root, "b" + std::to_string(b) + "_" + std::to_string(i), {x});
      all.push_back(x);
      branches[b].push_back(x.node->name());
    }
    ends.push_back(x);
  }
  Output total = Record(root, "total", ends);
  all.push_back(total);
  Harness h(&pool);
  auto exec = h.Create(NodesOf(all), {}, {total});
  meet_arrived = 0;
  std::vector<Tensor> out;
  Status s = RunWithTimeout(*exec, {}, &out);
  REQUIRE(s.ok());
  CHECK(Scalar(out[0]) == 1 + 8 * 10);
  std::set<std::thread::id> used;
  for (const auto& nodes : branches) {
    std::set<std::thread::id> threads;
    for (const std::string& n : nodes) threads.insert(run_threads->at(n));
    INFO(nodes.front());
    CHECK(threads.size() == 1);  // each node ran its successor inline: no hand-off
    used.insert(threads.begin(), threads.end());
  }
  CHECK(used.size() == 2);  // the met branches ran on the worker and on the caller's thread
  TakeLog();
}

}  // namespace
}  // namespace pf::executor_test
