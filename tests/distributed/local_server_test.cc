// TF 1.x's first distributed programs (issue 33, items 5 and 6): tf.train.Server
// .create_local_server() binds port 0 and hands its real port to sessions through target(), and
// the hello-world cluster fetches a string. Strings cross between tasks as length-prefixed bytes.
#include "placeflow/distributed/cluster_spec.h"
#include "placeflow/distributed/server.h"
#include "tests/distributed/cluster_util.h"
#include "tests/testing/test_util.h"

namespace pf::local_server_test {
namespace {

using Catch::Matchers::Contains;
using testing::LoopbackCluster;
using testing::SecondsSince;

int PortOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

Tensor Strings(const std::vector<std::string>& values, const Shape& shape) {
  Tensor t(DT_STRING, shape);
  for (size_t i = 0; i < values.size(); ++i) t.flat<std::string>()[i] = values[i];
  return t;
}

TEST_CASE("A server created with port 0 binds a free port and answers through its target",
          "[distributed][local_server]") {
  const auto t0 = std::chrono::steady_clock::now();
  // TF: server = tf.train.Server.create_local_server(); sess = tf.Session(server.target)
  const ClusterSpec spec = ClusterSpec::Parse("localhost=localhost:0").ValueOrThrow();
  Server server(spec, "localhost", 0);
  Server other(spec, "localhost", 0);
  const std::string target = server.target();
  REQUIRE_THAT(target, Catch::StartsWith("grpc://localhost:"));
  const int port = PortOf(target);
  CHECK(port > 0);
  CHECK(PortOf(other.target()) != port);  // each gets a port of its own
  // The cluster it tells tasks and clients names the bound port, as TF's server_def does.
  CHECK(server.cluster().TaskAddress("localhost", 0).value() ==
        "localhost:" + std::to_string(port));

  Graph g;
  Scope root = Scope::Root(&g);
  Output hello =
      ops::Const(root.WithOpName("hello"), Strings({"Hello, distributed placeflow!"}, Shape{}));
  Output sum = ops::Add(root.WithOpName("sum"), ops::Const(root, 2.f), ops::Const(root, 3.f));
  SessionOptions options;
  options.target = target;
  Session sess(g, options);
  auto out = sess.Run({hello, sum});
  CHECK(out[0].dtype() == DT_STRING);
  CHECK(out[0].scalar<std::string>() == "Hello, distributed placeflow!");
  CHECK(out[1].scalar<float>() == 5.f);
  CHECK(SecondsSince(t0) < 10);  // it used to wait 32 s for a server on port 0

  // A client cannot connect to port 0: it says so at once instead of waiting.
  const auto t1 = std::chrono::steady_clock::now();
  options.target = "grpc://localhost:0";
  try {
    Session bad(g, options);
    bad.Run({sum});
    FAIL("a session on port 0");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_THAT(e.what(), Contains("has port 0") && Contains("target()"));
  }
  CHECK(SecondsSince(t1) < 2);

  // Another task at port 0 cannot be reached: the target says so instead of waiting for it.
  const auto t2 = std::chrono::steady_clock::now();
  Server first(ClusterSpec::Parse("worker=localhost:0,localhost:0").ValueOrThrow(), "worker", 0);
  options.target = first.target();
  try {
    Session two(g, options);
    two.Run({sum});
    FAIL("a cluster with a task at port 0");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_THAT(e.what(), Contains("Task /job:worker/replica:0/task:1 has port 0 in the cluster "
                                  "spec (localhost:0)"));
  }
  CHECK(SecondsSince(t2) < 5);
}

TEST_CASE("The hello-world cluster fetches a string from a remote task; strings cross tasks",
          "[distributed][strings]") {
  std::vector<std::string> addr;
  const ClusterSpec spec =
      ClusterSpec::Parse(LoopbackCluster({{"worker", 2}}, &addr)).ValueOrThrow();
  Server s0(spec, "worker", 0);
  Server s1(spec, "worker", 1);
  Graph g;
  Scope root = Scope::Root(&g);
  Scope remote = root.WithDevice("/job:worker/task:1");
  Scope local = root.WithDevice("/job:worker/task:0");
  // A Const on task 1, fetched by a client of task 0 (RunGraph's fetch from task 1).
  Output hello =
      ops::Const(remote.WithOpName("hello"), Strings({"Hello, distributed placeflow!"}, Shape{}));
  // Task 1 -> task 0 through the rendezvous (RecvTensor), then fetched from task 0.
  Output pulled = ops::Identity(local.WithOpName("pulled"), hello);
  // Strings fed by the client to task 1, pulled by task 0: empty ones, NUL and non-UTF-8
  // bytes, and more than one 8 MiB chunk in all (strings are never chunked).
  Output in = ops::Placeholder(remote.WithOpName("in"), DT_STRING, {4});
  Output back = ops::Identity(local.WithOpName("back"), in);
  const Tensor fed = Strings(
      {"", std::string("nul\0byte\xff", 9), std::string(9 << 20, 'x'), std::string(3 << 20, 'y')},
      Shape{4});
  SessionOptions options;
  options.target = s0.target();
  options.cluster.connect_timeout_s = 20;
  Session sess(g, options);
  auto out = sess.Run({{in, fed}}, {hello, pulled, back});
  CHECK(out[0].scalar<std::string>() == "Hello, distributed placeflow!");
  CHECK(out[1].scalar<std::string>() == "Hello, distributed placeflow!");
  REQUIRE(out[2].shape() == Shape{4});
  CHECK(out[2].BitwiseEqual(fed));
  CHECK(out[2].flat<std::string>()[1].size() == 9);
  // A second step over the same connections: nothing stale.
  const Tensor again = Strings({"a", "bb", "ccc", ""}, Shape{4});
  CHECK(sess.Run({{in, again}}, {back})[0].BitwiseEqual(again));
}

}  // namespace
}  // namespace pf::local_server_test
