// pf-train: builds a model, replicates it as towers over the devices present, places it and
// trains it, printing progress.
//
//   pf-train --model mlp_seed000 --steps 100 --log-device-placement   # towers on every device
//   pf-train --towers 4 --devices cpu --aggregation allreduce
//   pf-train --model mlp_seed000 --steps 1000 --towers-table 1,2        # seed 000's experiment
//   pf-train --model mnist_mlp --data ../shared/data/mnist --epochs 5 --checkpoint ckpt
//   pf-train --model mnist_mlp --checkpoint ckpt --restore --epochs 10   # continues exactly
//   pf-train --model mnist_mlp --logdir runs/a --cpu-devices 2            # then: tensorboard
//
// Ctrl-C (SIGINT) finishes the step in progress, saves a checkpoint when --checkpoint is set,
// flushes the summaries and exits with status 130; a second Ctrl-C kills at once.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "placeflow/devices/gpu_probe.h"
#include "placeflow/placer/placer.h"
#include "tools/flags.h"
#include "tools/run_main.h"
#include "tools/summaries.h"
#include "tools/tfrecord_input.h"
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
  std::string data_format = "idx";  // idx | tfrecord
  std::string input = "dataset";    // dataset (IteratorGetNext in the graph) | feed
  std::string init = "glorot";
  std::string checkpoint;
  bool restore = false;
  std::string trace;
  int64_t cpu_devices = 1;
  std::string place;  // "regex=device,regex=device"
  bool no_soft_placement = false;
  bool allow_nan = false;
  bool check_numerics = false;
  int64_t print_every = 0;
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  int64_t threads = 0;
  std::string towers = "auto";  // a count, or auto: one per GPU, else 2 CPU devices
  std::string devices = "all";  // cpu | gpu | all (the GPUs when there are any, else CPUs)
  std::string aggregation = "param";
  std::string variable_device = pf::train::kAutoVariableDevice;
  std::string towers_table;  // "1,2": time mlp_seed000 with each tower count, print the table
  // A cluster task (tools/cluster_train.h), or a whole local cluster.
  std::string job_name, ps_hosts, worker_hosts, local_cluster;
  int64_t task_index = 0;
  int64_t save_every = 0;  // steps between checkpoints (besides each epoch's)
  bool sync_replicas = false;
  int64_t replicas_to_aggregate = 0;  // 0: one gradient per worker
  double sync_timeout = 120;          // seconds a sync step may wait for the others
  std::string logdir;                 // TensorBoard event files (tools/summaries.h)
  int64_t histogram_every = 100;      // steps between weight and gradient histograms
  bool quiet = false;                 // no progress bar or periodic lines
};

// Set by SIGINT: the trainer stops after the step in progress.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void OnSigint(int) { g_interrupted.store(true); }

