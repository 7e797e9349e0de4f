// pf-train: builds a model, replicates it as towers over the devices present, places it and
// trains it, printing progress.
//
//   pf-train --model mlp_seed000 --steps 100 --log-device-placement   # towers on every device
//   pf-train --towers 4 --devices cpu --aggregation allreduce
//   pf-train --model mlp_seed000 --steps 1000 --towers-table 1,2        # seed 000's experiment
//   pf-train --model mnist_mlp --data ../shared/data/mnist --epochs 5 --checkpoint ckpt
//   pf-train --model mnist_mlp --checkpoint ckpt --restore --epochs 10   # continues exactly
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "placeflow/devices/gpu_probe.h"
#include "tools/tower_timing.h"
#ifdef PF_WITH_GRPC
#include "tools/cluster_train.h"
#endif
#include "tools/trainer.h"

namespace {

struct Args {
  std::string model = "mlp_seed000";
  int64_t steps = 100;
  int64_t epochs = 1;
  int64_t batch = 0;      // 0: the model's default
  double lr = 0;          // 0: the model's default
  std::string optimizer;  // "": the model's default
  bool log_placement = false;
  int64_t seed = 1;
  std::string data;
  std::string init = "glorot";
  std::string checkpoint;
  bool restore = false;
  std::string trace;
  int64_t cpu_devices = 1;
  std::string place;  // "regex=device,regex=device"
  bool soft_placement = true;
  int64_t print_every = 0;
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  int threads = 0;
  std::string towers = "auto";  // a count, or auto: one per GPU, else 2 CPU devices
  std::string devices = "all";  // cpu | gpu | all (the GPUs when there are any, else CPUs)
  std::string aggregation = "param";
  std::string variable_device = "/cpu:0";
  std::string towers_table;  // "1,2": time mlp_seed000 with each tower count, print the table
  // A cluster task (tools/cluster_train.h), or a whole local cluster.
  std::string job_name, ps_hosts, worker_hosts, local_cluster;
  int64_t task_index = 0;
  int64_t save_every = 0;  // steps between checkpoints (besides each epoch's)
  bool sync_replicas = false;
  int64_t replicas_to_aggregate = 0;  // 0: one gradient per worker
  double sync_timeout = 120;          // seconds a sync step may wait for the others
};

[[noreturn]] void Usage(const std::string& error) {
  std::fprintf(
      stderr,
      "%s\nusage: pf-train [--model mlp_seed000|mnist_mlp|lenet|mobilenet_v2_small|cnn_seed004]\n"
      "                [--steps N] [--epochs N] [--batch N] "
      "[--lr F]\n"
      "                [--optimizer sgd|momentum|adam|rmsprop|adagrad] [--log-device-placement] "
      "[--seed N]\n"
      "                [--data DIR] [--init glorot|seed] [--checkpoint DIR] [--restore]\n"
      "                [--print-every N] [--train-limit N] [--test-limit N] [--threads N]\n"
      "                [--trace FILE] [--cpu-devices N] [--place 'regex=device,...']\n"
      "                [--towers N|auto] [--devices cpu|gpu|all] [--aggregation param|allreduce]\n"
      "                [--variable-device DEV] [--towers-table 1,2,...]\n"
      "                [--job_name ps|worker --task_index N --ps_hosts h:p,... --worker_hosts "
      "h:p,...]\n"
      "                [--local-cluster ps=N,worker=M] [--save-every N]\n"
      "                [--sync_replicas [--replicas_to_aggregate K] [--sync_timeout S]]\n",
      error.c_str());
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  Args a;
  std::map<std::string, std::string*> strings = {{"--model", &a.model},
                                                 {"--data", &a.data},
                                                 {"--init", &a.init},
                                                 {"--optimizer", &a.optimizer},
                                                 {"--checkpoint", &a.checkpoint},
                                                 {"--trace", &a.trace},
                                                 {"--place", &a.place},
                                                 {"--towers", &a.towers},
                                                 {"--devices", &a.devices},
                                                 {"--aggregation", &a.aggregation},
                                                 {"--variable-device", &a.variable_device},
                                                 {"--towers-table", &a.towers_table},
                                                 {"--job_name", &a.job_name},
                                                 {"--ps_hosts", &a.ps_hosts},
                                                 {"--worker_hosts", &a.worker_hosts},
                                                 {"--local-cluster", &a.local_cluster}};
  std::map<std::string, int64_t*> ints = {{"--steps", &a.steps},
                                          {"--epochs", &a.epochs},
                                          {"--batch", &a.batch},
                                          {"--seed", &a.seed},
                                          {"--print-every", &a.print_every},
                                          {"--train-limit", &a.train_limit},
                                          {"--test-limit", &a.test_limit},
                                          {"--cpu-devices", &a.cpu_devices},
                                          {"--task_index", &a.task_index},
                                          {"--save-every", &a.save_every},
                                          {"--replicas_to_aggregate", &a.replicas_to_aggregate}};
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") Usage("pf-train: trains a placeflow model");
    if (flag == "--log-device-placement") {
      a.log_placement = true;
      continue;
    }
    if (flag == "--restore") {
      a.restore = true;
      continue;
    }
    if (flag == "--sync_replicas") {
      a.sync_replicas = true;
      continue;
    }
    if (i + 1 >= argc) Usage("missing value for " + flag);
    std::string value = argv[++i];
    try {
      if (strings.count(flag))
        *strings[flag] = value;
      else if (ints.count(flag))
        *ints[flag] = std::stoll(value);
      else if (flag == "--lr")
        a.lr = std::stod(value);
      else if (flag == "--sync_timeout")
        a.sync_timeout = std::stod(value);
      else if (flag == "--threads")
        a.threads = std::stoi(value);
      else
        Usage("unknown flag " + flag);
    } catch (const std::logic_error&) {
      Usage("bad value '" + value + "' for " + flag);
    }
  }
  if (a.restore && a.checkpoint.empty()) Usage("--restore needs --checkpoint DIR");
  if (a.devices != "cpu" && a.devices != "gpu" && a.devices != "all")
    Usage("--devices must be cpu, gpu or all");
  if (a.aggregation != "param" && a.aggregation != "allreduce")
    Usage("--aggregation must be param or allreduce");
  return a;
}

