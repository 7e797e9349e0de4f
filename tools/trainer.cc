#include "tools/trainer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>

namespace pf::trainer {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// `batch` when 1 <= batch <= data.size(); throws InvalidArgument otherwise.
int64_t CheckBatch(const data::MnistArrays& data, int64_t batch) {
  if (batch < 1 || batch > data.size())
    throw Error(errors::InvalidArgument("Batches of ", batch, " from a data set of ", data.size(),
                                        " examples: the batch must be in [1, ", data.size(), "]"));
  return batch;
}

}  // namespace

Status CheckCheckpointDir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto fail = [&](const std::string& why) {
    return errors::FailedPrecondition("Cannot save checkpoints in '", dir, "': ", why);
  };
  if (dir.empty()) return fail("the path is empty");
  const fs::path path(dir);
  if (fs::exists(path, ec) && !fs::is_directory(path, ec)) return fail("it is not a directory");
  // The nearest existing ancestor must be a directory ("ckpt" under a regular file cannot be
  // created).
  for (fs::path p = path.parent_path(); !p.empty(); p = p.parent_path()) {
    if (fs::exists(p, ec)) {
      if (!fs::is_directory(p, ec)) return fail("'" + p.string() + "' is not a directory");
      break;
    }
    if (p == p.parent_path()) break;
  }
  fs::create_directories(path, ec);
  if (ec) return fail("cannot create it: " + ec.message());
  // Writable (a read-only file system, or permissions): what Saver::Save will need.
  const fs::path probe = path / fmt::format(".pf_write_check_{}", ::getpid());
  FILE* f = std::fopen(probe.c_str(), "w");
  if (f == nullptr) return fail(std::string("it is not writable: ") + std::strerror(errno));
  std::fclose(f);
  fs::remove(probe, ec);
  return Status::OK();
}

StatusOr<int64_t> EffectiveBatch(int64_t batch, int64_t examples) {
  if (examples <= 0) return errors::InvalidArgument("The training set has no examples");
  if (batch < 1) return errors::InvalidArgument("The batch size must be positive, got ", batch);
  return std::min(batch, examples);
}

BatchPrefetcher::BatchPrefetcher(const data::MnistArrays& data, int64_t batch, uint64_t seed,
                                 int64_t first_step)
    : data_(data),
      batch_(CheckBatch(data, batch)),
      steps_per_epoch_(data.size() / batch_),
      seed_(seed),
      next_step_(first_step) {
  worker_ = std::thread([this] {
    for (;;) {
      Tensor images, labels;
      int64_t step;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !ready_; });
        if (stop_) return;
        step = next_step_;
      }
      std::exception_ptr error;
      try {
        Produce(step, &images, &labels);
      } catch (...) {
        error = std::current_exception();  // std::terminate otherwise; Next rethrows it
      }
      std::lock_guard<std::mutex> lock(mu_);
      error_ = error;
      images_ = std::move(images);
      labels_ = std::move(labels);
      ready_ = true;
      cv_.notify_all();
    }
  });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void BatchPrefetcher::Produce(int64_t step, Tensor* images, Tensor* labels) {
  const int64_t epoch = step / steps_per_epoch_;
  if (epoch != order_epoch_) {
    order_.resize(data_.size());
    std::iota(order_.begin(), order_.end(), 0);
    std::mt19937_64 rng(seed_ * 1000003 + static_cast<uint64_t>(epoch));
    std::shuffle(order_.begin(), order_.end(), rng);
    order_epoch_ = epoch;
  }
  data::Gather(data_, order_, (step % steps_per_epoch_) * batch_, batch_, images, labels);
}

void BatchPrefetcher::Next(Tensor* images, Tensor* labels) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return ready_; });
  if (error_) std::rethrow_exception(error_);
  *images = std::move(images_);
  *labels = std::move(labels_);
  ready_ = false;
  ++next_step_;
  cv_.notify_all();
}

namespace {

// The trainer's StepHooks (pf-train's --logdir summaries) as a SessionRunHook: their fetches
// and trace ride on the step, `after` gets the step's result.
class StepHooksAdapter : public train::SessionRunHook {
 public:
  StepHooksAdapter(const StepHooks& hooks, Output loss, const int64_t* step,
                   const int64_t* examples)
      : hooks_(hooks), loss_(loss), step_(step), examples_(examples) {}