void InstallSigintHandler() {
  // The handler runs on a stack of its own (on this thread, which the kernel prefers for a
  // signal sent to the process): the signal frame is never written below the stack pointer of
  // the code it interrupts (oneDNN's generated kernels).
  static std::vector<char> alt(1 << 16);
  stack_t ss = {};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa = {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  // A second Ctrl-C gets the default action: the process ends.
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigaction(SIGINT, &sa, nullptr);
}

// Bad flags and settings: one line on stderr, exit status 2 (as for a usage error).
[[noreturn]] void Usage(const std::string& error) {
  std::fprintf(stderr, "pf-train: %s\n", error.c_str());
  std::exit(2);
}

// Limits that keep a typo from hanging the machine (--cpu-devices 5000000000 once asked for
// 705M devices): far above any sensible value, far below what breaks.
constexpr int64_t kMaxDevices = 1024;
constexpr int64_t kMaxThreads = 1024;
constexpr int64_t kMaxBatch = 10'000'000;
constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

const char kExamples[] =
    "examples:\n"
    "  pf-train --model mlp_seed000 --steps 100 --log-device-placement   # towers on every device\n"
    "  pf-train --towers 4 --devices cpu --aggregation allreduce\n"
    "  pf-train --model mnist_mlp --data DIR --epochs 5 --checkpoint ckpt\n"
    "  pf-train --model mnist_mlp --checkpoint ckpt --restore --epochs 10   # continues exactly\n"
    "MNIST-format data: Debian's dataset-fashion-mnist package (the default when installed, in\n"
    "/usr/share/datasets/fashion-mnist), or any directory of IDX files named\n"
    "train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-images-idx3-ubyte[.gz] and\n"
    "t10k-labels-idx1-ubyte[.gz].\n"
    "Ctrl-C finishes the step, saves a checkpoint (--checkpoint), flushes --logdir and exits 130.\n"
    "Exit status: 0 done, 1 an error while running, 2 a bad flag or value, 130 interrupted.\n";

// Every flag of pf-train: the parser, the range checks and --help come from this table.
pf::flags::FlagSet MakeFlags(Args& a) {
  using pf::flags::Positive;
  pf::flags::FlagSet f("pf-train",
                       "Trains a placeflow model replicated as towers over the devices present, "
                       "printing progress.");
  f.String("--model", &a.model, "the model to train",
           {"mlp_seed000", "mnist_mlp", "lenet", "mobilenet_v2_small", "cnn_seed004"});
  f.Int("--steps", &a.steps, "training steps (mlp_seed000; the classifiers train --epochs)", 1,
        kMaxCount);
  f.Int("--epochs", &a.epochs, "passes over the training set (classifiers)", 1, kMaxCount);
  f.Int("--batch", &a.batch,
        "examples per step, split over the towers; clamped to the training set's size", 1,
        kMaxBatch)
      .Default("2000 for mlp_seed000, else 100");
  f.Double("--lr", &a.lr, "base learning rate", Positive())
      .Default("the model's: 0.01 mlp_seed000, 0.3 mnist_mlp with sgd, else 0.001");
  f.String("--optimizer", &a.optimizer, "the optimizer",
           {"sgd", "momentum", "adam", "rmsprop", "adagrad"})
      .Default("sgd for the MLPs, adam for the CNNs");
  f.String("--init", &a.init, "weight initialiser (seed: the article's N(0, 1), which diverges)",
           {"glorot", "seed"});
  f.Int("--seed", &a.seed, "graph seed (initial weights, dropout, batch order)", 0, kMaxCount);
  f.String("--data", &a.data,
           "classifiers' data: a directory of MNIST-format IDX files, or with --data-format "
           "tfrecord a TFRecord file or directory")
      .Value("PATH")
      .Default("/usr/share/datasets/fashion-mnist when present");
  f.String("--data-format", &a.data_format,
           "idx: --data is a directory of IDX files; tfrecord: --data is a TFRecord file of "
           "tf.Example records (pf-data convert) or a directory of them (train*.tfrecord, "
           "test*.tfrecord)",
           {"idx", "tfrecord"})
      .Default("idx");
  f.String("--input", &a.input,
           "how classifiers get their training batches: dataset (a shuffle/batch/prefetch "
           "pipeline read by IteratorGetNext in the graph) or feed (prepared on a thread, fed)",
           {"dataset", "feed"})
      .Default("dataset (feed in a cluster)");
  f.Int("--train-limit", &a.train_limit, "use only the first N training examples (0: all)", 0,
        kMaxCount);
  f.Int("--test-limit", &a.test_limit, "use only the first N test examples (0: all)", 0, kMaxCount);
  f.Int("--print-every", &a.print_every, "steps between progress lines", 1, kMaxCount)
      .Default("about ten lines per run or five per epoch");
  f.Switch("--allow-nan", &a.allow_nan,
           "keep training when the loss is NaN or infinite (otherwise pf-train stops, exit 1)");
  f.Switch("--check-numerics", &a.check_numerics,
           "refuse to restore a checkpoint holding NaN or Inf (otherwise: a warning per variable)");
  f.String("--checkpoint", &a.checkpoint,
           "save a checkpoint here after each epoch (or at the end); checked before training")
      .Value("DIR");
  f.Switch("--restore", &a.restore, "continue from the latest checkpoint in --checkpoint DIR");
  f.Int("--save-every", &a.save_every, "also save every N steps", 1, kMaxCount)
      .Default("only after each epoch or at the end");
  f.String("--trace", &a.trace, "write a Chrome trace of the second step to FILE").Value("FILE");
  f.String("--logdir", &a.logdir,
           "write TensorBoard event files here: scalars every step, histograms, the placed graph "
           "and one traced step (needs PF_WITH_PROTOBUF)")
      .Value("DIR");
  f.Int("--histogram-every", &a.histogram_every,
        "steps between weight and gradient histograms (--logdir)", 1, kMaxCount);
  f.Switch("--quiet", &a.quiet,
           "no progress bar (terminals) or periodic progress lines; epoch results still print");
  f.String("--towers", &a.towers, "tower count, or auto: one per GPU, else 2 on CPU devices")
      .Value("N|auto");
  f.String("--devices", &a.devices,
           "where the towers go; all: the GPUs when there are any, else CPU devices",
           {"cpu", "gpu", "all"});
  f.String("--aggregation", &a.aggregation,
           "param: variables on --variable-device, gradients averaged there; allreduce: "
           "mirrored variables",
           {"param", "allreduce"});
  f.String("--variable-device", &a.variable_device,
           "where the variables live (--aggregation param); auto: the first GPU when every "
           "tower is on a GPU, else /cpu:0")
      .Value("DEV|auto");
  f.Int("--cpu-devices", &a.cpu_devices, "CPU devices of the session (/cpu:0..N-1)", 1, kMaxDevices)
      .Default("1, or the CPU tower count when larger");
  f.String("--place", &a.place,
           "nodes whose name matches a regex ask for that device; later rules win")
      .Value("'REGEX=DEV,...'");
  f.Switch("--log-device-placement", &a.log_placement,
           "print the device of every node (TensorFlow's placement log)");
  f.Switch("--no-soft-placement", &a.no_soft_placement,
           "a node whose requested device does not exist is an error, not a fallback");
  f.Int("--threads", &a.threads, "threads of the session's pool (0: one per core)", 0, kMaxThreads);
  f.String("--towers-table", &a.towers_table,
           "time the model with each tower count and print seed 000's table")
      .Value("N,N,...");
  f.String("--job_name", &a.job_name, "this process's cluster task (needs PF_WITH_GRPC)",
           {"ps", "worker"});
  f.Int("--task_index", &a.task_index, "this task's index in its job", 0, kMaxDevices);
  f.String("--ps_hosts", &a.ps_hosts, "the ps tasks' addresses").Value("H:P,...");
  f.String("--worker_hosts", &a.worker_hosts, "the worker tasks' addresses").Value("H:P,...");
  f.String("--local-cluster", &a.local_cluster, "start a whole cluster of local processes")
      .Value("ps=N,worker=M");
  f.Switch("--sync_replicas", &a.sync_replicas,
           "workers aggregate their gradients per update (SyncReplicasOptimizer)");
  f.Int("--replicas_to_aggregate", &a.replicas_to_aggregate,
        "gradients per sync update (fewer than the workers: backups)", 1, kMaxDevices)
      .Default("one per worker");
  f.Double("--sync_timeout", &a.sync_timeout, "seconds a sync step may wait for the others",
           Positive());
  f.set_epilog(kExamples);
  return f;
}

int ParseCount(const std::string& text, const char* flag) {
  auto n = pf::flags::ParseInt(text, flag, 1, kMaxDevices);
  if (!n.ok()) Usage(n.status().message());
  return static_cast<int>(n.value());
}

Args Parse(int argc, char** argv) {
  Args a;
  pf::flags::FlagSet flags = MakeFlags(a);
  pf::Status s = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    std::exit(0);
  }
  if (!s.ok()) Usage(s.message());
  if (a.restore && a.checkpoint.empty()) Usage("--restore needs --checkpoint DIR");
  if (a.towers != "auto") ParseCount(a.towers, "--towers");
  for (size_t start = 0; start < a.towers_table.size();) {
    size_t end = std::min(a.towers_table.find(',', start), a.towers_table.size());
    ParseCount(a.towers_table.substr(start, end - start), "--towers-table");
    start = end + 1;
  }
  if (auto d = pf::DeviceName::TryParse(a.variable_device);
      a.variable_device != pf::train::kAutoVariableDevice && !d.ok())
    Usage("bad --variable-device '" + a.variable_device + "': " + d.status().message());
  return a;
}