// --place "affine0=/cpu:1,affine_last=/cpu:0": every node whose name matches a regex (searched,
// not anchored) asks for that device; later rules win. Model parallelism as in seed article 003.
void ApplyPlacementRules(pf::Graph& g, const std::string& rules) {
  std::vector<std::pair<std::regex, std::string>> parsed;
  size_t start = 0;
  while (start < rules.size()) {
    size_t end = rules.find(',', start);
    std::string rule =
        rules.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? rules.size() : end + 1;
    size_t eq = rule.rfind('=');
    if (eq == std::string::npos) Usage("bad --place rule '" + rule + "': expected regex=device");
    std::string device = rule.substr(eq + 1);
    pf::DeviceName::ParseOrError(device).ValueOrThrow();
    try {
      parsed.emplace_back(std::regex(rule.substr(0, eq)), device);
    } catch (const std::regex_error& e) {
      Usage("bad regex in --place rule '" + rule + "': " + e.what());
    }
  }
  for (pf::Node* n : g.nodes()) {
    for (const auto& [re, device] : parsed) {
      if (std::regex_search(n->name(), re)) n->set_requested_device(device);
    }
  }
}

struct TowerPlan {
  std::string kind;  // cpu | gpu
  int count;
};

int ParseCount(const std::string& text, const char* flag) {
  try {
    size_t used = 0;
    int n = std::stoi(text, &used);
    if (used == text.size() && n >= 1) return n;
  } catch (const std::logic_error&) {
  }
  Usage(std::string("bad value '") + text + "' for " + flag + ": expected a positive count");
}

