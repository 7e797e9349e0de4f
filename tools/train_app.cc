#include "tools/train_app.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "placeflow/data/image_folder.h"
#include "placeflow/io/image_codec.h"
#include "placeflow/placer/cost_model.h"
#include "tools/tfrecord_input.h"
#include "tools/tower_plan.h"
#include "tools/tower_timing.h"

namespace pf::app {
namespace {

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

int64_t CountElements(const data::Dataset& d) {
  int64_t n = 0;
  auto it = d.Batch(4096).MakeIterator();
  std::vector<Tensor> e;
  while (it->GetNext(&e).ValueOrThrow()) n += e[0].dim(0);
  return n;
}

// "classes: 2 (cats, dogs), images resized to 224x224"; a classifier needs two classes.
void PrintClasses(const TrainArgs& a, const TrainingData& d) {
  if (d.class_names.size() < 2)
    throw UsageError("--data " + a.data + ": a classifier needs at least two classes");
  std::string classes;
  for (const std::string& c : d.class_names) classes += (classes.empty() ? "" : ", ") + c;
  std::printf("classes: %zu (%s), images resized to %lldx%lld\n", d.class_names.size(),
              classes.c_str(), static_cast<long long>(a.image_size),
              static_cast<long long>(a.image_size));
}

// TFRecord files of tf.Example, MNIST's (image_raw, label) or encoded images' (pf-data convert
// --images): the training part as a dataset, the test part as arrays.
void LoadTFRecords(const TrainArgs& a, const std::string& dir, TrainingData* d) {
  using data::Split;
  if (!tfrecord_input::Available())
    throw UsageError(
        "--data-format tfrecord needs a placeflow built with protobuf (PF_WITH_PROTOBUF)");
  auto train_files = tfrecord_input::Files(dir, Split::kTrain).ValueOrThrow();
  auto test_files = tfrecord_input::Files(std::filesystem::is_directory(dir)
                                              ? dir
                                              : std::filesystem::path(dir).parent_path().string(),
                                          Split::kTest)
                        .ValueOrThrow();
  if (tfrecord_input::HoldsEncodedImages(train_files.front()).ValueOrThrow()) {
    tfrecord_input::ImageRecords r =
        tfrecord_input::LoadImageRecords(train_files, test_files, a.image_size, a.train_limit,
                                         a.test_limit)
            .ValueOrThrow();
    d->class_names = std::move(r.class_names);
    d->image_shape = {a.image_size, a.image_size, 3};
    d->train_ds = r.train;
    d->train_examples = r.train_examples;
    d->test = std::move(r.test);
    return PrintClasses(a, *d);
  }
  d->test = data::Take(tfrecord_input::LoadMnistArrays(test_files).ValueOrThrow(), a.test_limit);
  d->train_ds =
      data::Dataset::FromTFRecord(train_files).Take(a.train_limit > 0 ? a.train_limit : -1);
  d->train_examples = CountElements(d->train_ds);
}

// IDX files: the training part as a dataset (pipeline) or as arrays, the test part as arrays.
void LoadIdx(const TrainArgs& a, const std::string& dir, TrainingData* d) {
  using data::Split;
  d->test = data::Take(data::LoadMnist(dir, Split::kTest).ValueOrThrow(), a.test_limit);
  if (!d->pipeline) {
    d->train = data::Take(data::LoadMnist(dir, Split::kTrain).ValueOrThrow(), a.train_limit);
    d->train_examples = d->train.size();
    return;
  }
  auto [images, labels] = data::MnistPaths(dir, Split::kTrain);
  d->train_ds = data::Dataset::FromIdx(images, labels).Take(a.train_limit > 0 ? a.train_limit : -1);
  d->train_examples = CountElements(d->train_ds);
}

// A folder of class subfolders: the training files as a dataset of flattened images scaled to
// [0, 1] (as the IDX files give them), the validation files as arrays.
void LoadImages(const TrainArgs& a, const std::string& dir, TrainingData* d) {
  if (!image::Available())
    throw UsageError("--data-format images needs a placeflow built with libjpeg and libpng");
  if (a.validation_split >= 1) throw UsageError("--validation-split must be below 1");
  data::ImageFolderOptions o;
  o.image_size = {a.image_size, a.image_size};
  o.seed = static_cast<uint64_t>(a.seed);
  o.validation_split = a.validation_split;
  o.subset = "training";
  data::ImageFolder train = data::FromImageFolder(dir, o).ValueOrThrow();
  o.subset = "validation";
  data::ImageFolder test = data::FromImageFolder(dir, o).ValueOrThrow();
  if (train.class_names.size() < 2)
    throw UsageError("--data " + dir + ": a classifier needs at least two class folders");
  if (test.num_files == 0 || train.num_files == 0) {
    throw UsageError(fmt::format(
        "--data {}: --validation-split {} of its {} images leaves {} to train on and {} to "
        "evaluate on; both need at least one",
        dir, a.validation_split, train.num_files + test.num_files, train.num_files,
        test.num_files));
  }
  d->class_names = train.class_names;
  d->image_shape = {a.image_size, a.image_size, 3};
  const int64_t features = a.image_size * a.image_size * 3;
  const data::ElementSpec flat = {{DT_FLOAT, Shape{features}}, {DT_INT32, Shape{}}};
  auto flatten = [features](data::Element e) -> StatusOr<data::Element> {
    Tensor x(DT_FLOAT, {features});
    const float* in = e[0].data<float>();
    for (int64_t i = 0; i < features; ++i) x.data<float>()[i] = in[i] / 255.f;
    return data::Element{std::move(x), std::move(e[1])};
  };
  d->train_ds = train.dataset.Map(flatten, 1, flat).Take(a.train_limit > 0 ? a.train_limit : -1);
  d->train_examples =
      a.train_limit > 0 ? std::min(a.train_limit, train.num_files) : train.num_files;
  // The validation files, decoded once, as the test arrays evaluation feeds.
  const int64_t n = a.test_limit > 0 ? std::min(a.test_limit, test.num_files) : test.num_files;
  d->test.images = Tensor(DT_FLOAT, {n, features});
  d->test.labels = Tensor(DT_INT32, {n});
  auto it = test.dataset.Map(flatten, 1, flat).Take(n).MakeIterator();
  data::Element e;
  for (int64_t i = 0; it->GetNext(&e).ValueOrThrow(); ++i) {
    std::copy_n(e[0].data<float>(), features, d->test.images.data<float>() + i * features);
    d->test.labels.data<int32_t>()[i] = e[1].scalar<int32_t>();
  }
  PrintClasses(a, *d);
}

std::string DefaultData() {
  for (const char* candidate : {"/usr/share/datasets/fashion-mnist", "../shared/data/mnist"}) {
    if (std::filesystem::exists(candidate)) return candidate;
  }
  return "";
}

// The model's options from the flags and the role: towers on this process's devices, or one
// replica of a cluster (variables on the ps tasks, placed by the caller).
models::ModelOptions ModelOptionsFor(const TrainArgs& a, const Role& role, int64_t train_examples,
                                     int* num_cpus) {
  models::ModelOptions mo;
  mo.init = a.init;
  mo.seed = a.seed;
  mo.optimizer = a.optimizer;
  mo.loss_scale = a.mixed_precision == "float16";
  mo.learning_rate = a.lr;
  if (models::IsClassifier(a.model))
    mo.steps_per_epoch = std::max<int64_t>(1, train_examples / a.batch);
  const TowerPlan plan = PlanTowers(a);
  if (!plan.note.empty()) std::printf("pf-train: %s\n", plan.note.c_str());
  // One count for both (they must agree): the session's CPU devices, and what the towers
  // take "all_cpus" to mean.
  *num_cpus =
      static_cast<int>(std::max<int64_t>(a.cpu_devices, plan.kind == "cpu" ? plan.count : 1));
  if (role.task) {
    // Between-graph replication: one tower per worker process.
    if (a.sync_replicas) {
      mo.total_num_replicas = role.task->num_workers();
      mo.replicas_to_aggregate = a.replicas_to_aggregate > 0
                                     ? static_cast<int>(a.replicas_to_aggregate)
                                     : role.task->num_workers();
    }
    return mo;
  }
  if (a.placement == "auto") return mo;  // one graph, no requests: the planner splits it
  train::TowerOptions towers;
  towers.num_cpus = *num_cpus;
  towers.devices = towers::TowerDevices(plan.kind, plan.count);
  towers.aggregation = AggregationOf(a);
  towers.variable_device = a.variable_device;
  mo.towers = towers;
  return mo;
}

// The classifiers' input pipeline in the graph: shuffle, batch, prefetch, read by
// IteratorGetNext (TFRecord: serialized tf.Examples, parsed a batch at a time).
data::GraphIterator TrainIterator(const TrainArgs& a, const Scope& root, const TrainingData& d) {
  const int64_t batch = trainer::EffectiveBatch(a.batch, d.train_examples).ValueOrThrow();
  data::MapFn parse;
  if (a.data_format == "tfrecord" && d.image_shape.empty()) {  // MNIST's records
    parse = [](data::Element e, const data::MapContext&) {
      return tfrecord_input::ParseMnistBatch(e[0]);
    };
  }
  return data::MakeIterator(
      root,
      trainer::TrainingPipeline(d.train_ds, d.train_examples, batch, a.seed, parse,
                                {{DT_FLOAT, {-1, -1}}, {DT_INT32, {-1}}}),
      "train_input");
}

// "2 tower(s) on /cpu:0,/cpu:1 (aggregation param, variables on /cpu:0 ...)", or a replica's.
std::string Replication(const TrainArgs& a, const models::Model& m) {
  if (m.sync)
    return fmt::format(
        "between-graph replica on this worker (variables on the ps tasks, sync: {} of {} "
        "workers' gradients per update)",
        m.sync->replicas_to_aggregate(), m.sync->total_num_replicas());
  if (a.placement == "auto")
    return fmt::format("one graph placed automatically ({}) on {} CPU device(s)",
                       a.placement_algorithm, a.cpu_devices);
  if (m.tower_devices.empty())
    return "between-graph replica on this worker (variables on the ps tasks, async)";
  std::string devices;
  for (const std::string& d : m.tower_devices) devices += (devices.empty() ? "" : ",") + d;
  return fmt::format("{} tower(s) on {} (aggregation {}{})", m.tower_devices.size(), devices,
                     a.aggregation,
                     a.aggregation == "param" ? VariableLayout(a, m.variable_device) : "");
}

// A worker trains on its own batches and traces into its own file; only the chief saves.
void AdjustForWorker(TrainArgs& a, const cluster::ClusterRole& task) {
  a.seed += task.index();
  if (!task.is_chief()) {
    a.checkpoint.clear();
    a.restore = false;
  }
  // One trace per worker (each merges every task's part of that worker's step).
  if (!a.trace.empty()) {
    const auto dot = a.trace.rfind('.');
    const std::string suffix = ".worker" + std::to_string(task.index());
    a.trace = dot == std::string::npos ? a.trace + suffix
                                       : a.trace.substr(0, dot) + suffix + a.trace.substr(dot);
  }
}

}  // namespace

trainer::Options TrainerOptions(const TrainArgs& a, const Role& role, const TrainGraph& tg,
                                const TrainingData& data) {
  trainer::Options to;
  to.count_local_steps = role.task != nullptr;  // each worker runs its own epochs
  to.epochs = a.epochs;
  to.steps = a.steps;
  to.batch = a.batch;
  to.print_every = a.print_every;
  to.seed = static_cast<uint64_t>(a.seed);
  to.checkpoint_dir = a.checkpoint;
  to.restore = a.restore;
  to.trace_path = a.trace;
  to.checkpoint_every = a.save_every;
  to.iterator = tg.iterator;
  to.train_examples = data.train_examples;
  to.allow_nan = a.allow_nan;
  to.check_numerics = a.check_numerics;
  to.progress = a.quiet ? progress::Mode::kQuiet : progress::Mode::kAuto;
  to.stop = &g_interrupted;
  // --steps given with a classifier: stop after that many steps (the epochs otherwise).
  if (models::IsClassifier(a.model) && a.steps_given) to.max_steps = a.steps;
  return to;
}

namespace {

// A sync step that keeps timing out waits for a worker that is gone: give up after three.
template <class Creator>
class GiveUpOnSyncTimeouts : public Creator {
 public:
  using Creator::Creator;
  bool Recover(const Status& error) override {
    if (error.code() == Code::kDeadlineExceeded && ++timeouts_ > 3) return false;
    return Creator::Recover(error);
  }

