// Session and executor behaviour: results, caching, pruning, errors users hit, parallelism.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "placeflow/devices/device.h"
#include "placeflow/ops/op_util.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/test_util.h"

namespace pf::session_test {
namespace {

using Catch::Matchers::Contains;

// ---- test-only ops ----
// TestMeet: blocks until `n` TestMeet kernels of the step are inside at once (or 20 s pass).
// It can only succeed when the executor runs independent branches concurrently.
struct Meeting {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
};
Meeting* meeting = new Meeting();

class TestMeetOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    std::unique_lock<std::mutex> lock(meeting->mu);
    ++meeting->arrived;
    meeting->cv.notify_all();
    bool met =
        meeting->cv.wait_for(lock, std::chrono::seconds(20), [] { return meeting->arrived >= 2; });
    if (!met) return errors::Aborted("branches did not run concurrently");
    return ctx->ForwardInput(0, 0);
  }
};

class TestFailOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override { return errors::Internal("injected failure"); }
};

std::weak_ptr<Buffer>* source_buffer = new std::weak_ptr<Buffer>();
class TestSourceOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    *source_buffer = out->buffer();
    return Status::OK();
  }
};
class TestExpiredOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    out->flat<bool>()[0] = source_buffer->expired();
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("TestMeet")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", {DT_FLOAT})
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("TestMeet", "CPU"), TestMeetOp);
PF_REGISTER_OP(OpDef("TestFail")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", {DT_FLOAT})
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("TestFail", "CPU"), TestFailOp);
PF_REGISTER_OP(
    OpDef("TestSource").Output("y", "float").SetStateful().SetShapeFn([](ShapeContext& c) {
      c.set_output(0, Shape{1024});
      return Status::OK();
    }));
PF_REGISTER_KERNEL(KernelDef("TestSource", "CPU"), TestSourceOp);
PF_REGISTER_OP(OpDef("TestExpired")
                   .Input("x", "float")
                   .Output("y", "bool")
                   .SetStateful()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("TestExpired", "CPU"), TestExpiredOp);

TEST_CASE("Run returns fetches in order and reuses the prepared signature", "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 2});
  Output w = ops::Const(root, Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}));
  Output y = ops::MatMul(root, x, w);
  Output s = ops::Sum(root, y);
  Session sess(g);
  Tensor batch = Tensor::FromVector<float>({1, 1, 0, 1}, {2, 2});
  auto out = sess.Run({{x, batch}}, {s, y});
  CHECK(out[0].DebugString() == "Tensor<float []> 17");
  CHECK(out[1].DebugString() == "Tensor<float [2,2]> [[4, 6], [3, 4]]");
  CHECK(sess.num_cached_signatures() == 1);
  sess.Run({{x, batch}}, {s, y});
  CHECK(sess.num_cached_signatures() == 1);
  sess.Run({{x, batch}}, {y});
  CHECK(sess.num_cached_signatures() == 2);
  // Feeding an intermediate tensor cuts the graph above it: x need not be fed.
  CHECK(sess.Run({{y, Tensor::FromVector<float>({1, 2}, {1, 2})}}, {s})[0].DebugString() ==
        "Tensor<float []> 3");
  // Fetching a fed tensor returns it.
  CHECK(sess.Run({{x, batch}}, {x})[0].SharesBufferWith(batch));
  // By name.
  auto named = sess.RunNamed({{"x:0", batch}}, {"Sum"});
  CHECK(named[0].DebugString() == "Tensor<float []> 17");
  CHECK(sess.DevicePlacement().at("MatMul") == "/job:localhost/replica:0/task:0/device:CPU:0");
}

TEST_CASE("Run takes TensorFlow's mixed list of operations and tensors", "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {});
  Variable v = GetVariable(root, "v", {},
                           [](const Scope& s, const Shape&, DType) { return ops::Const(s, 10.f); });
  Output loss = ops::Mul(root.WithOpName("loss"), v.value(), x);
  Operation train_op = ops::AssignAdd(root.WithOpName("train"), v.ref(), ops::Const(root, 1.f));
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  // sess.run([train_op, loss], feed_dict={x: 2}) in TensorFlow.
  std::vector<Tensor> r = sess.Run({{x, Tensor::FromVector<float>({2}, {})}}, {train_op, loss});
  REQUIRE(r.size() == 2);
  CHECK_FALSE(r[0].IsInitialized());  // an operation gives no value (TF's None)
  const float l = r[1].scalar<float>();
  CHECK((l == 20.f || l == 22.f));  // before or after the update: TF leaves the order open too
  CHECK(sess.Run({v.value()})[0].scalar<float>() == 11.f);  // the operation ran
  // Only tensors, only operations, and the one-argument form.
  CHECK(sess.Run({{x, Tensor::FromVector<float>({3}, {})}}, {loss})[0].scalar<float>() == 33.f);
  CHECK_FALSE(sess.Run({train_op})[0].IsInitialized());
  CHECK(sess.Run({v.value(), train_op})[0].scalar<float>() >= 12.f);
}

