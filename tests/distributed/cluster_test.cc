// The cluster runtime on loopback: pf-server processes (and in-process servers where a test
// needs no process boundary) against client sessions with a grpc:// target.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "placeflow/distributed/cluster_spec.h"
#include "placeflow/distributed/server.h"
#include "tests/distributed/cluster_util.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/test_util.h"

namespace pf::cluster_test {
namespace {

using testing::LoopbackCluster;
using testing::SecondsSince;
using testing::ServerProcess;

std::string Target(const std::string& address) { return "grpc://" + address; }

// A session on `target`, retrying while the servers start (they print "ready" within ~1 s).
std::unique_ptr<Session> Connect(Graph& g, const std::string& target, SessionOptions o = {}) {
  o.target = target;
  if (o.cluster.connect_timeout_s == 30) o.cluster.connect_timeout_s = 20;
  return std::make_unique<Session>(g, o);
}

TEST_CASE("ClusterSpec parses the flag form, JSON and TF_CONFIG", "[distributed]") {
  auto spec = ClusterSpec::Parse("ps=h0:2222;worker=h1:2223,h2:2224").ValueOrThrow();
  CHECK(spec.num_tasks("ps") == 1);
  CHECK(spec.num_tasks("worker") == 2);
  CHECK(spec.TaskAddress("worker", 1).ValueOrThrow() == "h2:2224");
  CHECK(spec.ToString() == "ps=h0:2222;worker=h1:2223,h2:2224");
  CHECK(ClusterSpec::Parse(spec.ToString()).ValueOrThrow() == spec);
  CHECK(spec.TaskNames() == std::vector<std::string>{"/job:ps/replica:0/task:0",
                                                     "/job:worker/replica:0/task:0",
                                                     "/job:worker/replica:0/task:1"});
  auto json = ClusterSpec::FromJson(R"({"ps": ["h0:2222"], "worker": ["h1:2223", "h2:2224"]})");
  CHECK(std::move(json).ValueOrThrow() == spec);
  auto config = ParseTfConfig(
                    R"({"cluster": {"ps": ["h0:2222"], "worker": ["h1:2223", "h2:2224"]},
                        "task": {"type": "worker", "index": 1}})")
                    .ValueOrThrow();
  CHECK(config.cluster == spec);
  CHECK(config.job == "worker");
  CHECK(config.task == 1);

  auto bad_port = ClusterSpec::Parse("ps=h0:notaport");
  REQUIRE_FALSE(bad_port.ok());
  CHECK_THAT(bad_port.status().message(), Catch::Contains("'h0:notaport'"));
  CHECK_FALSE(ClusterSpec::Parse("ps").ok());
  CHECK_FALSE(ClusterSpec::Parse("ps=h:1;ps=h:2").ok());
  CHECK_FALSE(ClusterSpec::FromJson(R"({"ps": "h0:2222"})").ok());
  CHECK_FALSE(ClusterSpec::FromJson("{not json").ok());
  auto missing = spec.TaskAddress("worker", 2);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("ps=h0:2222;worker=h1:2223,h2:2224"));
  CHECK_FALSE(ParseTfConfig(R"({"cluster": {"ps": ["h:1"]}, "task": {"type": "chief"}})").ok());
}

// Variables on `ps`, a layer on `dev1`, the loss and its gradient step on `dev2`.
struct Model {
  Output x, y, loss;
  Variable w, b;
  Operation init, train;
};

Model BuildModel(Graph& g, const std::string& ps, const std::string& dev1,
                 const std::string& dev2) {
  Scope root = Scope::Root(&g);
  Model m;
  m.x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {8, 4});
  m.y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT, {8, 3});
  Scope vs = root.WithDevice(ps);
  m.w = GetVariable(vs, "w", {4, 3}, init::RandomUniform(-0.5, 0.5, /*seed=*/7));
  m.b = GetVariable(vs, "b", {3}, init::Zeros());
  Output h = ops::Tanh(root.WithDevice(dev1),
                       ops::Add(root.WithDevice(dev1),
                                ops::MatMul(root.WithDevice(dev1), m.x, m.w.value()), m.b.value()));
  m.loss = ops::MeanSquaredError(root.WithDevice(dev2), h, m.y);
  m.init = GlobalVariablesInitializer(root);
  m.train = train::GradientDescent(0.1).Minimize(root.WithDevice(dev2), m.loss);
  return m;
}