 private:
  int timeouts_ = 0;
};

// Sync replicas (TensorFlow's SyncReplicasOptimizer hook): once the variables are ready (again
// after a recovery), the chief puts its queues in place and every worker sets its local step.
class SyncReplicasHook : public train::SessionRunHook {
 public:
  SyncReplicasHook(bool chief, Operation chief_init, Operation local_init)
      : chief_(chief), chief_init_(chief_init), local_init_(local_init) {}
  void AfterCreateSession(Session& session) override {
    if (chief_) session.Run({}, {}, {chief_init_});
    session.Run({}, {}, {local_init_});
  }

 private:
  bool chief_;
  Operation chief_init_, local_init_;
};

}  // namespace

// The session creator of pf-train's MonitoredSession: the chief (or a process on its own)
// initialises, or restores with --restore; a cluster's other workers wait for it. In a cluster
// both recover from a ps restart: the chief restores the last checkpoint (or initialises), the
// others wait for that.
std::unique_ptr<train::SessionCreator> MakeCreator(const TrainArgs& a, const Role& role,
                                                   const TrainGraph& tg, Session& sess,
                                                   std::shared_ptr<Saver> saver) {
  train::SessionCreatorOptions co;
  co.session = &sess;
  co.scaffold.init_op = tg.init;
  co.scaffold.saver = std::move(saver);
  co.checkpoint_dir = co.scaffold.saver ? a.checkpoint : "";
  co.restore_on_create = a.restore;
  co.restore_options.check_numerics = a.check_numerics;
  co.recover = role.task != nullptr;
  co.worker_index = role.task ? role.task->index() : 0;
  co.log = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  const bool chief = !role.task || role.task->is_chief();
  const bool sync = tg.model.sync != nullptr;
  if (chief && sync) return std::make_unique<GiveUpOnSyncTimeouts<train::ChiefSessionCreator>>(co);
  if (chief) return std::make_unique<train::ChiefSessionCreator>(co);
  if (sync) return std::make_unique<GiveUpOnSyncTimeouts<train::WorkerSessionCreator>>(co);
  return std::make_unique<train::WorkerSessionCreator>(co);
}

Role ChooseRole(const TrainArgs& a) {
  // Before loading data and building the graph (the Trainer checks again; a cluster's
  // non-chief workers never save).
  if (!a.checkpoint.empty() && !a.in_cluster())
    ThrowIfError(trainer::CheckCheckpointDir(a.checkpoint));
  Role role;
  if (!a.towers_table.empty()) {
    role.kind = Role::Kind::kTowersTable;
    return role;
  }
  if (a.in_cluster() && !cluster::ClusterAvailable())
    throw UsageError(
        "cluster flags need a placeflow built with the cluster runtime (PF_WITH_GRPC)");
  if (!a.local_cluster.empty()) {
    role.kind = Role::Kind::kLocalCluster;
  } else if (!a.job_name.empty()) {
    role.task = cluster::JoinCluster(
        {a.job_name, static_cast<int>(a.task_index), a.ps_hosts, a.worker_hosts});
    role.kind = role.task->is_ps() ? Role::Kind::kPs : Role::Kind::kWorker;
  } else if (a.sync_replicas) {
    throw UsageError(
        "--sync-replicas trains the workers of a cluster: add --job-name ... or --local-cluster");
  }
  return role;
}

int RunWithoutTraining(Role& role, const TrainArgs& a, int argc, char** argv) {
  switch (role.kind) {
    case Role::Kind::kTowersTable:
      return TowersTable(a);
    case Role::Kind::kLocalCluster:
      return cluster::RunLocalCluster(a.local_cluster, argc, argv);
    case Role::Kind::kPs:
      return role.task->Serve();
    default:
      throw Error(errors::Internal("this role trains"));
  }
}

TrainingData LoadData(const TrainArgs& a) {
  TrainingData d;
  // Classifiers read their batches through a dataset in the graph, except in a cluster (each
  // worker feeds its own).
  d.pipeline = a.input == "dataset" && !a.in_cluster();
  if (a.data_format != "idx" && !d.pipeline)
    throw UsageError("--data-format " + a.data_format +
                     " reads through the input pipeline: not with --input feed or a cluster");
  if (!models::IsClassifier(a.model)) return d;
  const std::string dir = a.data.empty() ? DefaultData() : a.data;
  if (dir.empty())
    throw UsageError(
        "--data DIR is required: no default data set found (apt-get install "
        "dataset-fashion-mnist)");
  if (a.data_format == "tfrecord") {
    LoadTFRecords(a, dir, &d);
  } else if (a.data_format == "images") {
    LoadImages(a, dir, &d);
  } else {
    LoadIdx(a, dir, &d);
  }
  std::printf("data: %s (%lld train, %lld test examples)\n", dir.c_str(),
              static_cast<long long>(d.train_examples), static_cast<long long>(d.test.size()));
  std::printf("input: %s files, %s\n", a.data_format.c_str(),
              d.pipeline ? "read through the pipeline (shuffle, batch, prefetch)"
                         : "batches prepared on a thread and fed");
  return d;
}

TrainGraph BuildGraph(const TrainArgs& a, const Role& role, const TrainingData& data) {
  TrainGraph tg;
  tg.classifier = models::IsClassifier(a.model);
  models::ModelOptions mo = ModelOptionsFor(a, role, data.train_examples, &tg.num_cpus);
  mo.width = a.width;
  if (!data.image_shape.empty()) {
    mo.image_shape = data.image_shape;
    mo.num_classes = static_cast<int64_t>(data.class_names.size());
  }
  tg.steps_per_epoch = mo.steps_per_epoch;
  tg.graph = std::make_unique<Graph>();
  tg.graph->set_seed(a.seed);
  Scope root = Scope::Root(tg.graph.get());
  if (role.task) root = role.task->Place(root);  // variables on the ps tasks
  if (tg.classifier && data.pipeline) {
    tg.iterator = TrainIterator(a, root, data);
    mo.input = tg.iterator->next[0];
    mo.target = tg.iterator->next[1];
  }
  tg.model = models::BuildModel(a.model, root, mo);
  if (!a.logdir.empty()) {
    summaries::SummaryOptions so;
    so.logdir = a.logdir;
    so.histogram_every = a.histogram_every;
    tg.summaries = summaries::TrainingSummaries::Create(root, tg.model, so);
  }
  tg.init = GlobalVariablesInitializer(root);
  if (const auto& sync = tg.model.sync) {
    tg.sync_chief_init =
        ops::NoOp(root.WithOpName("sync_chief_start")
                      .WithControlDependencies({sync->chief_init_op(), sync->InitTokensOp(root)}));
    tg.sync_local_init = sync->local_step_init_op();
  }
  ApplyPlacementRules(*tg.graph, a.place_rules);
  return tg;
}

SessionOptions TrainSessionOptions(TrainArgs& a, const Role& role, const TrainGraph& tg,
                                   std::shared_ptr<const Profile> profile) {
  SessionOptions opts;
  opts.log_device_placement = a.log_placement;
  opts.rewrite_options.auto_mixed_precision = a.mixed_precision;
  opts.allow_soft_placement = !a.no_soft_placement;
  if (role.task) {
    if (a.placement == "auto" || !a.device_memory.empty() || a.device_threads > 0)
      throw UsageError(
          "--placement auto, --device-memory and --device-threads are for one process");
    opts.target = role.task->target();
    AdjustForWorker(a, *role.task);
  } else {
    opts.device_count["CPU"] = tg.num_cpus;
    opts.num_threads = static_cast<int>(a.threads);
    opts.cpu_device_threads = static_cast<int>(a.device_threads);
    opts.placement = a.placement;
    opts.placement_options.algorithm = a.placement_algorithm;
    opts.placement_options.unknown_dim = a.batch;  // the batch dimension of the placeholders
    opts.placement_options.profile = std::move(profile);
    if (!a.device_memory.empty()) {
      StatusOr<std::map<std::string, int64_t>> memory = ParseDeviceMemory(a.device_memory);
      if (!memory.ok()) throw UsageError("--device-memory: " + memory.status().message());
      opts.device_memory = *memory;
    }
  }
  return opts;
}

std::unique_ptr<Session> OpenSession(TrainArgs& a, const Role& role, const TrainGraph& tg,
                                     std::shared_ptr<const Profile> profile) {
  const SessionOptions opts = TrainSessionOptions(a, role, tg, std::move(profile));
  auto sess = std::make_unique<Session>(*tg.graph, opts);
  const models::Model& m = tg.model;
  Fallbacks fallbacks;  // devices named but absent -> where their nodes went
  if (opts.target.empty() && opts.allow_soft_placement) {
    std::vector<std::pair<std::string, std::string>> named;  // (what the user wrote, device)
    for (const PlaceRule& r : a.place_rules)
      named.emplace_back("--place '" + r.text + "'", r.device);
    if (a.aggregation == "param" && !m.variable_device.empty())
      named.emplace_back("--variable-device " + a.variable_device, m.variable_device);
    fallbacks = ReportFallbacks(*tg.graph, *sess, named);
  }
  std::printf("pf-train: model %s, optimizer %s, %s, %d graph nodes, %zu variables\n",
              m.name.c_str(), m.optimizer_name.c_str(),
              NoteFallbacks(Replication(a, m), fallbacks).c_str(), tg.graph->num_nodes(),
              GlobalVariables(tg.graph.get()).size());
  std::fflush(stdout);
  return sess;
}

TrainOutcome Train(const TrainArgs& a, const Role& role, TrainGraph& tg, Session& sess,
                   TrainingData& data) {
  trainer::Options to = TrainerOptions(a, role, tg, data);
  if (tg.summaries) tg.summaries->Attach(sess, &to);
  to.make_creator = [&a, &role, &tg](Session& s, std::shared_ptr<Saver> saver) {
    return MakeCreator(a, role, tg, s, std::move(saver));
  };
  if (tg.model.sync) {
    to.session_hooks.push_back(std::make_shared<SyncReplicasHook>(
        role.task->is_chief(), tg.sync_chief_init, tg.sync_local_init));
    to.until_global_step = true;
    to.step_timeout_ms = static_cast<int64_t>(a.sync_timeout * 1000);
  }
  trainer::Trainer trainer(tg.model, sess, to);
  // The variables ready (initialised, restored, or the chief waited for) before the sync
  // chief's update loop starts.
  trainer.CreateSession();
  TrainOutcome outcome;
  if (const auto& sync = tg.model.sync) {
    if (role.task->is_chief()) {
      const int64_t last = tg.classifier ? a.epochs * tg.steps_per_epoch : a.steps;
      outcome.sync_chief =
          std::make_unique<train::SyncReplicasChief>(sess, *sync, last, a.sync_timeout);
    }
  }
  InstallSigintHandler();
  const int64_t first_step = trainer.global_step();
  const auto start = std::chrono::steady_clock::now();
  trainer.Run(tg.classifier ? &data.train : nullptr, tg.classifier ? &data.test : nullptr);
  if (a.placement == "auto") {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ReportPrediction(tg, sess, seconds, trainer.global_step() - first_step);
  }
  outcome.interrupted = trainer.interrupted();
  if (outcome.interrupted) outcome.global_step = trainer.global_step();
  return outcome;
}

int Report(const TrainArgs& a, TrainGraph& tg, Session& sess, TrainOutcome& outcome) {
  if (tg.summaries) {
    tg.summaries->Close();
    std::printf("summaries: %s\n", tg.summaries->path().c_str());
  }
  if (outcome.interrupted) {
    std::fprintf(stderr, "pf-train: interrupted (SIGINT) at step %lld%s%s\n",
                 static_cast<long long>(outcome.global_step),
                 a.checkpoint.empty() ? "" : "; checkpoint saved",
                 tg.summaries ? "; summaries flushed" : "");
    return 130;
  }
  if (auto& chief = outcome.sync_chief) {
    chief->Stop();
    ThrowIfError(chief->status());
    std::printf(
        "sync replicas: %lld updates, %lld stale gradients dropped\n",
        static_cast<long long>(chief->updates()),
        static_cast<long long>(sess.Run({tg.model.sync->num_dropped()})[0].scalar<int64_t>()));
  }
  return 0;
}

int Main(int argc, char** argv) {
  try {
    TrainArgs a = ParseArgs(argc, argv);
    if (a.help) {
      std::fputs(a.help_text.c_str(), stdout);
      return 0;
    }
    Role role = ChooseRole(a);
    if (!role.trains()) return RunWithoutTraining(role, a, argc, argv);
    TrainingData data = LoadData(a);
    TrainGraph tg = BuildGraph(a, role, data);
    std::shared_ptr<const Profile> profile;
    if (a.placement == "auto" && a.profile_steps > 0) profile = ProfileWithRules(a, role, tg, data);
    std::unique_ptr<Session> sess = OpenSession(a, role, tg, std::move(profile));
    TrainOutcome outcome = Train(a, role, tg, *sess, data);
    return Report(a, tg, *sess, outcome);
  } catch (const UsageError& e) {
    // Bad flags and settings: one line on stderr, exit status 2 (as for a usage error).
    std::fprintf(stderr, "pf-train: %s\n", e.what());
    return 2;
  }
}

}  // namespace pf::app