  train::SessionRunArgs BeforeRun(train::SessionRunContext&) override {
    train::SessionRunArgs args;
    args.fetches.push_back(loss_);
    if (hooks_.fetches) {
      for (const Output& o : hooks_.fetches(*step_)) args.fetches.push_back(o);
    }
    traced_ = hooks_.trace && hooks_.trace(*step_);
    args.trace = traced_;
    return args;
  }

  void AfterRun(train::SessionRunContext&, const train::SessionRunValues& values) override {
    if (!hooks_.after) return;
    std::vector<Tensor> extra(values.results.begin() + 1, values.results.end());
    StepResult r;
    r.step = *step_;
    r.loss = values.results[0].scalar<float>();
    r.extra = &extra;
    r.step_s = values.step_s;
    r.examples = *examples_;
    r.metadata = traced_ ? values.metadata : nullptr;
    hooks_.after(r);
  }

 private:
  const StepHooks& hooks_;
  Output loss_;
  const int64_t *step_, *examples_;
  bool traced_ = false;
};

}  // namespace

Trainer::Trainer(const models::Model& model, Session& session, Options options)
    : m_(model), sess_(session), o_(std::move(options)) {
  if (o_.until_global_step && !m_.step_after.node)
    throw Error(errors::InvalidArgument("until_global_step needs a model with step_after"));
  if (!o_.checkpoint_dir.empty()) {
    ThrowIfError(CheckCheckpointDir(o_.checkpoint_dir));
    saver_ = std::make_shared<Saver>(&session.graph(), std::vector<Variable>{}, 3);
  }
}

std::string Trainer::GlobalStepNote() const {
  if (!o_.until_global_step) return "";
  return " global_step=" + std::to_string(global_after_);
}

int64_t Trainer::global_step() { return sess_.Run({m_.global_step.value()})[0].scalar<int64_t>(); }

std::string Trainer::Diverged(double loss) const {
  return fmt::format(
      "Model diverged with loss = {} at step {} (fetched from {}); lower the learning rate or "
      "change the initialiser (--allow-nan keeps training)",
      std::isnan(loss) ? "NaN" : (loss > 0 ? "inf" : "-inf"), current_.step, m_.loss.name());
}

std::vector<std::shared_ptr<train::SessionRunHook>> Trainer::MakeHooks() {
  std::vector<std::shared_ptr<train::SessionRunHook>> hooks;
  if (o_.hooks.fetches || o_.hooks.trace || o_.hooks.after) {
    hooks.push_back(
        std::make_shared<StepHooksAdapter>(o_.hooks, m_.loss, &current_.step, &current_.examples));
  }
  if (!o_.allow_nan) {
    hooks.push_back(std::make_shared<train::NanTensorHook>(
        m_.loss, true, [this](double loss) { return Diverged(loss); }));
  }
  if (saver_ && o_.checkpoint_every > 0) {
    train::CheckpointSaverHook::Options co;
    co.every_steps = o_.checkpoint_every;
    co.save_on_create = false;
    co.save_at_end = false;  // the trainer saves at each epoch's end and at the end
    co.saver = saver_;
    co.log = [this](const std::string& line) { std::fprintf(o_.out, "%s\n", line.c_str()); };
    checkpoints_ = std::make_shared<train::CheckpointSaverHook>(o_.checkpoint_dir, co);
    hooks.push_back(checkpoints_);
  }
  if (o_.max_steps > 0)
    hooks.push_back(
        std::make_shared<train::StopAtStepHook>(train::StopAtStepHook::NumSteps(o_.max_steps)));
  hooks.insert(hooks.end(), o_.session_hooks.begin(), o_.session_hooks.end());
  return hooks;
}

void Trainer::CreateSession() {
  if (mon_) return;
  std::unique_ptr<train::SessionCreator> creator;
  if (o_.make_creator) {
    creator = o_.make_creator(sess_, saver_);
  } else {
    // The caller initialised the session: the chief's creator only restores (with `restore`).
    train::SessionCreatorOptions co;
    co.session = &sess_;
    co.scaffold.init_op = Operation();
    co.scaffold.saver = saver_;
    co.ready = !(o_.restore && saver_);
    if (!co.ready) co.checkpoint_dir = o_.checkpoint_dir;
    co.restore_options.check_numerics = o_.check_numerics;
    co.log = [this](const std::string& line) {
      std::fprintf(o_.out, "%s\n", line.c_str());
      std::fflush(o_.out);
    };
    creator = std::make_unique<train::ChiefSessionCreator>(std::move(co));
  }
  mon_ = std::make_unique<train::MonitoredSession>(std::move(creator), MakeHooks());
}

