#include "tools/train_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "placeflow/models/models.h"

namespace pf::app {
namespace {

using flags::FlagSet;
using flags::Positive;
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

// A per-model default as --help shows it, from the model table: "2000 for mlp_seed000, else 100"
// (the most common value is "else").
std::string PerModel(const std::function<std::string(const models::ModelSpec&)>& value) {
  std::vector<std::pair<std::string, std::string>> by_value;  // value, models (in table order)
  std::map<std::string, int> count;
  for (const models::ModelSpec& spec : models::Models()) {
    const std::string v = value(spec);
    auto it = std::find_if(by_value.begin(), by_value.end(), [&](auto& p) { return p.first == v; });
    if (it == by_value.end()) {
      by_value.emplace_back(v, spec.name);
    } else {
      it->second += std::string(", ") + spec.name;
    }
    ++count[v];
  }
  const std::string common = std::max_element(count.begin(), count.end(), [](auto& x, auto& y) {
                               return x.second < y.second;
                             })->first;
  std::string out;
  for (const auto& [v, names] : by_value) {
    if (v != common) out += fmt::format("{} for {}, ", v, names);
  }
  return out.empty() ? common : out + "else " + common;
}

void AddModelFlags(FlagSet& f, TrainArgs& a) {
  std::vector<std::string> names;
  for (const models::ModelSpec& spec : models::Models()) names.push_back(spec.name);
  f.String("--model", &a.model, "the model to train", names);
  f.Int("--steps", &a.steps,
        "training steps (mlp_seed000); a classifier trains --epochs but stops after N steps when "
        "given (its last epoch ends there: evaluated and saved)",
        1, kMaxCount)
      .Default("100 (classifiers: the epochs' steps)");
  f.Int("--epochs", &a.epochs, "passes over the training set (classifiers)", 1, kMaxCount);
  f.Int("--batch", &a.batch,
        "examples per step, split over the towers; clamped to the training set's size", 1,
        kMaxBatch)
      .Default(PerModel([](auto& s) { return std::to_string(s.batch); }));
  f.Double("--lr", &a.lr, "base learning rate", Positive())
      .Default("the model's with its optimizer: " +
               PerModel([](auto& s) { return fmt::format("{}", s.LearningRate("")); }));
  f.String("--optimizer", &a.optimizer, "the optimizer",
           {"sgd", "momentum", "adam", "rmsprop", "adagrad"})
      .Default(PerModel([](auto& s) { return std::string(s.optimizer); }));
  f.String("--mixed-precision", &a.mixed_precision,
           "run matmuls and convolutions in this 16-bit type (the auto_mixed_precision rewrite; "
           "float16 also scales the loss dynamically); variables stay float32",
           {"float16", "bfloat16"})
      .Default("off");
  f.String("--init", &a.init, "weight initialiser (seed: the article's N(0, 1), which diverges)",
           {"glorot", "seed"});
  f.Int("--seed", &a.seed, "graph seed (initial weights, dropout, batch order)", 0, kMaxCount);
}

void AddDataFlags(FlagSet& f, TrainArgs& a) {
  f.String("--data", &a.data,
           "classifiers' data: a directory of MNIST-format IDX files, or with --data-format "
           "tfrecord a TFRecord file or directory")
      .Value("PATH")
      .Default("/usr/share/datasets/fashion-mnist when present");
  f.String("--data-format", &a.data_format,
           "idx: --data is a directory of IDX files; tfrecord: --data is a TFRecord file of "
           "tf.Example records (pf-data convert: MNIST's pixels, or encoded images with "
           "--images) or a directory of them (train*.tfrecord, test*.tfrecord); images: --data "
           "is a folder of class subfolders of JPEG/PNG files",
           {"idx", "tfrecord", "images"})
      .Default("idx");
  f.Int("--image-size", &a.image_size,
        "--data-format images, or TFRecords of encoded images: the side (pixels) the images are "
        "resized to",
        8, 4096);
  f.Double("--validation-split", &a.validation_split,
           "--data-format images: the fraction of the files kept to evaluate on, not trained on",
           Positive());
  f.Double("--width", &a.width, "mobilenet_v2's width multiplier (Keras's alpha)", Positive());
  f.String("--input", &a.input,
           "how classifiers get their training batches: dataset (a shuffle/batch/prefetch "
           "pipeline read by IteratorGetNext in the graph) or feed (prepared on a thread, fed)",
           {"dataset", "feed"})
      .Default("dataset (feed in a cluster)");
  f.Int("--train-limit", &a.train_limit, "use only the first N training examples (0: all)", 0,
        kMaxCount);
  f.Int("--test-limit", &a.test_limit, "use only the first N test examples (0: all)", 0, kMaxCount);
}

void AddRunFlags(FlagSet& f, TrainArgs& a) {
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
}

void AddDeviceFlags(FlagSet& f, TrainArgs& a) {
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
  f.String("--placement", &a.placement,
           "rules: TensorFlow's placer; auto: a cost model and --placement-algorithm choose "
           "(docs/placement.md)",
           {"rules", "auto"});
  f.String("--placement-algorithm", &a.placement_algorithm, "--placement auto's algorithm",
           {"m-sct", "m-etf", "m-topo"});
  f.Int("--profile-steps", &a.profile_steps,
        "--placement auto: first time this many training steps placed by the rules (a session "
        "of their own) and plan from their measured node times (0: from estimates)",
        0, 1000);
  f.String("--device-memory", &a.device_memory,
           "a memory limit per device, kept by --placement auto and enforced when running")
      .Value("'cpu:0=2GB,...'");
  f.Int("--device-threads", &a.device_threads,
        "threads of each CPU device's own pool (0: the devices share the session's)", 0,
        kMaxThreads);
  f.String("--towers-table", &a.towers_table,
           "time the model with each tower count and print seed 000's table")
      .Value("N,N,...");
}

// The cluster flags keep TensorFlow's spellings as aliases (tf.app.flags in seeds 001, 002).
void AddClusterFlags(FlagSet& f, TrainArgs& a) {
  f.String("--job-name", &a.job_name, "this process's cluster task (needs PF_WITH_GRPC)",
           {"ps", "worker"})
      .Alias("--job_name");
  f.Int("--task-index", &a.task_index, "this task's index in its job", 0, kMaxDevices)
      .Alias("--task_index");
  f.String("--ps-hosts", &a.ps_hosts, "the ps tasks' addresses")
      .Value("H:P,...")
      .Alias("--ps_hosts");
  f.String("--worker-hosts", &a.worker_hosts, "the worker tasks' addresses")
      .Value("H:P,...")
      .Alias("--worker_hosts");
  f.String("--local-cluster", &a.local_cluster, "start a whole cluster of local processes")
      .Value("ps=N,worker=M");
  f.Switch("--sync-replicas", &a.sync_replicas,
           "workers aggregate their gradients per update (SyncReplicasOptimizer)")
      .Alias("--sync_replicas");
  f.Int("--replicas-to-aggregate", &a.replicas_to_aggregate,
        "gradients per sync update (fewer than the workers: backups)", 1, kMaxDevices)
      .Default("one per worker")
      .Alias("--replicas_to_aggregate");
  f.Double("--sync-timeout", &a.sync_timeout, "seconds a sync step may wait for the others",
           Positive())
      .Alias("--sync_timeout");
}

// Checks across flags, and values the table cannot check alone.
void CheckArgs(TrainArgs& a) {
  if (a.restore && a.checkpoint.empty()) throw UsageError("--restore needs --checkpoint DIR");
  // The models train in float32: a rate that rounds to 0 or infinity there trains nothing.
  if (a.lr > 0 && (static_cast<float>(a.lr) == 0.f || std::isinf(static_cast<float>(a.lr)))) {
    throw UsageError(
        fmt::format("--lr {} is {} in float32, the models' dtype (float32 spans [{:g}, {:g}])",
                    a.lr, static_cast<float>(a.lr) == 0.f ? "0" : "infinite",
                    std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()));
  }
  if (a.in_cluster() && (a.placement == "auto" || !a.device_memory.empty() || a.device_threads > 0))
    throw UsageError("--placement auto, --device-memory and --device-threads are for one process");
  // Automatic placement splits one model across the devices: no data-parallel towers unless asked.
  if (a.placement == "auto" && a.towers == "auto") a.towers = "1";
  if (a.placement == "auto" && a.towers != "1")
    throw UsageError("--placement auto places one graph: --towers must be 1 (or left out)");
  if (a.towers != "auto") ParseCount(a.towers, "--towers");
  for (size_t start = 0; start < a.towers_table.size();) {
    size_t end = std::min(a.towers_table.find(',', start), a.towers_table.size());
    ParseCount(a.towers_table.substr(start, end - start), "--towers-table");
    start = end + 1;
  }
  if (auto d = DeviceName::TryParse(a.variable_device);
      a.variable_device != train::kAutoVariableDevice && !d.ok())
    throw UsageError("bad --variable-device '" + a.variable_device + "': " + d.status().message());
  a.place_rules = ParsePlacementRules(a.place);
}

}  // namespace

flags::FlagSet MakeFlags(TrainArgs& a) {
  FlagSet f("pf-train",
            "Trains a placeflow model replicated as towers over the devices present, printing "
            "progress.");
  AddModelFlags(f, a);
  AddDataFlags(f, a);
  AddRunFlags(f, a);
  AddDeviceFlags(f, a);
  AddClusterFlags(f, a);
  f.set_epilog(kExamples);
  return f;
}

int ParseCount(const std::string& text, const char* flag) {
  auto n = flags::ParseInt(text, flag, 1, kMaxDevices);
  if (!n.ok()) throw UsageError(n.status().message());
  return static_cast<int>(n.value());
}

TrainArgs ParseArgs(int argc, const char* const* argv) {
  TrainArgs a;
  a.steps = 0;  // 0 after parsing: --steps was not given
  flags::FlagSet flags = MakeFlags(a);
  Status s = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    a.help = true;
    a.help_text = flags.Help();
    return a;
  }
  if (!s.ok()) throw UsageError(s.message());
  // An empty --checkpoint would silently mean no checkpoint: a shell variable that was unset.
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--checkpoint" && i + 1 < argc && argv[i + 1][0] == '\0')
      throw UsageError("--checkpoint needs a directory, got '' (leave the flag out to save none)");
  }
  a.steps_given = a.steps != 0;
  if (!a.steps_given) a.steps = TrainArgs().steps;
  CheckArgs(a);
  if (a.batch == 0) a.batch = models::FindModel(a.model)->batch;
  return a;
}

}  // namespace pf::app