TEST_CASE("Prepared signatures are bounded: the least recently used are dropped", "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  std::vector<Output> outs;
  for (int i = 0; i < 6; ++i) outs.push_back(ops::Const(root, static_cast<float>(i)));
  SessionOptions o;
  o.max_cached_signatures = 3;
  Session sess(g, o);
  auto run = [&](int i) { CHECK(sess.Run({outs[i]})[0].scalar<float>() == i); };
  run(0), run(1), run(2);
  CHECK(sess.num_cached_signatures() == 3);
  CHECK(sess.num_evicted_signatures() == 0);
  run(0);  // a hit: 0 becomes the most recent, 1 the least
  CHECK(sess.num_evicted_signatures() == 0);
  run(3);  // drops 1
  CHECK(sess.num_cached_signatures() == 3);
  CHECK(sess.num_evicted_signatures() == 1);
  run(0), run(2), run(3);  // all still cached
  CHECK(sess.num_evicted_signatures() == 1);
  run(1);  // rebuilt, drops 0 (least recent now)
  CHECK(sess.num_evicted_signatures() == 2);
  // The default bound holds over many signatures (TF-style code building fetch lists in a loop).
  Session many(g);
  for (int i = 0; i < 300; ++i) {
    std::vector<Output> fetch;
    for (int b = 0; b < 6; ++b) {
      if ((i >> b) & 1) fetch.push_back(outs[b]);
    }
    fetch.push_back(outs[i % 6]);
    many.Run(fetch);
  }
  CHECK(many.num_cached_signatures() <= 256);
}

TEST_CASE("Fetching a variable while another thread trains it never reads a torn value",
          "[executor][threads]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const int64_t n = 1 << 20;
  Variable v = GetVariable(root, "v", {n}, [](const Scope& s, const Shape& shape, DType) {
    return ops::Const(s, Tensor(DT_FLOAT, shape));  // zeros
  });
  Output step = ops::AssignAdd(root, v.ref(), ops::OnesLike(root, v.value()));
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  std::atomic<bool> done{false};
  std::thread trainer([&] {
    for (int i = 0; i < 100; ++i) sess.Run({}, {}, {step});
    done = true;
  });
  int torn = 0, reads = 0;
  while (!done || reads == 0) {
    Tensor t = sess.Run({v.value()})[0];
    const float* p = t.data<float>();
    for (int64_t i = 1; i < n; ++i) {
      if (p[i] != p[0]) {
        ++torn;
        break;
      }
    }
    ++reads;
  }
  trainer.join();
  INFO(reads << " snapshots");
  CHECK(torn == 0);
  CHECK(sess.Run({v.value()})[0].data<float>()[n - 1] == 100.f);
}

TEST_CASE("Errors users hit: feeds, fetches, uninitialised variables", "[executor][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 600});
  Variable w = GetVariable(root.WithVariableScope("affine0"), "w", {600, 4});
  Output y = ops::MatMul(root, x, w.value());
  Session sess(g);
  try {
    sess.Run({y});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_THAT(
        e.what(),
        Contains(
            "You must feed a value for placeholder tensor 'x' with dtype float and shape [?,600]"));
    CHECK_THAT(e.what(), Contains("{{node x}}"));
  }
  CHECK_THROWS_WITH(
      sess.Run({{x, Tensor(DT_FLOAT, {3, 5})}}, {y}),
      Contains("Cannot feed value of shape [3,5] for Tensor 'x:0', which has shape '[?,600]'"));
  CHECK_THROWS_WITH(sess.Run({{x, Tensor(DT_INT32, {3, 600})}}, {y}),
                    Contains("Cannot feed value of dtype int32 for Tensor 'x:0' with dtype float"));
  try {
    sess.Run({{x, Tensor(DT_FLOAT, {3, 600})}}, {y});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kFailedPrecondition);
    CHECK_THAT(e.what(), Contains("Attempting to use uninitialized value affine0/w"));
    CHECK_THAT(e.what(), Contains("{{node affine0/w/read}}"));
    CHECK_THAT(e.what(), Contains("/job:localhost/replica:0/task:0/device:CPU:0"));
  }
  CHECK_THROWS_WITH(sess.RunNamed({}, {"nope:0"}),
                    Contains("The name 'nope:0' refers to a Tensor which does not exist. The "
                             "operation, 'nope', does not exist in the graph."));
  CHECK_THROWS_WITH(sess.RunNamed({}, {"x:3"}), Contains("exists but only has 1 outputs"));
  Graph other;
  Output foreign = ops::Const(Scope::Root(&other).WithOpName("foreign"), 1.f);
  CHECK_THROWS_WITH(sess.Run({foreign}),
                    Contains("Fetch argument 'foreign' is not an element of this graph."));
  CHECK_THROWS_WITH(
      sess.Run({{x, Tensor(DT_FLOAT, {1, 600})}, {x, Tensor(DT_FLOAT, {1, 600})}}, {y}),
      Contains("fed more than once"));
  // After all these errors the session still works.
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  CHECK(sess.Run({{x, Tensor(DT_FLOAT, {3, 600})}}, {y})[0].shape() == Shape{3, 4});
}

