// Seed 004: MirroredStrategy, as the TensorFlow article uses it: the model (MobileNetV2, Keras's
// block table) replicated on every device, each batch split across the replicas, the gradients
// all-reduced (NCCL between GPUs) and the same update applied by every replica; `fit` shows a
// progress bar. The article trains on cats_vs_dogs photos; until image folders are supported this
// program trains the width-0.35 network on 28x28 MNIST-format images.
//
//   build/examples/seed004_mirrored [steps] [data_dir]    # defaults: 200, Fashion-MNIST
//
// Replicas: one per GPU, else two CPU devices. Exits 1 if the loss did not go down.
#include <fmt/format.h>
#include <placeflow/data/idx.h>
#include <placeflow/devices/gpu_probe.h>
#include <placeflow/models/models.h>
#include <placeflow/placeflow.h>
#include <placeflow/train/basic_hooks.h>
#include <placeflow/train/monitored_session.h>

#include <cstdio>
#include <cstdlib>
#include <numeric>

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::atoll(argv[1]) : 200;
  const std::string data_dir = argc > 2 ? argv[2] : "/usr/share/datasets/fashion-mnist";
  constexpr int64_t kBatch = 64;  // the article's global batch

  // strategy = tf.distribute.MirroredStrategy(): every GPU, else two CPU devices.
  const int gpus = pf::CudaDeviceCount();
  pf::SessionOptions session_options;
  session_options.allow_soft_placement = true;
  if (gpus == 0) session_options.device_count["CPU"] = 2;
  pf::train::TowerOptions mirrored = pf::train::TowerOptions::ForSession(session_options);
  mirrored.devices = {gpus > 0 ? "all_gpus" : "all_cpus"};
  mirrored.aggregation = pf::train::Aggregation::kAllReduce;

  // with strategy.scope(): model = MobileNetV2(...); model.compile(optimizer="adam", ...)
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  pf::models::ModelOptions o;
  o.towers = mirrored;
  pf::models::Model model = pf::models::BuildModel("cnn_seed004", root, o);
  fmt::print("{} replicas: {}\n", model.tower_devices.size(), fmt::join(model.tower_devices, ", "));

  // model.fit(train_dataset, steps_per_epoch=steps): a progress bar, stopped at `steps`.
  pf::data::MnistArrays train = pf::data::LoadMnist(data_dir, pf::data::Split::kTrain).value();
  pf::train::MonitoredTrainingSessionOptions mts;
  mts.session_options = session_options;
  mts.hooks = {
      std::make_shared<pf::train::StopAtStepHook>(pf::train::StopAtStepHook::LastStep(steps)),
      std::make_shared<pf::train::ProgressBarHook>(stderr, steps, model.loss, kBatch)};
  auto sess = pf::train::MonitoredTrainingSession(&g, mts);
  std::vector<int64_t> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  pf::Tensor images, labels;
  std::vector<float> losses;
  for (int64_t step = 0; !sess->ShouldStop(); ++step) {
    pf::data::Gather(train, order, (step * kBatch) % (train.size() - kBatch), kBatch, &images,
                     &labels);
    losses.push_back(sess->Run({{model.input, images}, {model.target, labels}}, {model.loss},
                               {model.train_op})[0]
                         .scalar<float>());
  }
  sess->Close();
  // The mean loss of the first and the last tenth of the steps.
  const size_t k = std::max<size_t>(1, losses.size() / 10);
  const float first = std::accumulate(losses.begin(), losses.begin() + k, 0.f) / k;
  const float last = std::accumulate(losses.end() - k, losses.end(), 0.f) / k;
  fmt::print("mean loss of the first {} steps {:.4f}, of the last {} {:.4f}\n", k, first, k, last);
  if (!(last < first)) {
    fmt::print(stderr, "seed004_mirrored: the loss did not go down\n");
    return 1;
  }
  return 0;
}
