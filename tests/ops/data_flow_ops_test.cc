// Shared queues and gradient accumulators: order, waiting without a thread, stale gradients,
// timeouts and cancellation (ops/state/data_flow_ops.cc).
#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

#include "tests/testing/test_util.h"

namespace pf::data_flow_ops_test {
namespace {

using Catch::Matchers::Contains;
using std::chrono::milliseconds;

Status RunTimed(Session& sess, const FeedDict& feeds, const std::vector<Output>& fetches,
                const std::vector<Operation>& targets, std::vector<Tensor>* out,
                int64_t timeout_ms) {
  RunOptions o;
  o.timeout_in_ms = timeout_ms;
  return sess.TryRun(feeds, fetches, targets, out, o);
}

TEST_CASE("A shared queue hands out rows in order and waits when empty", "[ops][data_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const ops::SharedResource q{"q", DT_INT64, {}};
  Output values = ops::Placeholder(root, DT_INT64, {-1});
  Operation enqueue = ops::QueueEnqueueMany(root, q, values);
  Output dequeue = ops::QueueDequeue(root, q);
  Output size = ops::QueueSize(root, q);
  Session sess(g);
  sess.Run({{values, Tensor::FromVector<int64_t>({7, 8, 9})}}, {}, {enqueue});
  CHECK(sess.Run({size})[0].scalar<int32_t>() == 3);
  CHECK(sess.Run({dequeue})[0].scalar<int64_t>() == 7);
  CHECK(sess.Run({dequeue})[0].scalar<int64_t>() == 8);
  CHECK(sess.Run({dequeue})[0].scalar<int64_t>() == 9);

  // Empty: a dequeue waits until another Run enqueues.
  std::vector<Tensor> got;
  auto waiting =
      std::async(std::launch::async, [&] { return sess.TryRun({}, {dequeue}, {}, &got); });
  CHECK(waiting.wait_for(milliseconds(100)) == std::future_status::timeout);
  sess.Run({{values, Tensor::FromVector<int64_t>({42})}}, {}, {enqueue});
  REQUIRE(waiting.get().ok());
  CHECK(got[0].scalar<int64_t>() == 42);

  // A timed-out dequeue says what it waited for and takes nothing from the queue.
  Status s = RunTimed(sess, {}, {dequeue}, {}, &got, 50);
  CHECK(s.code() == Code::kDeadlineExceeded);
  CHECK_THAT(s.message(),
             Contains("timed out after 50 ms") && Contains("dequeue from queue 'q' (empty)"));
  sess.Run({{values, Tensor::FromVector<int64_t>({5})}}, {}, {enqueue});
  CHECK(sess.Run({dequeue})[0].scalar<int64_t>() == 5);
  CHECK(sess.Run({size})[0].scalar<int32_t>() == 0);
}

TEST_CASE("Waiting dequeues hold no thread: sixteen wait at once on a one-thread session",
          "[ops][data_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const ops::SharedResource q{"tokens", DT_INT64, {}};
  Output values = ops::Placeholder(root, DT_INT64, {-1});
  Operation enqueue = ops::QueueEnqueueMany(root, q, values);
  constexpr int kWaiters = 16;
  std::vector<Output> dequeues;
  for (int i = 0; i < kWaiters; ++i)
    dequeues.push_back(ops::QueueDequeue(root.WithOpName("deq_" + std::to_string(i)), q));
  SessionOptions opts;
  opts.num_threads = 1;  // the calling thread only: a kernel that blocked would stop the step
  Session sess(g, opts);
  // All sixteen are waiting at the same time (the timeout lists each one).
  std::vector<Tensor> got;
  Status s = RunTimed(sess, {}, dequeues, {}, &got, 200);
  REQUIRE(s.code() == Code::kDeadlineExceeded);
  size_t waiting = 0;
  for (size_t at = 0;
       (at = s.message().find("dequeue from queue 'tokens'", at)) != std::string::npos; ++at)
    ++waiting;
  CHECK(waiting == kWaiters);
  CHECK_THAT(s.message(), Contains("waiting: deq_15: dequeue from queue 'tokens' (empty)"));

  // Each waiter gets exactly one token.
  auto run = std::async(std::launch::async, [&] { return sess.TryRun({}, dequeues, {}, &got); });
  std::this_thread::sleep_for(milliseconds(50));
  std::vector<int64_t> tokens(kWaiters);
  for (int i = 0; i < kWaiters; ++i) tokens[i] = 100 + i;
  sess.Run({{values, Tensor::FromVector<int64_t>(tokens)}}, {}, {enqueue});
  REQUIRE(run.get().ok());
  std::vector<int64_t> values_got;
  for (const Tensor& t : got) values_got.push_back(t.scalar<int64_t>());
  std::sort(values_got.begin(), values_got.end());
  CHECK(values_got == tokens);
}

TEST_CASE("An accumulator averages the gradients of its step and drops stale ones",
          "[ops][data_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const ops::SharedResource acc{"w/grad_accum", DT_FLOAT, {2, 2}};
  Output local_step = ops::Placeholder(root, DT_INT64, {});
  Output grad = ops::Placeholder(root, DT_FLOAT, {2, 2});
  Operation apply = ops::AccumulatorApplyGradient(root, acc, local_step, grad);
  Output take = ops::AccumulatorTakeGradient(root, acc, ops::ConstInt(root, 2));
  Output count = ops::AccumulatorNumAccumulated(root, acc);
  Output dropped = ops::AccumulatorNumDropped(root, acc);
  Output new_step = ops::Placeholder(root, DT_INT64, {});
  Operation set_step = ops::AccumulatorSetGlobalStep(root, acc, new_step);
  Session sess(g);
  auto feed = [&](int64_t step, std::vector<float> v) {
    sess.Run(
        {{local_step, Tensor::Scalar<int64_t>(step)}, {grad, Tensor::FromVector<float>(v, {2, 2})}},
        {}, {apply});
  };
  feed(0, {1, 2, 3, 4});
  feed(0, {3, 4, 5, 6});
  CHECK(sess.Run({count})[0].scalar<int32_t>() == 2);
  CHECK(sess.Run({take})[0].ToVector<float>() == std::vector<float>{2, 3, 4, 5});
  CHECK(sess.Run({count})[0].scalar<int32_t>() == 0);

  // Taking moved the accumulator to step 1: a gradient of step 0 is stale.
  feed(0, {100, 100, 100, 100});
  CHECK(sess.Run({count})[0].scalar<int32_t>() == 0);
  CHECK(sess.Run({dropped})[0].scalar<int64_t>() == 1);

  // A take waits for enough gradients of the current step; a newer step counts too.
  std::vector<Tensor> got;
  auto waiting = std::async(std::launch::async, [&] { return sess.TryRun({}, {take}, {}, &got); });
  feed(1, {2, 2, 2, 2});
  CHECK(waiting.wait_for(milliseconds(100)) == std::future_status::timeout);
  feed(3, {4, 4, 4, 4});
  REQUIRE(waiting.get().ok());
  CHECK(got[0].ToVector<float>() == std::vector<float>{3, 3, 3, 3});

  // A timed-out take names the accumulator and what is missing, and loses nothing.
  feed(2, {6, 6, 6, 6});
  Status s = RunTimed(sess, {}, {take}, {}, &got, 50);
  CHECK(s.code() == Code::kDeadlineExceeded);
  CHECK_THAT(s.message(),
             Contains("take from accumulator 'w/grad_accum' (1 of 2 gradients for global step 2"));
  CHECK(sess.Run({count})[0].scalar<int32_t>() == 1);

  // The global step can be set (the chief does after a restore); older gradients are stale.
  sess.Run({{new_step, Tensor::Scalar<int64_t>(10)}}, {}, {set_step});
  feed(9, {1, 1, 1, 1});
  CHECK(sess.Run({dropped})[0].scalar<int64_t>() == 2);
}

TEST_CASE("Accumulator and queue errors name the resource, the node and the shapes",
          "[ops][data_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const ops::SharedResource acc{"acc", DT_FLOAT, {3}};
  CHECK_THROWS_WITH(
      ops::AccumulatorApplyGradient(root, acc, ops::Const(root, Tensor::Scalar<int64_t>(0)),
                                    ops::Const(root, Tensor(DT_FLOAT, {4}))),
      Contains("Shape mismatch: accumulator 'acc' holds [3], gradient has [4]"));
  Output grad = ops::Placeholder(root, DT_FLOAT);
  Operation apply =
      ops::AccumulatorApplyGradient(root, acc, ops::Const(root, Tensor::Scalar<int64_t>(0)), grad);
  Output take = ops::AccumulatorTakeGradient(root, acc, ops::ConstInt(root, 0));
  // The same name used as a queue, and as an accumulator of another shape.
  Output as_queue = ops::QueueSize(root.WithOpName("as_queue"), {"acc", DT_FLOAT, {3}});
  Output other_shape =
      ops::AccumulatorNumAccumulated(root.WithOpName("other"), {"acc", DT_FLOAT, {5}});
  Session sess(g);
  CHECK_THROWS_WITH(sess.Run({{grad, Tensor(DT_FLOAT, {4})}}, {}, {apply}),
                    Contains("accumulator 'acc' holds [3], gradient has [4]"));
  CHECK_THROWS_WITH(sess.Run({take}), Contains("num_required must be at least 1, got 0"));
  CHECK_THROWS_WITH(sess.Run({as_queue}),
                    Contains("Shared accumulator 'acc' holds float [3], but node as_queue "
                             "(QueueSize) asks for a queue of float [3]"));
  CHECK_THROWS_WITH(sess.Run({other_shape}),
                    Contains("node other (AccumulatorNumAccumulated) asks for an accumulator of "
                             "float [5]"));
}

TEST_CASE("A failing node of the step wakes the step's waiting dequeue", "[ops][data_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output dequeue = ops::QueueDequeue(root, {"q", DT_FLOAT, {}});
  Variable never = GetVariable(root, "never_initialized", {}, init::Zeros());
  Output read = ops::Identity(root, never.value());
  Session sess(g);
  std::vector<Tensor> out;
  auto run = std::async(std::launch::async, [&] {
    return sess.TryRun({}, {dequeue, read}, {}, &out);
  });
  REQUIRE(run.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  Status s = run.get();
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK_THAT(s.message(), Contains("never_initialized"));
}

}  // namespace
}  // namespace pf::data_flow_ops_test