TEST_CASE("A kernel failing mid-graph names its node and device and nothing hangs",
          "[executor][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, Tensor(DT_FLOAT, {64, 64}));
  // A long healthy branch beside the failing one.
  Output chain = x;
  for (int i = 0; i < 200; ++i) chain = ops::MatMul(root, chain, x);
  Output bad =
      NodeBuilder(root.WithOpName("broken"), "TestFail").Input(ops::Neg(root, x)).Finalize();
  Output after = ops::Neg(root, bad);
  Session sess(g);
  auto run = std::async(std::launch::async, [&] {
    try {
      sess.Run({chain, after});
      return std::string("no error");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  });
  REQUIRE(run.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  std::string msg = run.get();
  CHECK_THAT(msg, Contains("injected failure"));
  CHECK_THAT(
      msg,
      Contains("{{node broken}} = TestFail[] on /job:localhost/replica:0/task:0/device:CPU:0"));
  // The next Run works.
  CHECK(sess.Run({chain})[0].shape() == Shape{64, 64});
}

TEST_CASE("Independent branches run concurrently", "[executor]") {
  meeting->arrived = 0;
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root, Tensor(DT_FLOAT, {4}));
  Output b1 = NodeBuilder(root, "TestMeet").Input(ops::Neg(root, a)).Finalize();
  Output b2 = NodeBuilder(root, "TestMeet").Input(ops::Square(root, a)).Finalize();
  Session sess(g);
  auto out = sess.Run({ops::Add(root, b1, b2)});
  CHECK(meeting->arrived == 2);
  CHECK(out[0].shape() == Shape{4});
}

TEST_CASE("Tensors are freed as soon as their last consumer has run", "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output src = NodeBuilder(root, "TestSource").Finalize();
  // A reduction: an elementwise op would take the source's buffer over for its output
  // (buffer_forwarding_test.cc).
  Output sum = ops::Sum(root, src);
  Output check = NodeBuilder(root, "TestExpired").Input(sum).Finalize();
  Session sess(g);
  CHECK(sess.Run({check})[0].scalar<bool>());
  // Fetching the source keeps it alive until Run returns.
  auto out = sess.Run({check, src});
  CHECK_FALSE(out[0].scalar<bool>());
}

TEST_CASE("Control dependencies order effects; targets run without fetches", "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v = GetVariable(root, "counter", {}, init::Zeros());
  Output one = ops::Const(root, 1.f);
  Output inc = ops::AssignAdd(root, v.ref(), one);
  // read_after sees the increment because of the control edge.
  Output read_after = ops::Identity(root.WithControlDependencies({inc}), v.value());
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  sess.Run({}, {}, {inc});
  sess.Run({}, {}, {inc});
  CHECK(sess.Run({v.value()})[0].scalar<float>() == 2.f);
  CHECK(sess.Run({read_after})[0].scalar<float>() == 3.f);
}

TEST_CASE("Concurrent Run calls from several threads give correct results", "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {-1, 8});
  Variable w = GetVariable(root, "w", {8, 8}, init::RandomNormal(0, 1, 3));
  Output y = ops::Sum(root, ops::Relu(root, ops::MatMul(root, x, w.value())), {1});
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  std::vector<Tensor> inputs, expected;
  for (int i = 0; i < 8; ++i) {
    inputs.push_back(testing::RandomTensor({16, 8}, 100 + i));
    expected.push_back(sess.Run({{x, inputs.back()}}, {y})[0]);
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 50; ++r) {
        int i = (t * 3 + r) % 8;
        if (!sess.Run({{x, inputs[i]}}, {y})[0].BitwiseEqual(expected[i])) mismatches++;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(mismatches.load() == 0);
}

TEST_CASE("Placement log: node lines on stdout, the device mapping and summary on stderr",
          "[executor][placement]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithOpName("a"), 1.f);
  Output b = ops::Neg(root.WithOpName("b"), a);
  SessionOptions opts;
  opts.log_device_placement = true;
  testing::LogCapture log;
  SetLogLevel("warn");  // the log the user asked for shows all the same (TensorFlow's LOG(INFO))
  std::istringstream out(testing::CaptureStdout([&] {
    Session sess(g, opts);
    sess.Run({b});
    sess.Run({b});
  }));
  std::vector<std::string> lines;
  for (std::string line; std::getline(out, line);) lines.push_back(line);
  REQUIRE(lines.size() == 2);  // once per node, in graph order; nothing else on stdout
  CHECK(lines[0] == "a: (Const): /job:localhost/replica:0/task:0/device:CPU:0");
  CHECK(lines[1] == "b: (Neg): /job:localhost/replica:0/task:0/device:CPU:0");
  std::vector<std::string> logged = log.Lines();
  REQUIRE(logged.size() == 3);
  CHECK(logged[0] == "Device mapping:");
  CHECK_THAT(logged[1], Catch::Matchers::StartsWith(
                            "/job:localhost/replica:0/task:0/device:CPU:0 -> device: 0"));
  CHECK(logged[2] == "Placement summary: 2 nodes on CPU:0, 0 Send/Recv pairs, 0 soft fallbacks");
}

}  // namespace
}  // namespace pf::session_test