TEST_CASE("Three server processes give the numbers of one process with three devices",
          "[distributed]") {
  std::vector<std::string> addr;
  const std::string cluster = LoopbackCluster({{"ps", 1}, {"worker", 2}}, &addr);
  ServerProcess ps(cluster, "ps", 0), w0(cluster, "worker", 0), w1(cluster, "worker", 1);
  Tensor x = testing::RandomTensor({8, 4}, 1), y = testing::RandomTensor({8, 3}, 2);

  Graph local_graph;
  Model local = BuildModel(local_graph, "/cpu:0", "/cpu:1", "/cpu:2");
  SessionOptions lo;
  lo.device_count["CPU"] = 3;
  Session local_sess(local_graph, lo);
  local_sess.Run({}, {}, {local.init});

  Graph g;
  Model m = BuildModel(g, "/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1");
  auto sess = Connect(g, Target(addr[1]));
  // Every task's devices, with full names.
  std::vector<std::string> names;
  for (const Device* d : sess->devices().devices()) names.push_back(d->name());
  CHECK(names.size() == 3);
  CHECK(std::count(names.begin(), names.end(), "/job:ps/replica:0/task:0/device:CPU:0") == 1);
  CHECK(std::count(names.begin(), names.end(), "/job:worker/replica:0/task:1/device:CPU:0") == 1);
  sess->Run({}, {}, {m.init});
  for (int step = 0; step < 3; ++step) {
    auto want = local_sess.Run({{local.x, x}, {local.y, y}}, {local.loss}, {local.train});
    auto got = sess->Run({{m.x, x}, {m.y, y}}, {m.loss}, {m.train});
    CHECK(got[0].scalar<float>() == Approx(want[0].scalar<float>()).epsilon(1e-6));
  }
  auto want_w = local_sess.Run({local.w.value(), local.b.value()});
  auto got_w = sess->Run({m.w.value(), m.b.value()});
  for (int i = 0; i < 2; ++i) {
    auto a = got_w[i].ToVector<float>(), b = want_w[i].ToVector<float>();
    REQUIRE(a.size() == b.size());
    for (size_t k = 0; k < a.size(); ++k) CHECK(a[k] == Approx(b[k]).epsilon(1e-6));
  }
  auto where = sess->DevicePlacement();
  CHECK(where.at("w") == "/job:ps/replica:0/task:0/device:CPU:0");
  CHECK(where.at("MatMul") == "/job:worker/replica:0/task:0/device:CPU:0");
  CHECK(where.at("MeanSquaredError") == "/job:worker/replica:0/task:1/device:CPU:0");

  // The ps keeps its variables across sessions: a second client, from another task's target,
  // reads the trained values without initialising anything.
  Graph g2;
  Model m2 = BuildModel(g2, "/job:ps/task:0", "/job:worker/task:1", "/job:worker/task:1");
  auto sess2 = Connect(g2, Target(addr[2]));
  auto again = sess2->Run({m2.w.value()});
  CHECK(again[0].BitwiseEqual(got_w[0]));

  // A task that is not in the cluster gets the placer's error, listing the cluster's devices.
  Graph g3;
  Scope r3 = Scope::Root(&g3);
  Output c = ops::Const(r3.WithDevice("/job:worker/task:7"), 1.0f);
  auto sess3 = Connect(g3, Target(addr[1]));
  try {
    sess3->Run({c});
    FAIL("placed on a task that does not exist");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("/job:worker/task:7"));
    CHECK_THAT(e.what(), Catch::Contains("/job:ps/replica:0/task:0/device:CPU:0"));
  }
}

template <typename T>
void FillRandomBits(Tensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  auto* bytes = static_cast<unsigned char*>(t.raw_data());
  for (size_t i = 0; i < t.TotalBytes(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < t.TotalBytes(); ++i) bytes[i] &= 1;
  }
}