// --devices all picks the GPUs when the process sees any; --towers auto makes one tower per
// GPU, or two on CPU devices (seed article 000's two towers, on this project's 2-core machines).
TowerPlan PlanTowers(const Args& a) {
  const int gpus = pf::CudaDeviceCount();
  TowerPlan p;
  p.kind = a.devices == "all" ? (gpus > 0 ? "gpu" : "cpu") : a.devices;
  p.count = a.towers == "auto" ? (p.kind == "gpu" ? std::max(1, gpus) : 2)
                               : ParseCount(a.towers, "--towers");
  return p;
}

pf::train::Aggregation AggregationOf(const Args& a) {
  return a.aggregation == "allreduce" ? pf::train::Aggregation::kAllReduce
                                      : pf::train::Aggregation::kParameterDevice;
}

// Seed article 000's experiment: the same model and batch, timed with each tower count.
int TowersTable(const Args& a) {
  pf::towers::TimingOptions o;
  o.model = a.model;
  o.kind = PlanTowers(a).kind;
  o.aggregation = AggregationOf(a);
  o.variable_device = a.variable_device;
  o.optimizer = a.optimizer;
  o.steps = a.steps;
  o.batch = a.batch > 0 ? a.batch : (a.model == "mlp_seed000" ? 2000 : 100);
  o.threads = a.threads;
  std::printf("%s, batch %lld, %lld steps, %s, aggregation %s%s\n", a.model.c_str(),
              static_cast<long long>(o.batch), static_cast<long long>(o.steps),
              a.optimizer.empty() ? "default optimizer" : a.optimizer.c_str(),
              a.aggregation.c_str(),
              a.aggregation == "param" ? (", variables on " + a.variable_device).c_str() : "");
  std::printf("%-7s %-24s %9s %9s %11s %10s %12s\n", "towers", "devices", "total_s", "ms/step",
              "examples/s", "send_recv", "aggregation");
  std::vector<std::pair<int, double>> totals;
  size_t start = 0;
  while (start <= a.towers_table.size()) {
    size_t end = a.towers_table.find(',', start);
    if (end == std::string::npos) end = a.towers_table.size();
    o.towers = ParseCount(a.towers_table.substr(start, end - start), "--towers-table");
    start = end + 1;
    pf::towers::Timing t = pf::towers::TimeTowers(o);
    std::string devices;
    for (const std::string& d : t.devices) devices += (devices.empty() ? "" : ",") + d;
    std::printf("%-7d %-24s %9.2f %9.3f %11.0f %9.1f%% %11.1f%%\n", o.towers, devices.c_str(),
                t.seconds, t.ms_per_step, t.examples_per_s, 100 * t.transfer_share,
                100 * t.aggregation_share);
    std::fflush(stdout);
    totals.emplace_back(o.towers, t.seconds);
  }
  // The article's own lines ("N块GPU用时: X.XXs": N GPUs took X.XX s).
  for (const auto& [n, seconds] : totals)
    std::printf("%d tower(s) on %s: %.2fs\n", n, o.kind.c_str(), seconds);
  return 0;
}