namespace pf::session_test {
namespace {

std::mutex thread_ids_mu;
std::set<std::thread::id>* thread_ids = new std::set<std::thread::id>();
class TestThreadIdOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(2));  // long enough for a pool thread to pick up siblings
    std::lock_guard<std::mutex> lock(thread_ids_mu);
    thread_ids->insert(std::this_thread::get_id());
    return ctx->ForwardInput(0, 0);
  }
};
PF_REGISTER_OP(OpDef("TestThreadId")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", {DT_FLOAT})
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("TestThreadId", "CPU"), TestThreadIdOp);

TEST_CASE("PF_EXECUTOR=sequential runs every node on the calling thread", "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root, Tensor(DT_FLOAT, {4}));
  std::vector<Output> branches;
  for (int i = 0; i < 6; ++i)
    branches.push_back(NodeBuilder(root, "TestThreadId").Input(ops::Neg(root, a)).Finalize());
  Output sum = ops::AddN(root, branches);
  thread_ids->clear();
  setenv("PF_EXECUTOR", "sequential", 1);
  {
    Session sess(g);
    CHECK(sess.Run({sum})[0].shape() == Shape{4});
  }
  unsetenv("PF_EXECUTOR");
  REQUIRE(thread_ids->size() == 1);
  CHECK(*thread_ids->begin() == std::this_thread::get_id());
}

}  // namespace
}  // namespace pf::session_test

namespace pf::session_test {
namespace {

TEST_CASE("Fetched variable values are snapshots, not views of the variable", "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v = GetVariable(root, "v", {2}, init::Constant(1));
  Output inc = ops::AssignAdd(root, v.ref(), ops::Const(root, Tensor::FromVector<float>({1, 1})));
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  Tensor before = sess.Run({v.value()})[0];
  Tensor from_update = sess.Run({inc})[0];
  sess.Run({}, {}, {inc});
  CHECK(before.DebugString() == "Tensor<float [2]> [1, 1]");
  CHECK(from_update.DebugString() == "Tensor<float [2]> [2, 2]");
  CHECK(sess.Run({v.value()})[0].DebugString() == "Tensor<float [2]> [3, 3]");
}

}  // namespace
}  // namespace pf::session_test