// --place "affine0=/cpu:1,affine_last=/cpu:0": every node whose name matches a regex (searched,
// not anchored) asks for that device; later rules win. Model parallelism as in seed article 003.
struct PlaceRule {
  std::string text, device;
  std::regex re;
};

std::vector<PlaceRule> ParsePlacementRules(const std::string& rules) {
  std::vector<PlaceRule> parsed;
  size_t start = 0;
  while (start < rules.size()) {
    size_t end = rules.find(',', start);
    std::string rule =
        rules.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? rules.size() : end + 1;
    size_t eq = rule.rfind('=');
    if (eq == std::string::npos) Usage("bad --place rule '" + rule + "': expected regex=device");
    std::string device = rule.substr(eq + 1);
    auto name = pf::DeviceName::TryParse(device);
    if (!name.ok()) Usage("bad device in --place rule '" + rule + "': " + name.status().message());
    try {
      parsed.push_back({rule, device, std::regex(rule.substr(0, eq))});
    } catch (const std::regex_error& e) {
      Usage("bad regex in --place rule '" + rule + "': " + e.what());
    }
  }
  return parsed;
}

void ApplyPlacementRules(pf::Graph& g, const std::vector<PlaceRule>& rules) {
  for (pf::Node* n : g.nodes()) {
    for (const PlaceRule& r : rules) {
      if (std::regex_search(n->name(), r.re)) n->set_requested_device(r.device);
    }
  }
}