TEST_CASE("Cross-task transfers keep every byte of every dtype, 0 bytes to 256 MiB",
          "[distributed]") {
  std::vector<std::string> addr;
  const std::string cluster = LoopbackCluster({{"worker", 2}}, &addr);
  // In-process servers: same code path (gRPC over loopback), no process start-up per case.
  Server s0(ClusterSpec::Parse(cluster).ValueOrThrow(), "worker", 0);
  Server s1(ClusterSpec::Parse(cluster).ValueOrThrow(), "worker", 1);
  for (DType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL, DT_HALF, DT_BFLOAT16}) {
    // Sizes around the 8 MiB chunks of large pulls: one chunk, two and a bit.
    for (int64_t n :
         {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{3} << 18, (int64_t{2} << 20) + 7}) {
      Graph g;
      Scope root = Scope::Root(&g);
      Output in =
          ops::Placeholder(root.WithOpName("in").WithDevice("/job:worker/task:0"), dtype, {n});
      Output out = ops::Identity(root.WithOpName("out").WithDevice("/job:worker/task:1"), in);
      Tensor value(dtype, {n});
      FillRandomBits<bool>(value, static_cast<uint32_t>(n + dtype));
      if (dtype != DT_BOOL) FillRandomBits<float>(value, static_cast<uint32_t>(n + dtype));
      auto sess = Connect(g, s0.target());
      auto got = sess->Run({{in, value}}, {out});
      INFO(DTypeName(dtype) << " x " << n);
      CHECK(got[0].dtype() == dtype);
      CHECK(got[0].shape() == Shape{n});
      CHECK(got[0].BitwiseEqual(value));
    }
  }
  // 256 MiB in one tensor.
  Graph g;
  Scope root = Scope::Root(&g);
  const int64_t n = int64_t{64} << 20;
  Output in =
      ops::Placeholder(root.WithOpName("in").WithDevice("/job:worker/task:0"), DT_FLOAT, {n});
  Output out = ops::Identity(root.WithOpName("out").WithDevice("/job:worker/task:1"), in);
  Tensor big(DT_FLOAT, {n});
  FillRandomBits<float>(big, 99);
  auto sess = Connect(g, s0.target());
  auto got = sess->Run({{in, big}}, {out});
  CHECK(got[0].TotalBytes() == size_t{256} << 20);
  CHECK(got[0].BitwiseEqual(big));
}

// A step that keeps worker:1 busy for about a second: a chain of 1024x1024 matmuls.
Output SlowChain(const Scope& root, const std::string& device, int links) {
  Scope s = root.WithDevice(device);
  Output m = ops::Const(s, testing::RandomTensor({1024, 1024}, 3, -0.03f, 0.03f));
  Output x = m;
  for (int i = 0; i < links; ++i) x = ops::MatMul(s, x, m);
  return ops::Sum(s, x);
}

TEST_CASE("A worker killed in the middle of a step fails the step, naming it; nothing hangs",
          "[distributed]") {
  std::vector<std::string> addr;
  const std::string cluster = LoopbackCluster({{"worker", 2}}, &addr);
  ServerProcess w0(cluster, "worker", 0);
  auto w1 = std::make_unique<ServerProcess>(cluster, "worker", 1);
  Graph g;
  Scope root = Scope::Root(&g);
  Output slow = SlowChain(root, "/job:worker/task:1", 60);
  Output total = ops::Add(root.WithDevice("/job:worker/task:0"), slow, ops::Const(root, 1.0f));
  auto sess = Connect(g, Target(addr[0]));
  sess->Run({total});  // registers and warms up; both tasks are alive

  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    w1->Kill();
  });
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> out;
  Status s = sess->TryRun({}, {total}, {}, &out);
  killer.join();
  INFO(s.ToString());
  CHECK_FALSE(s.ok());
  CHECK(s.code() == Code::kUnavailable);
  CHECK_THAT(s.message(), Catch::Contains("/job:worker/replica:0/task:1"));
  CHECK(SecondsSince(t0) < 15);

  // While it is down, the next step fails fast.
  t0 = std::chrono::steady_clock::now();
  s = sess->TryRun({}, {total}, {}, &out);
  CHECK_FALSE(s.ok());
  CHECK_THAT(s.message(), Catch::Contains("/job:worker/replica:0/task:1"));
  CHECK(SecondsSince(t0) < 10);

  // Once it is back (same address), the session registers its graph there again and works.
  w1 = std::make_unique<ServerProcess>(cluster, "worker", 1);
  Status back;
  for (int attempt = 0; attempt < 40; ++attempt) {
    back = sess->TryRun({}, {total}, {}, &out);
    if (back.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  INFO(back.ToString());
  CHECK(back.ok());
}

TEST_CASE("Workers started before the ps wait for it; a missing ps times out naming it",
          "[distributed]") {
  std::vector<std::string> addr;
  const std::string cluster = LoopbackCluster({{"ps", 1}, {"worker", 1}}, &addr);
  ServerProcess w0(cluster, "worker", 0);
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithDevice("/job:ps/task:0"), 2.0f);
  Output b = ops::Mul(root.WithDevice("/job:worker/task:0"), a, a);

  SessionOptions quick;
  quick.cluster.connect_timeout_s = 1.5;
  auto t0 = std::chrono::steady_clock::now();
  try {
    Connect(g, Target(addr[1]), quick);
    FAIL("connected without a ps");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnavailable);
    CHECK_THAT(e.what(), Catch::Contains("/job:ps/replica:0/task:0"));
    CHECK_THAT(e.what(), Catch::Contains(addr[0]));
    CHECK_THAT(e.what(), Catch::Contains("Timed out"));
  }
  CHECK(SecondsSince(t0) < 10);

  std::unique_ptr<ServerProcess> ps;
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    ps = std::make_unique<ServerProcess>(cluster, "ps", 0);
  });
  auto sess = Connect(g, Target(addr[1]));  // waits for the ps
  late.join();
  CHECK(sess->Run({b})[0].scalar<float>() == 4.0f);
}

