// The training loop behind pf-train: batches prepared on a background thread, progress
// lines, per-epoch evaluation, checkpoints and exact resumption. Every training step runs
// through a train::MonitoredSession (train/monitored_session.h): its session creator restores
// (or, in a cluster, initialises or waits for the chief, and recovers from a ps restart), and
// hooks check the loss (NanTensorHook), save every checkpoint_every steps (CheckpointSaverHook),
// stop after max_steps (StopAtStepHook) and run the StepHooks below.
//
//   pf::trainer::Options o;  o.epochs = 2;  o.checkpoint_dir = "ckpt";
//   pf::trainer::Trainer t(model, session, o);
//   t.Run(&train_data, &test_data);      // mnist_mlp; nullptr data for mlp_seed000
//
// Batches are a pure function of (seed, global step): epoch e shuffles with seed*1000003+e, so
// a run restored from a checkpoint at step s sees exactly the batches a straight run would.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "placeflow/data/idx.h"
#include "placeflow/data/iterator_ops.h"
#include "placeflow/models/models.h"
#include "placeflow/train/basic_hooks.h"
#include "placeflow/train/monitored_session.h"
#include "placeflow/train/progress_bar.h"

namespace pf::trainer {

// What one training step gave, for StepHooks::after.
struct StepResult {
  int64_t step = 0;  // the global step this step made (1 for the first step of a fresh run)
  float loss = 0;
  const std::vector<Tensor>* extra = nullptr;  // StepHooks::fetches' values, in order
  double step_s = 0;                           // wall time of the step's Run
  int64_t examples = 0;                        // examples in the batch
  const RunMetadata* metadata = nullptr;       // when StepHooks::trace asked for this step
};

// Extra work riding on the training steps (pf-train's --logdir summaries): fetched in the same
// Run as the loss, so a step is not run twice. Every hook is optional.
struct StepHooks {
  // Tensors to fetch with the loss in the step that makes global step `step`.
  std::function<std::vector<Output>(int64_t step)> fetches;
  // Whether to trace that step (RunOptions::trace); the trace reaches `after`.
  std::function<bool(int64_t step)> trace;
  std::function<void(const StepResult&)> after;
  // After each epoch's evaluation (classifiers): the global step and the test accuracy.
  std::function<void(int64_t step, double test_accuracy)> after_epoch;
};

struct Options {
  int64_t epochs = 1;   // classifiers
  int64_t steps = 100;  // regression (mlp_seed000)
  // Classifiers: stop after this many steps (a StopAtStepHook), the epoch in progress ending
  // there (evaluated, saved); 0: train every epoch.
  int64_t max_steps = 0;
  int64_t batch = 0;        // 0: the model's default (2000 or 100)
  int64_t print_every = 0;  // 0: about ten lines per run or five per epoch
  uint64_t seed = 1;
  std::string checkpoint_dir;  // save after each epoch (or at the end) when set
  bool restore = false;        // continue from the latest checkpoint in checkpoint_dir
  std::string trace_path;      // write a Chrome trace of the second step here
  // Count this process's own steps from 0 (a worker of a cluster, whose global step also
  // counts the other workers' updates) instead of continuing from the global step.
  bool count_local_steps = false;
  // Sync replicas (the model has step_after): train until the global step the train op returns
  // reaches steps (regression) or epochs * steps per epoch, whatever this worker's own count.
  bool until_global_step = false;
  int64_t step_timeout_ms = 0;  // > 0: a training step that takes longer fails (RunOptions)
  // Also save every this many steps (0: only after each epoch, or at the end).
  int64_t checkpoint_every = 0;
  // Makes the session creator of the steps' MonitoredSession for `session` (a cluster's chief or
  // worker: initialise or wait, recover from a ps restart), given the trainer's saver (null
  // without checkpoint_dir). Null: the session is ready (initialised by the caller); the chief's
  // creator restores the latest checkpoint first when `restore` is set.
  std::function<std::unique_ptr<train::SessionCreator>(Session& session,
                                                       std::shared_ptr<Saver> saver)>
      make_creator;
  // More hooks on every training step (after the trainer's own).
  std::vector<std::shared_ptr<train::SessionRunHook>> session_hooks;
  // A NaN or infinite loss stops training with an error (TensorFlow's NanTensorHook) unless set.
  bool allow_nan = false;
  // Restoring a checkpoint with NaN or Inf values is an error (else a warning per variable).
  bool check_numerics = false;
  FILE* out = stdout;  // progress lines
  // Classifiers: the model reads its training batches from this iterator (its IteratorGetNext
  // outputs are the model's input and target) instead of feeds. Each epoch runs the initializer
  // (a new pass: Shuffle's new order) and takes train_examples / batch batches; an OutOfRange
  // before that ends the epoch early. A restored run replays the passes and skips the batches
  // already trained on, so it sees exactly the batches a straight run would.
  std::optional<data::GraphIterator> iterator;
  int64_t train_examples = 0;  // with iterator: the examples per pass (the train arg may be null)
  // Progress: a bar redrawn in place (terminals), plain periodic lines, or none (pf-train
  // --quiet). The tests and tools that read the lines keep kLines.
  progress::Mode progress = progress::Mode::kLines;
  // Set from outside (pf-train's SIGINT handler) to stop after the step in progress: the trainer
  // saves a checkpoint when checkpoint_dir is set and returns; interrupted() is then true.
  const std::atomic<bool>* stop = nullptr;
  StepHooks hooks;
};

// pf-train's training input: the examples shuffled (a buffer of all of them: a uniform
// shuffle, a new order per pass), the first num_examples / batch * batch of them in batches of
// `batch` (the static batch dimension stays unknown, so evaluation can feed other sizes),
// mapped by `parse_batch` when given (TFRecord: serialized examples parsed a batch at a time,
// on 2 threads, into `parsed_spec`), prefetched.
data::Dataset TrainingPipeline(const data::Dataset& examples, int64_t num_examples, int64_t batch,
                               uint64_t seed, data::MapFn parse_batch = nullptr,
                               data::ElementSpec parsed_spec = {});

// OK when `dir` can hold checkpoints: an existing, writable directory, or one that can be
// created (it is, with its parents). Otherwise FailedPrecondition naming the path and why (a
// file, under a file, read-only): checked before training, not after a whole epoch.
Status CheckCheckpointDir(const std::string& dir);

// The batch size used for `examples` training examples: `batch`, or all of them when there are
// fewer (TensorFlow's Dataset.batch gives one short batch per epoch then). InvalidArgument for
// an empty data set.
StatusOr<int64_t> EffectiveBatch(int64_t batch, int64_t examples);

// Prepares batch s+1 while the caller trains on batch s.
class BatchPrefetcher {
 public:
  BatchPrefetcher(const data::MnistArrays& data, int64_t batch, uint64_t seed, int64_t first_step);
  ~BatchPrefetcher();
  // The batch for the next step, in order. Rethrows what preparing it threw.
  void Next(Tensor* images, Tensor* labels);
  int64_t steps_per_epoch() const { return steps_per_epoch_; }