float Trainer::Step(const FeedDict& feeds, bool trace, int64_t step, int64_t examples) {
  current_ = {step, examples};
  std::vector<Output> fetches = {m_.loss};
  if (m_.step_after.node) fetches.push_back(m_.step_after);
  RunOptions ro;
  const bool chrome_trace = trace && !o_.trace_path.empty();
  ro.trace = chrome_trace;
  ro.timeout_in_ms = o_.step_timeout_ms;
  RunMetadata md;
  std::vector<Tensor> out = mon_->Run(feeds, fetches, {m_.train_op}, ro, &md);
  if (m_.step_after.node) global_after_ = out[1].scalar<int64_t>();
  if (chrome_trace) {
    ThrowIfError(WriteChromeTrace(md, o_.trace_path));
    std::fprintf(o_.out, "trace of one step (%zu nodes, %.3f ms) written to %s\n",
                 md.step_stats.size(), md.step_us / 1e3, o_.trace_path.c_str());
  }
  return out[0].scalar<float>();
}

bool Trainer::StopRequested() {
  if (o_.stop == nullptr || !o_.stop->load()) return false;
  interrupted_ = true;
  return true;
}

void Trainer::MaybeSave() {
  if (!saver_) return;
  const int64_t step = global_step();
  // The hook saved this very step already.
  if (checkpoints_ && checkpoints_->last_saved_step() == step) return;
  std::string path = saver_->Save(sess_, o_.checkpoint_dir + "/model", step);
  std::fprintf(o_.out, "saved %s\n", path.c_str());
}

data::Dataset TrainingPipeline(const data::Dataset& examples, int64_t num_examples, int64_t batch,
                               uint64_t seed, data::MapFn parse_batch,
                               data::ElementSpec parsed_spec) {
  data::Dataset d = examples.Shuffle(std::max<int64_t>(1, num_examples), seed)
                        .Take(num_examples / batch * batch)
                        .Batch(batch);
  if (parse_batch) d = d.Map(std::move(parse_batch), 2, std::move(parsed_spec));
  return d.Prefetch(2);
}

double Trainer::Run(const data::MnistArrays* train, const data::MnistArrays* test) {
  CreateSession();
  double result = m_.classifier ? RunClassifier(train, *test) : RunRegression();
  mon_->Close();
  std::fflush(o_.out);
  return result;
}

double Trainer::RunRegression() {
  const int64_t batch = o_.batch > 0 ? o_.batch : 2000;
  Tensor x, t;
  models::SeedBatch(batch, static_cast<uint32_t>(o_.seed), &x,
                    &t);  // the article trains on one fixed batch
  const int64_t first = o_.count_local_steps ? 0 : global_step();
  const int64_t every = o_.print_every > 0 ? o_.print_every : std::max<int64_t>(1, o_.steps / 10);
  auto window = std::chrono::steady_clock::now();
  const auto run_start = window;
  double loss = 0;
  const progress::Mode mode = progress::Resolve(o_.progress, o_.out);
  std::optional<progress::ProgressBar> bar;
  if (mode == progress::Mode::kBar) bar.emplace(o_.out, o_.steps - first);
  int64_t step = first + 1;
  for (; More(step, o_.steps); ++step) {
    loss = Step({{m_.input, x}, {m_.target, t}}, step == first + 2, step, batch);
    if (bar) {
      bar->Update(step - first, {{"loss", loss}}, (step - first) * batch / Seconds(run_start));
    } else if (mode == progress::Mode::kLines &&
               (step % every == 0 || step == o_.steps || !More(step + 1, o_.steps))) {
      const int64_t n = step % every == 0 ? every : step % every;
      const double dt = Seconds(window);
      std::fprintf(o_.out, "step %lld/%lld loss=%.6g step_ms=%.3f examples/s=%.0f%s\n",
                   static_cast<long long>(step), static_cast<long long>(o_.steps), loss,
                   1e3 * dt / n, n * batch / dt, GlobalStepNote().c_str());
      std::fflush(o_.out);
      window = std::chrono::steady_clock::now();
    }
    if (StopRequested() || mon_->ShouldStop()) break;
  }
  if (bar) {
    bar->Finish(std::min(step, o_.steps) - first, {{"loss", loss}},
                (std::min(step, o_.steps) - first) * batch / Seconds(run_start));
  }
  if (mode == progress::Mode::kQuiet || interrupted_) {
    std::fprintf(o_.out, "step %lld/%lld loss=%.6g%s\n",
                 static_cast<long long>(std::min(step, o_.steps)), static_cast<long long>(o_.steps),
                 loss, interrupted_ ? " (interrupted)" : "");
  }
  MaybeSave();
  return loss;
}