TEST_CASE("A request without the cluster token is rejected", "[distributed]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(LoopbackCluster({{"worker", 1}}, &addr)).ValueOrThrow();
  ServerOptions so;
  so.cluster.token = "s3cret";
  Server server(spec, "worker", 0, so);
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root, 3.0f);
  for (std::string token : {"", "wrong"}) {
    SessionOptions o;
    o.cluster.token = token;
    try {
      Connect(g, server.target(), o);
      FAIL("accepted token '" << token << "'");
    } catch (const Error& e) {
      CHECK(e.code() == Code::kUnauthenticated);
      CHECK_THAT(e.what(), Catch::Contains("token"));
    }
  }
  SessionOptions o;
  o.cluster.token = "s3cret";
  auto sess = Connect(g, server.target(), o);
  CHECK(sess->Run({c})[0].scalar<float>() == 3.0f);
  // An unconstrained node runs on the session's own task.
  CHECK(sess->DevicePlacement().at(c.node->name()) == "/job:worker/replica:0/task:0/device:CPU:0");
}

TEST_CASE("A cluster fetch of a variable being trained is never torn", "[distributed][threads]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(LoopbackCluster({{"worker", 1}}, &addr)).ValueOrThrow();
  Server server(spec, "worker", 0);
  Graph g;
  Scope root = Scope::Root(&g);
  const int64_t n = 1 << 18;
  Variable v = GetVariable(root, "v", {n}, [](const Scope& s, const Shape& shape, DType) {
    return ops::Const(s, Tensor(DT_FLOAT, shape));
  });
  Output step = ops::AssignAdd(root, v.ref(), ops::OnesLike(root, v.value()));
  auto sess = Connect(g, server.target());
  sess->Run({}, {}, {GlobalVariablesInitializer(root)});
  std::atomic<bool> done{false};
  std::thread trainer([&] {
    for (int i = 0; i < 100; ++i) sess->Run({}, {}, {step});
    done = true;
  });
  int torn = 0, reads = 0;
  while (!done || reads == 0) {
    Tensor t = sess->Run({v.value()})[0];
    for (int64_t i = 1; i < n; ++i) {
      if (t.data<float>()[i] != t.data<float>()[0]) {
        ++torn;
        break;
      }
    }
    ++reads;
  }
  trainer.join();
  INFO(reads << " snapshots");
  CHECK(torn == 0);
}

// A certificate authority and a certificate for 127.0.0.1 (server and client use) under `dir`.
bool MakeCertificates(const std::string& dir, const std::string& name) {
  const std::string script = fmt::format(
      "set -e; cd '{0}'; "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout {1}_ca.key -out {1}_ca.pem -days 1 "
      "-subj /CN={1}-ca; "
      "openssl req -newkey rsa:2048 -nodes -keyout {1}.key -out {1}.csr -subj /CN=127.0.0.1; "
      "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' > "
      "{1}.ext; "
      "openssl x509 -req -in {1}.csr -CA {1}_ca.pem -CAkey {1}_ca.key -CAcreateserial "
      "-out {1}.pem -days 1 -extfile {1}.ext",
      dir, name);
  return std::system(("bash -c \"" + script + "\" > /dev/null 2>&1").c_str()) == 0;
}