// A device the user named (--place, --variable-device) that the session does not have falls
// back under soft placement: say where it went, log or no log, since the user asked for it.
// Placed here with the session's own devices and rules, as its first Run will place them.
void ReportFallbacks(const pf::Graph& g, const pf::Session& sess, const Args& a,
                     const std::string& variable_device, const std::vector<PlaceRule>& rules) {
  std::vector<std::pair<std::string, std::string>> named;  // (what the user wrote, device)
  for (const PlaceRule& r : rules) named.emplace_back("--place '" + r.text + "'", r.device);
  if (a.aggregation == "param" && !variable_device.empty())
    named.emplace_back("--variable-device " + a.variable_device, variable_device);
  std::vector<std::pair<std::string, std::string>> missing;
  for (const auto& [what, device] : named) {
    if (sess.devices().Matching(pf::DeviceName::TryParse(device).ValueOrThrow()).empty())
      missing.emplace_back(what, device);
  }
  if (missing.empty()) return;
  pf::PlacerOptions po;
  po.allow_soft_placement = true;
  std::vector<pf::Node*> nodes(g.nodes().begin(), g.nodes().end());
  auto placed = pf::Place(nodes, sess.devices(), po);
  for (const auto& [what, device] : missing) {
    std::string where = "another device";
    int count = 0;
    if (placed.ok()) {
      // Requests are stored normalised ("/device:CPU:3" for "/cpu:3"): compare them parsed.
      const pf::DeviceName wanted = pf::DeviceName::TryParse(device).ValueOrThrow();
      std::map<std::string, int> by_device;
      for (const pf::Node* n : nodes) {
        auto request = pf::DeviceName::TryParse(n->requested_device());
        if (!request.ok() || !(request.value() == wanted)) continue;
        auto it = placed.value().device.find(n);
        if (it != placed.value().device.end()) ++by_device[it->second->name()];
      }
      where.clear();
      for (const auto& [d, c] : by_device) {
        where += (where.empty() ? "" : ", ") + d;
        count += c;
      }
    }
    std::printf(
        "pf-train: %s: no device matches %s (devices: %s); soft placement puts its %d node(s) "
        "on %s\n",
        what.c_str(), device.c_str(), sess.devices().NamesForError().c_str(), count, where.c_str());
  }
  std::fflush(stdout);
}