void Trainer::ReplayIterator(int64_t first, int64_t per_epoch) {
  for (int64_t pass = 0; pass < first / per_epoch; ++pass)
    sess_.Run({}, {}, {o_.iterator->initializer});
  if (first % per_epoch == 0) return;
  sess_.Run({}, {}, {o_.iterator->initializer});
  for (int64_t k = 0; k < first % per_epoch; ++k) sess_.Run({o_.iterator->next.back()});
}

namespace {

// An epoch's progress on `out`: the running loss, a bar (terminals) or periodic lines, and the
// epoch's result.
class EpochProgress {
 public:
  EpochProgress(FILE* out, progress::Mode mode, int64_t epochs, int64_t per_epoch, int64_t every,
                int64_t batch)
      : out_(out),
        mode_(mode),
        epochs_(epochs),
        per_epoch_(per_epoch),
        every_(every),
        batch_(batch) {}

  // After step `in_epoch` (from 1) of `epoch`; the last one of an epoch draws nothing here.
  void Step(int64_t epoch, int64_t in_epoch, float loss, bool epoch_end) {
    loss_sum_ += loss;
    ++loss_count_;
    if (mode_ == progress::Mode::kBar) {
      if (!bar_) {
        std::fprintf(out_, "Epoch %lld/%lld\n", static_cast<long long>(epoch),
                     static_cast<long long>(epochs_));
        bar_.emplace(out_, per_epoch_);
      }
      if (!epoch_end) bar_->Update(in_epoch, {{"loss", Loss()}}, ExamplesPerSecond(Seconds()));
    } else if (mode_ == progress::Mode::kLines && in_epoch % every_ == 0 &&
               in_epoch != per_epoch_) {
      std::fprintf(out_, "epoch %lld step %lld/%lld loss=%.4f examples/s=%.0f\n",
                   static_cast<long long>(epoch), static_cast<long long>(in_epoch),
                   static_cast<long long>(per_epoch_), Loss(), ExamplesPerSecond(Seconds()));
      std::fflush(out_);
    }
  }
  // The epoch's line (or the bar's last draw) with its test accuracy; `train_s` was measured
  // before the evaluation. Starts the next epoch's count.
  void EndEpoch(int64_t epoch, int64_t in_epoch, double accuracy, double train_s) {
    if (bar_) {
      bar_->Finish(in_epoch, {{"loss", Loss()}, {"test_accuracy", accuracy}},
                   ExamplesPerSecond(train_s));
      bar_.reset();
    } else {
      std::fprintf(out_, "epoch %lld loss=%.4f test_accuracy=%.4f examples/s=%.0f\n",
                   static_cast<long long>(epoch), Loss(), accuracy, ExamplesPerSecond(train_s));
    }
    std::fflush(out_);
    start_ = std::chrono::steady_clock::now();
    loss_sum_ = 0;
    loss_count_ = 0;
  }
  // Stopped after step `in_epoch` of an epoch: the bar's last draw.
  void Interrupted(int64_t in_epoch) {
    if (bar_) bar_->Finish(in_epoch, {{"loss", Loss()}}, ExamplesPerSecond(Seconds()));
  }
  double Seconds() const { return trainer::Seconds(start_); }

 private:
  double Loss() const { return loss_sum_ / std::max<int64_t>(1, loss_count_); }
  double ExamplesPerSecond(double seconds) const { return loss_count_ * batch_ / seconds; }

  FILE* out_;
  progress::Mode mode_;
  int64_t epochs_, per_epoch_, every_, batch_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double loss_sum_ = 0;
  int64_t loss_count_ = 0;
  std::optional<progress::ProgressBar> bar_;
};

}  // namespace