TEST_CASE("TLS with mutual authentication: matching certificates work, others are refused",
          "[distributed]") {
  char tmpl[] = "/tmp/pf_tls_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  if (!MakeCertificates(dir, "good") || !MakeCertificates(dir, "rogue")) {
    WARN("openssl could not make test certificates: TLS not tested");
    return;
  }
  auto tls = [&](const std::string& ca, const std::string& cert) {
    ClusterOptions o;
    o.tls_ca_file = dir + "/" + ca + "_ca.pem";
    o.tls_cert_file = dir + "/" + cert + ".pem";
    o.tls_key_file = dir + "/" + cert + ".key";
    o.connect_timeout_s = 2;
    return o;
  };
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(LoopbackCluster({{"worker", 1}}, &addr)).ValueOrThrow();
  ServerOptions so;
  so.cluster = tls("good", "good");
  Server server(spec, "worker", 0, so);
  Graph g;
  Scope root = Scope::Root(&g);
  Output c = ops::Const(root, 5.0f);
  SessionOptions ok;
  ok.cluster = tls("good", "good");
  CHECK(Connect(g, server.target(), ok)->Run({c})[0].scalar<float>() == 5.0f);

  SessionOptions plain, rogue, half;
  plain.cluster.connect_timeout_s = 2;
  rogue.cluster = tls("rogue", "rogue");  // a certificate the server's CA did not sign
  half.cluster = tls("good", "good");
  half.cluster.tls_key_file.clear();
  for (const SessionOptions* o : {&plain, &rogue}) {
    auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(Connect(g, server.target(), *o), Error);
    CHECK(SecondsSince(t0) < 15);
  }
  try {
    Connect(g, server.target(), half);
    FAIL("TLS without a key");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("tls_key_file"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("A cluster session logs every task's devices and full device names", "[distributed]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(LoopbackCluster({{"ps", 1}, {"worker", 1}}, &addr)).ValueOrThrow();
  Server ps(spec, "ps", 0), worker(spec, "worker", 0);
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithOpName("a").WithDevice("/job:ps/task:0"), 2.f);
  Output b = ops::Neg(root.WithOpName("b"), a);  // no request: the session's task (worker:0)
  SessionOptions opts;
  opts.log_device_placement = true;
  testing::LogCapture log;  // the device mapping and the summary go to stderr, through the logger
  const std::string text = testing::CaptureStdout([&] {
    auto sess = Connect(g, worker.target(), opts);
    CHECK(sess->Run({b})[0].scalar<float>() == -2.f);
  });
  CHECK(text ==
        "a: (Const): /job:ps/replica:0/task:0/device:CPU:0\n"
        "b: (Neg): /job:worker/replica:0/task:0/device:CPU:0\n");
  const std::string logged = log.Text();
  CHECK_THAT(logged, Catch::Contains("Device mapping:\n"));
  CHECK_THAT(logged, Catch::Contains("/job:ps/replica:0/task:0/device:CPU:0 -> "));
  CHECK_THAT(logged, Catch::Contains("/job:worker/replica:0/task:0/device:CPU:0 -> "));
  CHECK_THAT(logged, Catch::Contains("1 Send/Recv pairs"));
}

TEST_CASE("A traced cluster step merges every task's node stats on one time line",
          "[distributed]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(LoopbackCluster({{"ps", 1}, {"worker", 1}}, &addr)).ValueOrThrow();
  Server ps(spec, "ps", 0), worker(spec, "worker", 0);
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root.WithOpName("a").WithDevice("/job:ps/task:0"),
                        testing::RandomTensor({256, 256}, 5));
  Output b = ops::MatMul(root.WithOpName("b").WithDevice("/job:worker/task:0"), a, a);
  auto sess = Connect(g, worker.target());
  sess->Run({b});
  RunOptions ro;
  ro.trace = true;
  RunMetadata md;
  sess->Run(ro, {}, {b}, {}, &md);
  std::map<std::string, std::string> device_of;
  for (const NodeExecStats& n : md.step_stats) {
    device_of[n.node] = n.device;
    // Shifted onto the client's step: within it, give or take the clocks' resolution.
    CHECK(n.start_us >= -1000);
    CHECK(n.end_us <= md.step_us + 1000);
    CHECK(n.end_us >= n.start_us);
  }
  CHECK(device_of.at("a") == "/job:ps/replica:0/task:0/device:CPU:0");
  CHECK(device_of.at("b") == "/job:worker/replica:0/task:0/device:CPU:0");
  const std::string json = ChromeTraceJson(md);
  CHECK_THAT(json, Catch::Contains("\"name\": \"/job:ps/replica:0/task:0/device:CPU:0\""));
  CHECK_THAT(json, Catch::Contains("\"name\": \"/job:worker/replica:0/task:0/device:CPU:0\""));
  // Without the option nothing is recorded.
  RunMetadata none;
  sess->Run(RunOptions{}, {}, {b}, {}, &none);
  CHECK(none.step_stats.empty());
}