std::string DefaultData() {
  for (const char* candidate : {"/usr/share/datasets/fashion-mnist", "../shared/data/mnist"}) {
    if (std::filesystem::exists(candidate)) return candidate;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  try {
    if (!a.towers_table.empty()) return TowersTable(a);
#ifdef PF_WITH_GRPC
    if (!a.local_cluster.empty()) return pf::cluster::RunLocalCluster(a.local_cluster, argc, argv);
    std::unique_ptr<pf::cluster::Task> task;
    if (!a.job_name.empty()) {
      task = std::make_unique<pf::cluster::Task>(pf::cluster::TaskFlags{
          a.job_name, static_cast<int>(a.task_index), a.ps_hosts, a.worker_hosts});
      if (task->is_ps()) return task->Serve();
    }
#else
    if (!a.local_cluster.empty() || !a.job_name.empty())
      Usage("cluster flags need a placeflow built with the cluster runtime (PF_WITH_GRPC)");
#endif
    pf::data::Dataset train, test;
    pf::models::ModelOptions mo;
    mo.init = a.init;
    mo.seed = a.seed;
    mo.optimizer = a.optimizer;
    mo.learning_rate = a.lr;
    const bool classifier = pf::models::IsClassifier(a.model);
    if (classifier) {
      std::string dir = a.data.empty() ? DefaultData() : a.data;
      if (dir.empty())
        Usage(
            "--data DIR is required: no default data set found (apt-get install "
            "dataset-fashion-mnist)");
      train = pf::data::Take(pf::data::LoadMnist(dir, pf::data::Split::kTrain).ValueOrThrow(),
                             a.train_limit);
      test = pf::data::Take(pf::data::LoadMnist(dir, pf::data::Split::kTest).ValueOrThrow(),
                            a.test_limit);
      std::printf("data: %s (%lld train, %lld test examples)\n", dir.c_str(),
                  static_cast<long long>(train.size()), static_cast<long long>(test.size()));
      mo.steps_per_epoch = std::max<int64_t>(1, train.size() / (a.batch > 0 ? a.batch : 100));
    }
    const TowerPlan plan = PlanTowers(a);
    pf::train::TowerOptions towers;
    towers.devices = pf::towers::TowerDevices(plan.kind, plan.count);
    towers.aggregation = AggregationOf(a);
    towers.variable_device = a.variable_device;
    pf::Graph g;
    g.set_seed(a.seed);
    pf::Scope root = pf::Scope::Root(&g);
#ifdef PF_WITH_GRPC
    // Between-graph replication: one tower per worker process, variables on the ps tasks.
    if (task) {
      root = task->Place(root);
      if (a.sync_replicas) {
        mo.total_num_replicas = task->num_workers();
        mo.replicas_to_aggregate = a.replicas_to_aggregate > 0
                                       ? static_cast<int>(a.replicas_to_aggregate)
                                       : task->num_workers();
      }
    } else {
      mo.towers = towers;
    }
#else
    mo.towers = towers;
#endif
    if (a.sync_replicas && mo.replicas_to_aggregate == 0)
      Usage(
          "--sync_replicas trains the workers of a cluster: add --job_name ... or --local-cluster");
    pf::models::Model m = pf::models::BuildModel(a.model, root, mo);
    pf::Operation init = pf::GlobalVariablesInitializer(root);
    // Sync replicas: what the chief puts in place once the variables are ready (again after a
    // restore), and every worker's local step.
    pf::Operation sync_chief_init, sync_local_init;
    if (m.sync) {
      sync_chief_init = pf::ops::NoOp(
          root.WithOpName("sync_chief_start")
              .WithControlDependencies({m.sync->chief_init_op(), m.sync->InitTokensOp(root)}));
      sync_local_init = m.sync->local_step_init_op();
    }
    if (!a.place.empty()) ApplyPlacementRules(g, a.place);
    pf::SessionOptions opts;
    opts.log_device_placement = a.log_placement;
    opts.allow_soft_placement = a.soft_placement;
    opts.device_count["CPU"] =
        std::max(static_cast<int>(a.cpu_devices), plan.kind == "cpu" ? plan.count : 1);
    opts.num_threads = a.threads;
    pf::trainer::Options to;
#ifdef PF_WITH_GRPC
    if (task) {
      opts = pf::SessionOptions{};
      opts.target = task->target();
      opts.log_device_placement = a.log_placement;
      opts.allow_soft_placement = a.soft_placement;
      to.count_local_steps = true;  // each worker runs its own epochs
      a.seed += task->index();      // and its own batches
      if (!task->is_chief()) {
        a.checkpoint.clear();  // the chief saves
        a.restore = false;
      }
    }
#endif
    pf::Session sess(g, opts);
    std::string devices;
    for (const std::string& d : m.tower_devices) devices += (devices.empty() ? "" : ",") + d;
    std::string replication = fmt::format(
        "{} tower(s) on {} (aggregation {}{})", m.tower_devices.size(), devices, a.aggregation,
        a.aggregation == "param" ? ", variables on " + a.variable_device : "");
    if (m.tower_devices.empty())
      replication = "between-graph replica on this worker (variables on the ps tasks, async)";
    if (m.sync)
      replication = fmt::format(
          "between-graph replica on this worker (variables on the ps tasks, sync: {} of {} "
          "workers' gradients per update)",
          m.sync->replicas_to_aggregate(), m.sync->total_num_replicas());
    std::printf("pf-train: model %s, optimizer %s, %s, %d graph nodes, %zu variables\n",
                m.name.c_str(), m.optimizer_name.c_str(), replication.c_str(), g.num_nodes(),
                pf::GlobalVariables(&g).size());
    std::fflush(stdout);
#ifdef PF_WITH_GRPC
    if (task && !task->is_chief()) {
      task->WaitForChief(sess, g);
    } else {
      sess.Run({}, {}, {init});
      if (m.sync) sess.Run({}, {}, {sync_chief_init});
    }
    if (m.sync) sess.Run({}, {}, {sync_local_init});
#else
    sess.Run({}, {}, {init});
#endif
    to.epochs = a.epochs;
    to.steps = a.steps;
    to.batch = a.batch;
    to.print_every = a.print_every;
    to.seed = static_cast<uint64_t>(a.seed);
    to.checkpoint_dir = a.checkpoint;
    to.restore = a.restore;
    to.trace_path = a.trace;
#ifdef PF_WITH_GRPC
    // One trace per worker (each merges every task's part of that worker's step).
    if (task && !a.trace.empty()) {
      const auto dot = a.trace.rfind('.');
      const std::string suffix = ".worker" + std::to_string(task->index());
      to.trace_path = dot == std::string::npos
                          ? a.trace + suffix
                          : a.trace.substr(0, dot) + suffix + a.trace.substr(dot);
    }
#endif
    to.checkpoint_every = a.save_every;
    pf::trainer::Trainer* trainer_ptr = nullptr;
    int sync_timeouts = 0;
#ifdef PF_WITH_GRPC
    if (task) {
      // A ps that restarts loses its variables: the chief restores the last checkpoint (or
      // initialises again), every worker waits for that and goes on.
      to.recover = [&](const pf::Error& e) {
        // A sync step that keeps timing out waits for a worker that is gone: give up.
        if (m.sync && e.code() == pf::Code::kDeadlineExceeded && ++sync_timeouts > 3) return false;
        bool again = task->RecoverStep(sess, g, e, [&] {
          if (!trainer_ptr->RestoreLatest()) sess.Run({}, {}, {init});
          if (m.sync) sess.Run({}, {}, {sync_chief_init});
        });
        if (again && m.sync) sess.Run({}, {}, {sync_local_init});
        return again;
      };
    }
    std::unique_ptr<pf::train::SyncReplicasChief> sync_chief;
    if (m.sync) {
      to.until_global_step = true;
      to.step_timeout_ms = static_cast<int64_t>(a.sync_timeout * 1000);
      if (task->is_chief()) {
        const int64_t last = classifier ? a.epochs * mo.steps_per_epoch : a.steps;
        sync_chief =
            std::make_unique<pf::train::SyncReplicasChief>(sess, *m.sync, last, a.sync_timeout);
      }
    }
#endif
    pf::trainer::Trainer trainer(m, sess, to);
    trainer_ptr = &trainer;
    trainer.Run(classifier ? &train : nullptr, classifier ? &test : nullptr);
#ifdef PF_WITH_GRPC
    if (sync_chief) {
      sync_chief->Stop();
      ThrowIfError(sync_chief->status());
      std::printf("sync replicas: %lld updates, %lld stale gradients dropped\n",
                  static_cast<long long>(sync_chief->updates()),
                  static_cast<long long>(sess.Run({m.sync->num_dropped()})[0].scalar<int64_t>()));
    }
#endif
    return 0;
  } catch (const pf::Error& e) {
    std::fprintf(stderr, "pf-train: %s\n", e.what());
    return 1;
  }
}