namespace pf::session_test {
namespace {

TEST_CASE("Step traces record every node and write Chrome trace JSON", "[executor][trace]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithOpName("a").WithDevice("/cpu:1"), Tensor(DT_FLOAT, {64, 64}));
  Output b = ops::MatMul(root.WithOpName("b"), a, a);
  Output c = ops::Sum(root.WithOpName("c"), b);
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  Session sess(g, opts);
  RunOptions ro;
  ro.trace = true;
  RunMetadata md;
  sess.Run(ro, {}, {c}, {}, &md);
  // a on CPU:1 feeds b on CPU:0: the trace shows the _Send/_Recv pair too.
  REQUIRE(md.step_stats.size() == 5);
  std::map<std::string, NodeExecStats> by_node;
  for (const NodeExecStats& s : md.step_stats) {
    CHECK(s.start_us <= s.end_us);
    CHECK(s.end_us <= md.step_us);
    by_node[s.node] = s;
  }
  CHECK(by_node.at("a").device == "/job:localhost/replica:0/task:0/device:CPU:1");
  CHECK(by_node.at("b").op == "MatMul");
  CHECK(by_node.at("b").output_bytes == 64 * 64 * 4);
  CHECK(by_node.at("c").start_us >= by_node.at("b").end_us);
  CHECK(by_node.at("a:0/_send_to_CPU:0").device == "/job:localhost/replica:0/task:0/device:CPU:1");
  CHECK(by_node.at("a:0/_recv_on_CPU:0").op == "_Recv");
  CHECK(by_node.at("b").start_us >= by_node.at("a:0/_recv_on_CPU:0").start_us);
  std::string json = ChromeTraceJson(md);
  CHECK_THAT(json, Contains("\"traceEvents\""));
  CHECK_THAT(json, Contains("\"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": "
                            "\"/job:localhost/replica:0/task:0/device:CPU:1\"}"));
  CHECK_THAT(json, Contains("\"ph\": \"X\", \"name\": \"b\", \"cat\": \"MatMul\""));
  // Without the option nothing is recorded.
  RunMetadata none;
  sess.Run(RunOptions{}, {}, {c}, {}, &none);
  CHECK(none.step_stats.empty());
}

}  // namespace
}  // namespace pf::session_test

namespace pf::session_test {
namespace {

// Forwards its input's buffer, as Identity does, and says so in its OpDef.
class TestPassThroughOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override { return ctx->ForwardInput(0, 0); }
};
PF_REGISTER_OP(OpDef("TestPassThrough")
                   .SetForwardsInput()
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", {DT_FLOAT})
                   .SetNotDifferentiable()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("TestPassThrough", "CPU"), TestPassThroughOp);

TEST_CASE("Fetches that may view a variable are snapshots, through every forwarding op",
          "[executor]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v = GetVariable(root, "v", {2}, init::Constant(1));
  Output x = v.value();
  Output inc = ops::AssignAdd(root, v.ref(), ops::Const(root, Tensor::FromVector<float>({1, 1})));
  Output step = NodeBuilder(root, "ApplyGradientDescent")
                    .Input(v.ref())
                    .Input(ops::Const(root, 1.f))
                    .Input(ops::Const(root, Tensor::FromVector<float>({-1, -1})))
                    .Finalize();
  const std::vector<Output> views = {
      ops::Identity(root, v.ref()),
      ops::StopGradient(root, x),
      ops::Reshape(root, ops::ExpandDims(root, x, 0), std::vector<int32_t>{2}),
      ops::Squeeze(root, ops::ExpandDims(root, x, 1)),
      ops::Cast(root, x, DT_FLOAT),
      NodeBuilder(root, "TestPassThrough").Input(x).Finalize()};
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  std::vector<Tensor> before = sess.Run(views);
  Tensor from_step = sess.Run({step})[0];
  sess.Run({}, {}, {inc});
  for (const Tensor& t : before) CHECK(t.DebugString() == "Tensor<float [2]> [1, 1]");
  CHECK(from_step.DebugString() == "Tensor<float [2]> [2, 2]");
  CHECK(sess.Run({x})[0].DebugString() == "Tensor<float [2]> [3, 3]");
}

TEST_CASE("Session devices say whether their memory is the host's", "[executor]") {
  Graph g;
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  Session sess(g, opts);
  for (const Device* d : sess.devices().devices()) {
    INFO(d->name());
    CHECK(d->uses_host_memory() == (d->device_type() == kDeviceCpu));
  }
}

TEST_CASE("A session target other than a cluster's grpc:// address is refused, saying why",
          "[executor][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  ops::Const(root, 1.f);
  SessionOptions opts;
  opts.target = "local://somewhere";
  try {
    Session sess(g, opts);
    FAIL("opened a session on an unknown target");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("local://somewhere"));
    CHECK_THAT(e.what(), Catch::Contains("grpc://host:port"));
  }
#ifndef PF_WITH_GRPC
  // Without the cluster runtime, a grpc:// target says the build lacks it.
  opts.target = "grpc://localhost:2222";
  try {
    Session sess(g, opts);
    FAIL("opened a cluster session without the cluster runtime");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("PF_WITH_GRPC"));
  }
#endif
}

}  // namespace
}  // namespace pf::session_test