struct TowerPlan {
  std::string kind;  // cpu | gpu
  int count;
  std::string note;  // what changed from the request, for the user ("no GPU found: ...")
};

// --devices all picks the GPUs when the process sees any; --towers auto makes one tower per
// GPU, or two on CPU devices (seed article 000's two towers, on this project's 2-core machines).
// --devices gpu without a GPU trains on the CPU under soft placement, and says so.
TowerPlan PlanTowers(const Args& a) {
  const int gpus = pf::CudaDeviceCount();
  TowerPlan p;
  p.kind = a.devices == "all" ? (gpus > 0 ? "gpu" : "cpu") : a.devices;
  p.count = a.towers == "auto" ? (p.kind == "gpu" ? std::max(1, gpus) : 2)
                               : ParseCount(a.towers, "--towers");
  if (p.kind == "gpu" && gpus == 0) {
    if (a.no_soft_placement)
      throw pf::Error(pf::errors::InvalidArgument(
          "--devices gpu: no GPU found, and soft placement is off (--no-soft-placement)"));
    p.kind = "cpu";
    std::string devices;
    for (int i = 0; i < p.count; ++i) devices += (i ? "," : "") + fmt::format("/cpu:{}", i);
    p.note =
        fmt::format("no GPU found: {} tower{} on {}", p.count, p.count == 1 ? "" : "s", devices);
  }
  return p;
}

// ", variables on /gpu:0 (auto: every tower on a GPU)": which layout was chosen, and why.
std::string VariableLayout(const Args& a, const std::string& device) {
  if (a.variable_device != pf::train::kAutoVariableDevice) return ", variables on " + device;
  return fmt::format(", variables on {} (auto: {}; --variable-device to choose)", device,
                     device == "/cpu:0" ? "towers on CPU devices" : "every tower on a GPU");
}

pf::train::Aggregation AggregationOf(const Args& a) {
  return a.aggregation == "allreduce" ? pf::train::Aggregation::kAllReduce
                                      : pf::train::Aggregation::kParameterDevice;
}

