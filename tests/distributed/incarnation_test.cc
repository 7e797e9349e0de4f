// Incarnations: every task's devices carry its server's random incarnation, _Send/_Recv keys
// carry the sender's, so a restarted task rejects requests made for its previous life, and a
// session learns the new incarnation before it registers its graphs again.
#include <grpcpp/grpcpp.h>

#include <thread>

#include "placeflow/distributed/cluster_spec.h"
#include "placeflow/distributed/rpc.grpc.pb.h"
#include "placeflow/distributed/rpc_util.h"
#include "placeflow/distributed/server.h"
#include "placeflow/graph/rendezvous.h"
#include "placeflow/placer/partition.h"
#include "tests/distributed/cluster_util.h"
#include "tests/testing/test_util.h"

namespace pf::incarnation_test {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("A RecvTensor for a device's old incarnation is rejected, naming the task",
          "[distributed]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(testing::LoopbackCluster({{"worker", 1}}, &addr)).ValueOrThrow();
  Server server(spec, "worker", 0);
  const Device* cpu = server.devices().devices().at(0);
  const uint64_t now = cpu->incarnation();
  REQUIRE(now != 0);
  auto stub =
      rpc::WorkerService::NewStub(grpc::CreateChannel(addr[0], grpc::InsecureChannelCredentials()));
  // The incarnation the master learns from GetStatus is the devices' own.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    ctx.set_wait_for_ready(true);
    rpc::GetStatusResponse status;
    REQUIRE(stub->GetStatus(&ctx, rpc::GetStatusRequest(), &status).ok());
    CHECK(status.incarnation() == now);
    REQUIRE(status.device_size() > 0);
    CHECK(status.device(0).incarnation() == now);
  }
  const uint64_t stale = now ^ 0x5a5a;
  rpc::RecvTensorRequest req;
  req.set_step_id(7);
  req.set_key(Rendezvous::Key(cpu->name(), stale, cpu->name(), "a:0"));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  rpc::RecvTensorHeader header;
  grpc::Status st = stub->RecvTensor(&ctx, req, &header);
  CHECK(st.error_code() == grpc::StatusCode::ABORTED);
  CHECK(FromGrpc(st, "RecvTensor").reason() == Reason::kStaleIncarnation);
  CHECK(IsTaskRestart(FromGrpc(st, "RecvTensor")));
  CHECK(st.error_message() ==
        fmt::format("RecvTensor expects a different device incarnation: {} vs. {}. Your worker "
                    "job (\"/job:worker/replica:0/task:0\") was probably restarted. Check your "
                    "worker job for the reason why it was restarted.",
                    stale, now));
}

TEST_CASE("Partitions of a cluster name the sender's incarnation in _Send and _Recv",
          "[distributed][partition]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(testing::LoopbackCluster({{"worker", 1}}, &addr)).ValueOrThrow();
  Server server(spec, "worker", 0, {.cpu_devices = 2});
  Device* cpu0 = server.devices().devices().at(0);
  Device* cpu1 = server.devices().devices().at(1);
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithOpName("a"), 1.f);
  Output b = ops::Neg(root.WithOpName("b"), a);
  auto p = Partition(g.nodes(), {{a.node, cpu0}, {b.node, cpu1}}, {});
  REQUIRE(p.ok());
  const Node* recv = p->copy_of.at(b.node)->input(0).node;
  REQUIRE(recv->op() == "_Recv");
  CHECK(static_cast<uint64_t>(recv->attr<int64_t>("send_device_incarnation")) ==
        cpu0->incarnation());
}

TEST_CASE("After a task restarts, a session fails one step, then runs with its new incarnation",
          "[distributed]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(testing::LoopbackCluster({{"ps", 1}, {"worker", 1}}, &addr))
                  .ValueOrThrow();
  auto ps = std::make_unique<Server>(spec, "ps", 0);
  Server worker(spec, "worker", 0);
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root.WithOpName("c").WithDevice("/job:ps/task:0"), 3.f);
  Output y = ops::Mul(root.WithOpName("y").WithDevice("/job:worker/task:0"), c, c);
  SessionOptions o;
  o.target = worker.target();
  o.cluster.connect_timeout_s = 20;
  Session sess(g, o);
  CHECK(sess.Run({y})[0].scalar<float>() == 9.f);
  const uint64_t before = ps->devices().devices().at(0)->incarnation();
  ps.reset();
  ps = std::make_unique<Server>(spec, "ps", 0);
  REQUIRE(ps->devices().devices().at(0)->incarnation() != before);
  // The step that meets the restart fails: the ps lost its graph, or the worker asked it for a
  // tensor of its old incarnation (whichever error comes first; while connections come back,
  // Unavailable too). Later steps register again, with the ps's new incarnation in the keys.
  bool told_to_register_again = false;
  Status s;
  std::vector<Tensor> out;
  for (int attempt = 0; attempt < 50; ++attempt) {
    s = sess.TryRun({}, {y}, {}, &out);
    if (s.ok()) break;
    // The reason, not the text, says so (the text is for people).
    told_to_register_again |= s.reason() == Reason::kTaskRestarted && IsTaskRestart(s);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(told_to_register_again);
  CHECK(out[0].scalar<float>() == 9.f);
  CHECK(sess.Run({y})[0].scalar<float>() == 9.f);
}