float Trainer::ClassifierStep(int64_t step, bool trace, int64_t batch, int64_t per_epoch,
                              BatchPrefetcher* batches) {
  // One training step's feeds: a prepared batch, or none when the graph reads its iterator
  // (which starts a new pass at each epoch's first step, and once more if a pass ends early).
  if (!o_.iterator) {
    Tensor x, y;
    batches->Next(&x, &y);
    return Step({{m_.input, x}, {m_.target, y}}, trace, step + 1, batch);
  }
  if (step % per_epoch == 0) sess_.Run({}, {}, {o_.iterator->initializer});
  try {
    return Step({}, trace, step + 1, batch);
  } catch (const Error& e) {
    if (e.code() != Code::kOutOfRange) throw;
    std::fprintf(o_.out, "the input ended before step %lld of the epoch: a new pass\n",
                 static_cast<long long>(step % per_epoch + 1));
    sess_.Run({}, {}, {o_.iterator->initializer});
    return Step({}, trace, step + 1, batch);
  }
}

double Trainer::RunClassifier(const data::MnistArrays* train, const data::MnistArrays& test) {
  const int64_t asked = o_.batch > 0 ? o_.batch : 100;
  const int64_t examples = o_.iterator ? o_.train_examples : train->size();
  const int64_t batch = EffectiveBatch(asked, examples).ValueOrThrow();
  if (test.size() == 0) throw Error(errors::InvalidArgument("The test set has no examples"));
  if (batch < asked) {
    std::fprintf(o_.out, "batch %lld is larger than the %lld training examples: batches of %lld\n",
                 static_cast<long long>(asked), static_cast<long long>(examples),
                 static_cast<long long>(batch));
  }
  const int64_t first = o_.count_local_steps ? 0 : global_step();
  std::optional<BatchPrefetcher> batches;
  int64_t per_epoch = examples / batch;
  if (o_.iterator) {
    ReplayIterator(first, per_epoch);
  } else {
    batches.emplace(*train, batch, o_.seed, first);
    per_epoch = batches->steps_per_epoch();
  }
  const int64_t every = o_.print_every > 0 ? o_.print_every : std::max<int64_t>(1, per_epoch / 5);
  EpochProgress progress(o_.out, progress::Resolve(o_.progress, o_.out), o_.epochs, per_epoch,
                         every, batch);
  double accuracy = 0;
  int64_t step = first;
  for (; More(step + 1, o_.epochs * per_epoch); ++step) {
    const float loss =
        ClassifierStep(step, step == first + 1, batch, per_epoch, batches ? &*batches : nullptr);
    const int64_t epoch = step / per_epoch + 1, in_epoch = step % per_epoch + 1;
    // A hook's stop (max_steps) ends the epoch in progress: evaluated and saved.
    const bool epoch_end =
        in_epoch == per_epoch || !More(step + 2, o_.epochs * per_epoch) || mon_->ShouldStop();
    progress.Step(epoch, in_epoch, loss, epoch_end);
    if (StopRequested()) break;
    if (epoch_end) {
      const double train_s = progress.Seconds();
      accuracy = TestAccuracy(test);
      if (o_.hooks.after_epoch) o_.hooks.after_epoch(step + 1, accuracy);
      progress.EndEpoch(epoch, in_epoch, accuracy, train_s);
      MaybeSave();
      if (mon_->ShouldStop()) {
        ++step;
        break;
      }
    }
  }
  if (interrupted_) {
    progress.Interrupted(step % per_epoch + 1);
    std::fprintf(o_.out, "interrupted after step %lld\n", static_cast<long long>(step + 1));
    std::fflush(o_.out);
    MaybeSave();
  }
  return accuracy;
}

// In chunks of at most 1000 examples, so a CNN's activations for the whole test set never have to
// fit in memory at once; weighted by the chunk sizes.
double Trainer::TestAccuracy(const data::MnistArrays& test) {
  constexpr int64_t kChunk = 1000;
  const int64_t n = test.size();
  if (n <= kChunk) {
    return sess_.Run({{m_.input, test.images}, {m_.target, test.labels}}, {m_.accuracy})[0]
        .scalar<float>();
  }
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  double correct = 0;
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t count = std::min(kChunk, n - begin);
    Tensor x, y;
    data::Gather(test, order, begin, count, &x, &y);
    correct +=
        count * static_cast<double>(
                    sess_.Run({{m_.input, x}, {m_.target, y}}, {m_.accuracy})[0].scalar<float>());
  }
  return correct / static_cast<double>(n);
}

}  // namespace pf::trainer
