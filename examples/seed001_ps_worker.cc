// Seed 001: distributed MNIST with a parameter server and workers, as the TensorFlow 1.x article
// writes it: every task runs a server; each worker builds the same graph (between-graph
// replication) under replica_device_setter, so variables live on the ps and the model runs on
// the worker; updates are asynchronous; MonitoredTrainingSession makes worker 0 the chief (it
// initialises the variables) and the other workers wait for it; StopAtStepHook ends training at
// a global step.
//
//   seed001_ps_worker --job_name=ps --task_index=0 --ps_hosts=h0:2222
//   --worker_hosts=h1:2222,h2:2222 seed001_ps_worker --job_name=worker --task_index=1
//   --ps_hosts=... --worker_hosts=... seed001_ps_worker [--data_dir=DIR] [--train_steps=N]   # the
//   whole cluster in this process:
//                                                           # 1 ps and 2 workers on free ports
//
// The chief prints the test accuracy at the end and exits 1 below 50% (chance is 10%).
#include <placeflow/data/idx.h>
#include <placeflow/distributed/server.h>
#include <placeflow/placeflow.h>
#include <placeflow/train/basic_hooks.h>
#include <placeflow/train/free_port.h>
#include <placeflow/train/monitored_session.h>

#include <map>
#include <thread>

namespace {

struct Flags {
  std::string job_name, ps_hosts, worker_hosts;
  int task_index = 0;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t train_steps = 400;
  int64_t batch_size = 100;
};

Flags ParseFlags(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
      throw pf::Error(pf::errors::InvalidArgument("expected --name=value, got '", arg, "'"));
    kv[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
  }
  Flags f;
  for (const auto& [k, v] : kv) {
    if (k == "job_name")
      f.job_name = v;
    else if (k == "task_index")
      f.task_index = std::stoi(v);
    else if (k == "ps_hosts")
      f.ps_hosts = v;
    else if (k == "worker_hosts")
      f.worker_hosts = v;
    else if (k == "data_dir")
      f.data_dir = v;
    else if (k == "train_steps")
      f.train_steps = std::stoll(v);
    else if (k == "batch_size")
      f.batch_size = std::stoll(v);
    else
      throw pf::Error(pf::errors::InvalidArgument("unknown flag --", k));
  }
  return f;
}

// One worker: the article's 784-100-10 network, trained until the global step reaches
// train_steps. Returns the test accuracy (the chief's; -1 on other workers).
double RunWorker(const Flags& f, const pf::ClusterSpec& cluster, const std::string& target) {
  pf::data::MnistArrays train = pf::data::LoadMnist(f.data_dir, pf::data::Split::kTrain).value();
  pf::Graph g;
  const std::string worker = "/job:worker/task:" + std::to_string(f.task_index);
  pf::train::ReplicaDeviceSetter setter(cluster.num_tasks("ps"), worker);
  pf::Scope root = setter.Apply(pf::Scope::Root(&g));
  pf::Output x = pf::ops::Placeholder(root.WithOpName("x"), pf::DT_FLOAT, {-1, 784});
  pf::Output y = pf::ops::Placeholder(root.WithOpName("y"), pf::DT_INT32, {-1});
  pf::Variable w1 = pf::GetVariable(root.WithVariableScope("hid"), "w", {784, 100},
                                    pf::init::TruncatedNormal(0, 0.1, 1));
  pf::Variable b1 = pf::GetVariable(root.WithVariableScope("hid"), "b", {100}, pf::init::Zeros());
  pf::Variable w2 = pf::GetVariable(root.WithVariableScope("sm"), "w", {100, 10},
                                    pf::init::TruncatedNormal(0, 0.1, 2));
  pf::Variable b2 = pf::GetVariable(root.WithVariableScope("sm"), "b", {10}, pf::init::Zeros());
  pf::Output hid = pf::ops::Relu(root, pf::ops::XwPlusB(root, x, w1.value(), b1.value()));
  pf::Output logits = pf::ops::XwPlusB(root, hid, w2.value(), b2.value());
  pf::Output loss = pf::ops::Mean(
      root.WithOpName("loss"), pf::ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, y).first);
  pf::Variable global_step = pf::train::GetOrCreateGlobalStep(root);
  pf::train::Adam opt(0.01);
  pf::Operation train_op = opt.Minimize(root, loss, &global_step);
  pf::Output accuracy = pf::train::Accuracy(root, logits, y);