// Recovery reads the reason, never the message: every reason survives a trip over gRPC under
// any wording, and the old texts without a reason are not taken for one.
TEST_CASE("Error reasons travel with the status over gRPC, whatever the message says",
          "[distributed][core]") {
  for (int r = 0; r <= static_cast<int>(kLastReason); ++r) {
    const auto reason = static_cast<Reason>(r);
    INFO("reason " << ReasonName(reason));
    for (const Status& made :
         {errors::NotFound("reworded: ", r).WithReason(reason),
          errors::Aborted("nothing a caller could match").WithReason(reason)}) {
      const Status back = FromGrpc(ToGrpc(made.WithSuffix(" (on task 3)")), "RunGraph");
      CHECK(back.code() == made.code());
      CHECK(back.reason() == reason);
      CHECK(back.message() == made.message() + " (on task 3)");  // a server's: no prefix
      CHECK(IsTaskRestart(back) ==
            (reason == Reason::kGraphNotRegistered || reason == Reason::kStaleIncarnation ||
             reason == Reason::kTaskRestarted));
      CHECK(IsUninitializedVariable(back) == (reason == Reason::kUninitializedVariable));
    }
  }
  // The texts that recovery used to search for mean nothing without their reason.
  for (const Status& text_only :
       {errors::NotFound("Graph handle 3 is not registered on task /job:ps/replica:0/task:0"),
        errors::Aborted("RecvTensor expects a different device incarnation: 1 vs. 2"),
        errors::FailedPrecondition("Attempting to use uninitialized value w")}) {
    const Status back = FromGrpc(ToGrpc(text_only), "RunGraph");
    CHECK(back.reason() == Reason::kNone);
    CHECK_FALSE(IsTaskRestart(back));
    CHECK_FALSE(IsUninitializedVariable(back));
  }
  // A transport error (not made by ToGrpc) is prefixed with the call and has no reason.
  const Status transport =
      FromGrpc(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused"), "Task ps:0");
  CHECK(transport.message() == "Task ps:0: connection refused");
  CHECK(transport.reason() == Reason::kNone);
  CHECK_FALSE(IsRemoteError(grpc::Status(grpc::StatusCode::UNAVAILABLE, "x", "remotely")));
  CHECK(IsRemoteError(ToGrpc(errors::Unavailable("x"))));
}

// A variable read before initialisation says so by reason, in process and from a ps task.
TEST_CASE("An uninitialised variable is a typed error, in process and across tasks",
          "[distributed]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(testing::LoopbackCluster({{"ps", 1}, {"worker", 1}}, &addr))
                  .ValueOrThrow();
  Server ps(spec, "ps", 0);
  Server worker(spec, "worker", 0);
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v = GetVariable(root.WithDevice("/job:ps/task:0"), "v", {2});
  Output y = ops::Neg(root.WithDevice("/job:worker/task:0"), v.value());
  SessionOptions o;
  o.target = worker.target();
  o.cluster.connect_timeout_s = 20;
  Session remote(g, o);
  Graph plain;
  Scope plain_root = Scope::Root(&plain);
  Output plain_y = ops::Neg(plain_root, GetVariable(plain_root, "v", {2}).value());
  Session local(plain);
  for (auto [sess, fetch] : {std::pair{&remote, y}, std::pair{&local, plain_y}}) {
    std::vector<Tensor> out;
    const Status s = sess->TryRun({}, {fetch}, {}, &out);
    INFO(s.ToString());
    CHECK(s.code() == Code::kFailedPrecondition);
    CHECK(IsUninitializedVariable(s));
    CHECK_FALSE(IsTaskRestart(s));
  }
}

}  // namespace
}  // namespace pf::incarnation_test