// The master plans a cluster step as the in-process Session does (executor/prepared_step.h):
// the remapper's fusions reach the workers, and the values are those of the unfused graph.
TEST_CASE("A cluster step runs the remapper's fused ops on the workers", "[distributed]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(LoopbackCluster({{"ps", 1}, {"worker", 1}}, &addr)).ValueOrThrow();
  Server ps(spec, "ps", 0), worker(spec, "worker", 0);
  Graph g;
  Scope root = Scope::Root(&g);
  Scope w = root.WithDevice("/job:worker/task:0");
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 6});
  Output weights = ops::Const(root.WithOpName("weights").WithDevice("/job:ps/task:0"),
                              testing::RandomTensor({6, 4}, 1));
  Output bias = ops::Const(w.WithOpName("bias"), testing::RandomTensor({4}, 2));
  Output mm = ops::MatMul(w.WithOpName("mm"), x, weights);
  Output relu = ops::Relu(w.WithOpName("relu"), ops::BiasAdd(w.WithOpName("ba"), mm, bias));
  // A consumer made before the fused node (the remapper adds it last): the worker's graph must
  // still arrive inputs first.
  Output out = ops::Neg(w.WithOpName("out"), relu);
  const FeedDict feeds = {{x, testing::RandomTensor({5, 6}, 3)}};
  std::map<std::string, std::string> ops_of[2];
  std::vector<Tensor> values[2];
  for (int fused = 0; fused < 2; ++fused) {
    SessionOptions o;
    o.rewrite_options.remapping = fused == 1;
    auto sess = Connect(g, worker.target(), o);
    RunOptions ro;
    ro.trace = true;
    RunMetadata md;
    values[fused] = sess->Run(ro, feeds, {out}, {}, &md);
    for (const NodeExecStats& n : md.step_stats) ops_of[fused][n.node] = n.op;
  }
  CHECK(ops_of[1].at("relu") == "_FusedMatMul");
  CHECK(ops_of[1].count("mm") == 0);
  CHECK(ops_of[0].at("relu") == "Relu");
  CHECK(ops_of[0].at("mm") == "MatMul");
  CHECK(testing::MaxAbsDiff(values[0][0], values[1][0]) < 1e-6);
}

// max_cached_signatures bounds the master's signatures as it bounds the Session's: the least
// recently used is dropped (and deregistered from its tasks), and runs again when asked.
TEST_CASE("A cluster session keeps at most max_cached_signatures signatures", "[distributed]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(LoopbackCluster({{"worker", 1}}, &addr)).ValueOrThrow();
  Server worker(spec, "worker", 0);
  Graph g;
  Scope root = Scope::Root(&g).WithDevice("/job:worker/task:0");
  Output a = ops::Const(root.WithOpName("a"), 2.f);
  std::vector<Output> outs = {ops::Neg(root, a), ops::Square(root, a), ops::Exp(root, a)};
  SessionOptions o;
  o.max_cached_signatures = 2;
  auto sess = Connect(g, worker.target(), o);
  for (const Output& y : outs) sess->Run({y});
  CHECK(sess->num_cached_signatures() == 2);
  CHECK(sess->Run({outs[0]})[0].scalar<float>() == -2.f);  // evicted, prepared again
  CHECK(sess->num_cached_signatures() == 2);
  CHECK(sess->Run({outs[2]})[0].scalar<float>() == Approx(std::exp(2.f)));
  CHECK(sess->num_cached_signatures() == 2);
}

TEST_CASE("A server refuses a busy port, naming the address", "[distributed]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(LoopbackCluster({{"worker", 1}}, &addr)).ValueOrThrow();
  Server first(spec, "worker", 0);
  try {
    Server second(spec, "worker", 0);
    FAIL("two servers on one port");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains(addr[0]));
  }
}

}  // namespace
}  // namespace pf::cluster_test