 private:
  void Produce(int64_t step, Tensor* images, Tensor* labels);
  const data::MnistArrays& data_;
  const int64_t batch_, steps_per_epoch_;
  const uint64_t seed_;
  int64_t next_step_;
  int64_t order_epoch_ = -1;
  std::vector<int64_t> order_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false, stop_ = false;
  Tensor images_, labels_;
  std::exception_ptr error_;  // from Produce, handed to the consumer
  std::thread worker_;
};

class Trainer {
 public:
  Trainer(const models::Model& model, Session& session, Options options);
  // Trains until the option's epochs/steps are done; returns the last test accuracy
  // (classifiers) or the last loss.
  double Run(const data::MnistArrays* train, const data::MnistArrays* test);
  // Makes the MonitoredSession (Run does when it has not been made): its creator initialises,
  // restores or waits for the variables.
  void CreateSession();
  int64_t global_step();
  // Whether Run returned early because `stop` was set.
  bool interrupted() const { return interrupted_; }

 private:
  double RunRegression();
  double RunClassifier(const data::MnistArrays* train, const data::MnistArrays& test);
  // Classifier step `step` (from 0): fed from `batches`, or read from the iterator.
  float ClassifierStep(int64_t step, bool trace, int64_t batch, int64_t per_epoch,
                       BatchPrefetcher* batches);
  // With an iterator: runs the initializer for the passes before global step `first` and
  // skips the batches of its pass already trained on.
  void ReplayIterator(int64_t first, int64_t per_epoch);
  double TestAccuracy(const data::MnistArrays& test);
  // One training step, making global step `step`; traced (and written to trace_path) when
  // `trace` is set; runs the hooks.
  float Step(const FeedDict& feeds, bool trace, int64_t step, int64_t examples);
  bool StopRequested();
  // The NaN hook's message for `loss` at the step in progress.
  std::string Diverged(double loss) const;
  std::vector<std::shared_ptr<train::SessionRunHook>> MakeHooks();
  void MaybeSave();

  std::string GlobalStepNote() const;  // " global_step=N" with until_global_step
  // Whether the loop goes on after local step `step` (counted from 1) of `total`.
  bool More(int64_t step, int64_t total) const {
    return o_.until_global_step ? global_after_ < total : step <= total;
  }

  const models::Model& m_;
  Session& sess_;
  Options o_;
  int64_t global_after_ = 0;  // with until_global_step: the global step after the last step
  bool interrupted_ = false;
  std::shared_ptr<Saver> saver_;
  std::shared_ptr<train::CheckpointSaverHook> checkpoints_;  // with checkpoint_every
  std::unique_ptr<train::MonitoredSession> mon_;
  // The step in progress, as the hooks see it.
  struct Current {
    int64_t step = 0, examples = 0;
  } current_;
};

}  // namespace pf::trainer