  pf::train::MonitoredTrainingSessionOptions o;
  o.session_options.target = target;
  o.is_chief = f.task_index == 0;
  o.worker_index = f.task_index;
  o.hooks = {std::make_shared<pf::train::StopAtStepHook>(
      pf::train::StopAtStepHook::LastStep(f.train_steps))};
  auto sess = pf::train::MonitoredTrainingSession(&g, o);
  pf::Tensor images, labels;
  std::vector<int64_t> order(train.size());
  for (int64_t i = 0; i < train.size(); ++i)
    order[i] = (i * 7919 + f.task_index * 104729) % train.size();
  int64_t local = 0;
  while (!sess->ShouldStop()) {
    pf::data::Gather(train, order, (local * f.batch_size) % (train.size() - f.batch_size),
                     f.batch_size, &images, &labels);
    auto out = sess->Run({{x, images}, {y, labels}}, {loss, global_step.value()}, {train_op});
    if (++local % 100 == 0)
      fmt::print("worker {}: local step {}, global step {}, loss {:.4f}\n", f.task_index, local,
                 out[1].scalar<int64_t>(), out[0].scalar<float>());
  }
  double acc = -1;
  if (o.is_chief) {
    pf::data::MnistArrays test =
        pf::data::Take(pf::data::LoadMnist(f.data_dir, pf::data::Split::kTest).value(), 2000);
    acc = sess->raw_session()
              .Run({{x, test.images}, {y, test.labels}}, {accuracy})[0]
              .scalar<float>();
    fmt::print("test accuracy {:.4f} after {} global steps\n", acc, f.train_steps);
  }
  sess->Close();
  return acc;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f = ParseFlags(argc, argv);
  if (!f.job_name.empty()) {  // one task of a cluster, as the article runs it
    pf::ClusterSpec cluster =
        pf::ClusterSpec::Parse("ps=" + f.ps_hosts + ";worker=" + f.worker_hosts).value();
    pf::Server server(cluster, f.job_name, f.task_index);
    if (f.job_name == "ps") server.Join();  // serves until killed
    const double acc = RunWorker(f, cluster, server.target());
    return acc >= 0 && acc < 0.5 ? 1 : 0;
  }
  // The whole cluster in this process: one ps and two workers on free loopback ports.
  auto host = [](int port) { return "localhost:" + std::to_string(port); };
  const std::string spec = "ps=" + host(pf::train::FreeLoopbackPort()) +
                           ";worker=" + host(pf::train::FreeLoopbackPort()) + "," +
                           host(pf::train::FreeLoopbackPort());
  pf::ClusterSpec cluster = pf::ClusterSpec::Parse(spec).value();
  pf::Server ps(cluster, "ps", 0);
  pf::Server w0(cluster, "worker", 0), w1(cluster, "worker", 1);
  double acc = 0;
  std::thread other([&] {
    Flags f1 = f;
    f1.task_index = 1;
    try {
      RunWorker(f1, cluster, w1.target());
    } catch (const pf::Error& e) {
      fmt::print(stderr, "worker 1: {}\n", e.what());
    }
  });
  acc = RunWorker(f, cluster, w0.target());
  other.join();
  if (acc < 0.5) fmt::print(stderr, "seed001_ps_worker: accuracy {:.4f} is below 0.5\n", acc);
  return acc < 0.5 ? 1 : 0;
}