// Seed article 000's experiment: the same model and batch, timed with each tower count.
int TowersTable(const Args& a) {
  pf::towers::TimingOptions o;
  o.model = a.model;
  const TowerPlan plan = PlanTowers(a);
  if (!plan.note.empty()) std::printf("pf-train: %s\n", plan.note.c_str());
  o.kind = plan.kind;
  o.aggregation = AggregationOf(a);
  o.variable_device = a.variable_device;
  o.optimizer = a.optimizer;
  o.steps = a.steps;
  o.batch = a.batch > 0 ? a.batch : (a.model == "mlp_seed000" ? 2000 : 100);
  o.threads = a.threads;
  pf::train::TowerOptions resolve;
  resolve.variable_device = a.variable_device;
  const std::string layout =
      a.aggregation == "param"
          ? VariableLayout(a, pf::train::ResolveVariableDevice(
                                  resolve, pf::towers::TowerDevices(plan.kind, 1)))
          : "";
  std::printf("%s, batch %lld, %lld steps, %s, aggregation %s%s\n", a.model.c_str(),
              static_cast<long long>(o.batch), static_cast<long long>(o.steps),
              a.optimizer.empty() ? "default optimizer" : a.optimizer.c_str(),
              a.aggregation.c_str(), layout.c_str());
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

struct TrainingData {
  pf::data::MnistArrays train, test;  // train: only without the pipeline
  pf::data::Dataset train_ds;         // only with it
  int64_t train_examples = 0;
};

int64_t CountElements(const pf::data::Dataset& d) {
  int64_t n = 0;
  auto it = d.Batch(4096).MakeIterator();
  std::vector<pf::Tensor> e;
  while (it->GetNext(&e).ValueOrThrow()) n += e[0].dim(0);
  return n;
}

// The classifiers' data: IDX files or TFRecord files of tf.Example, the training part as a
// dataset (the pipeline) or as arrays (fed), the test part as arrays (evaluation feeds them).
TrainingData LoadTrainingData(const Args& a, const std::string& dir, bool pipeline) {
  TrainingData d;
  using pf::data::Split;
  if (a.data_format == "tfrecord") {
    if (!pf::tfrecord_input::Available())
      Usage("--data-format tfrecord needs a placeflow built with protobuf (PF_WITH_PROTOBUF)");
    auto train_files = pf::tfrecord_input::Files(dir, Split::kTrain).ValueOrThrow();
    auto test_files =
        pf::tfrecord_input::Files(std::filesystem::is_directory(dir)
                                      ? dir
                                      : std::filesystem::path(dir).parent_path().string(),
                                  Split::kTest)
            .ValueOrThrow();
    d.test = pf::data::Take(pf::tfrecord_input::LoadMnistArrays(test_files).ValueOrThrow(),
                            a.test_limit);
    d.train_ds =
        pf::data::Dataset::FromTFRecord(train_files).Take(a.train_limit > 0 ? a.train_limit : -1);
    d.train_examples = CountElements(d.train_ds);
    return d;
  }
  d.test = pf::data::Take(pf::data::LoadMnist(dir, Split::kTest).ValueOrThrow(), a.test_limit);
  if (!pipeline) {
    d.train = pf::data::Take(pf::data::LoadMnist(dir, Split::kTrain).ValueOrThrow(), a.train_limit);
    d.train_examples = d.train.size();
    return d;
  }
  auto [images, labels] = pf::data::MnistPaths(dir, Split::kTrain);
  d.train_ds =
      pf::data::Dataset::FromIdx(images, labels).Take(a.train_limit > 0 ? a.train_limit : -1);
  d.train_examples = CountElements(d.train_ds);
  return d;
}

std::string DefaultData() {
  for (const char* candidate : {"/usr/share/datasets/fashion-mnist", "../shared/data/mnist"}) {
    if (std::filesystem::exists(candidate)) return candidate;
  }
  return "";
}

int Main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  const std::vector<PlaceRule> rules = ParsePlacementRules(a.place);
  {
    // Before loading data and building the graph (the Trainer checks again; a cluster's
    // non-chief workers never save).
    if (!a.checkpoint.empty() && a.job_name.empty() && a.local_cluster.empty())
      pf::ThrowIfError(pf::trainer::CheckCheckpointDir(a.checkpoint));
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
    pf::data::MnistArrays train, test;
    pf::data::Dataset train_ds;
    int64_t train_examples = 0;
    // Classifiers read their batches through a dataset in the graph, except in a cluster (each
    // worker feeds its own).
    const bool use_pipeline = a.input == "dataset" && a.job_name.empty() && a.local_cluster.empty();
    if (a.data_format == "tfrecord" && !use_pipeline)
      Usage(
          "--data-format tfrecord reads through the input pipeline: not with --input feed or a "
          "cluster");
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
      TrainingData td = LoadTrainingData(a, dir, use_pipeline);
      train = std::move(td.train);
      test = std::move(td.test);
      train_ds = td.train_ds;
      train_examples = td.train_examples;
      std::printf("data: %s (%lld train, %lld test examples)\n", dir.c_str(),
                  static_cast<long long>(train_examples), static_cast<long long>(test.size()));
      std::printf("input: %s files, %s\n", a.data_format.c_str(),
                  use_pipeline ? "read through the pipeline (shuffle, batch, prefetch)"
                               : "batches prepared on a thread and fed");
      mo.steps_per_epoch = std::max<int64_t>(1, train_examples / (a.batch > 0 ? a.batch : 100));
    }
    const TowerPlan plan = PlanTowers(a);
    if (!plan.note.empty()) std::printf("pf-train: %s\n", plan.note.c_str());
    // One count for both (they must agree): the session's CPU devices, and what the towers
    // take "all_cpus" to mean.
    const int num_cpus =
        static_cast<int>(std::max<int64_t>(a.cpu_devices, plan.kind == "cpu" ? plan.count : 1));
    pf::train::TowerOptions towers;
    towers.num_cpus = num_cpus;
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
    std::optional<pf::data::GraphIterator> train_iterator;
    if (classifier && use_pipeline) {
      const int64_t batch =
          pf::trainer::EffectiveBatch(a.batch > 0 ? a.batch : 100, train_examples).ValueOrThrow();
      pf::data::MapFn parse;  // TFRecord: serialized tf.Examples, parsed a batch at a time
      if (a.data_format == "tfrecord") {
        parse = [](pf::data::Element e, const pf::data::MapContext&) {
          return pf::tfrecord_input::ParseMnistBatch(e[0]);
        };
      }
      train_iterator = pf::data::MakeIterator(
          root,
          pf::trainer::TrainingPipeline(train_ds, train_examples, batch, a.seed, parse,
                                        {{pf::DT_FLOAT, {-1, -1}}, {pf::DT_INT32, {-1}}}),
          "train_input");
      mo.input = train_iterator->next[0];
      mo.target = train_iterator->next[1];
    }
    pf::models::Model m = pf::models::BuildModel(a.model, root, mo);
    std::unique_ptr<pf::summaries::TrainingSummaries> summaries;
    if (!a.logdir.empty()) {
      pf::summaries::SummaryOptions so;
      so.logdir = a.logdir;
      so.histogram_every = a.histogram_every;
      summaries = pf::summaries::TrainingSummaries::Create(root, m, so);
    }
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
    ApplyPlacementRules(g, rules);
    pf::SessionOptions opts;
    opts.log_device_placement = a.log_placement;
    opts.allow_soft_placement = !a.no_soft_placement;
    opts.device_count["CPU"] = num_cpus;
    opts.num_threads = static_cast<int>(a.threads);
    pf::trainer::Options to;
#ifdef PF_WITH_GRPC
    if (task) {
      opts = pf::SessionOptions{};
      opts.target = task->target();
      opts.log_device_placement = a.log_placement;
      opts.allow_soft_placement = !a.no_soft_placement;
      to.count_local_steps = true;  // each worker runs its own epochs
      a.seed += task->index();      // and its own batches
      if (!task->is_chief()) {
        a.checkpoint.clear();  // the chief saves
        a.restore = false;
      }
    }
#endif
    pf::Session sess(g, opts);
    if (opts.target.empty() && opts.allow_soft_placement)
      ReportFallbacks(g, sess, a, m.variable_device, rules);
    std::string devices;
    for (const std::string& d : m.tower_devices) devices += (devices.empty() ? "" : ",") + d;
    std::string replication = fmt::format(
        "{} tower(s) on {} (aggregation {}{})", m.tower_devices.size(), devices, a.aggregation,
        a.aggregation == "param" ? VariableLayout(a, m.variable_device) : "");
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
    to.iterator = train_iterator;
    to.train_examples = train_examples;
    to.allow_nan = a.allow_nan;
    to.check_numerics = a.check_numerics;
    to.progress = a.quiet ? pf::progress::Mode::kQuiet : pf::progress::Mode::kAuto;
    to.stop = &g_interrupted;
    if (summaries) summaries->Attach(sess, &to);
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
    InstallSigintHandler();
    trainer.Run(classifier ? &train : nullptr, classifier ? &test : nullptr);
    if (summaries) {
      summaries->Close();
      std::printf("summaries: %s\n", summaries->path().c_str());
    }
    if (trainer.interrupted()) {
      std::fprintf(stderr, "pf-train: interrupted (SIGINT) at step %lld%s%s\n",
                   static_cast<long long>(trainer.global_step()),
                   a.checkpoint.empty() ? "" : "; checkpoint saved",
                   summaries ? "; summaries flushed" : "");
      return 130;
    }
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
  }
}

}  // namespace

// Anything thrown ends the run with a message and status 1, never an abort: a pf::Error names
// the node, op and device; anything else (std::filesystem, std::system_error, bad_alloc) gets
// its what().
int main(int argc, char** argv) { return pf::tools::RunMain("pf-train", Main, argc, argv); }
