// Model builders (the models pf-train and pf-bench run), with their training ops: part of the
// library (placeflow/models/, namespace pf::models).
//
//   pf::models::Model m = pf::models::BuildModel("mnist_mlp", root, {});
//   sess.Run({{m.input, x}, {m.target, y}}, {m.loss}, {m.train_op});
//
// mlp_seed000: seed article 000's regression net, 600 -> 512 -> 128 -> 128 -> 1 with ReLU,
//   variables "affine<i>/w" and scalar biases "affine<i>/b", last layer "affine_last",
//   loss mean((y - target)^2) with target [batch, 600] broadcasting against y [batch, 1]
//   (as in the article), plain SGD.
// With ModelOptions::towers the layers are built once per tower (under tower_i/) and the
// update applies the combined gradients; variable names stay the same.
// mnist_mlp: seed article 002's 784 -> 500 -> 10 classifier (layer1/layer2): sparse softmax
//   cross-entropy plus L2 regularisation (in the "losses" collection), SGD with exponential
//   learning-rate decay, and accuracy measured with the moving averages of the variables.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "placeflow/core/tensor.h"
#include "placeflow/graph/scope.h"
#include "placeflow/graph/variable.h"
#include "placeflow/ops/ops.h"
#include "placeflow/train/layers.h"
#include "placeflow/train/loss_scale_optimizer.h"
#include "placeflow/train/optimizers.h"
#include "placeflow/train/sync_replicas_optimizer.h"
#include "placeflow/train/towers.h"
#include "placeflow/train/variables.h"

namespace pf::models {

struct ModelOptions {
  // "glorot" (default, trains) or "seed" (the article's truncated_normal(0, 1), which diverges).
  std::string init = "glorot";
  int64_t seed = 1;
  // sgd | momentum | adam | rmsprop | adagrad, or "" for the model's default (sgd for the MLPs,
  // adam for the CNNs); learning_rate 0 picks the model's default.
  std::string optimizer;
  double learning_rate = 0;
  int64_t steps_per_epoch = 600;  // the learning-rate decay period (mnist_mlp)
  double l2 = 1e-4;
  double moving_average_decay = 0.99;
  // Set: the model is replicated as towers (ReplicateTowers) and trained on the combined
  // gradients. Unset: the plain single-device graph.
  std::optional<train::TowerOptions> towers;
  // > 0: synchronous replicas across the workers of a cluster (between-graph): the optimizer is
  // wrapped in a SyncReplicasOptimizer aggregating this many gradients per update, of
  // total_num_replicas workers.
  int replicas_to_aggregate = 0;
  int total_num_replicas = 0;
  // CNNs: the batch-norm moving averages' momentum: 0.9, PyTorch's default (its momentum 0.1).
  // Keras's 0.99 lags the weights under Adam: mobilenet_v2_small's inference accuracy on
  // Fashion-MNIST swung 0.90, 0.89, 0.88, 0.83 over epochs 2-5 while the training loss fell.
  float batch_norm_momentum = 0.9f;
  // CNNs: trainable variables whose name matches this regex are left out of the update
  // (fine-tuning; the tests' controls train with frozen conv layers).
  std::string freeze;
  // Classifiers: when set (an iterator's IteratorGetNext outputs: float [?, 784], int32 [?]),
  // the model reads these instead of making placeholders (Model::input/target are these).
  Output input, target;
  // Classifiers: the images (height, width, channels; the input is [?, h * w * c]) and the
  // number of classes: MNIST's by default. mobilenet_v2: the width multiplier (Keras's alpha).
  std::vector<int64_t> image_shape = {28, 28, 1};
  int64_t num_classes = 10;
  double width = 1.0;
  // Dynamic loss scaling (train::LossScaleOptimizer with TF's defaults) around the optimizer:
  // what float16 mixed precision needs (pf-train --mixed-precision float16). Not with
  // replicas_to_aggregate.
  bool loss_scale = false;
};

struct Model {
  std::string name;
  Output input;     // float [?, features]
  Output target;    // mlp_seed000: float [?, 600]; mnist_mlp: int32 labels [?]
  Output output;    // predictions [?, 1] or logits [?, 10] (concatenated over towers)
  Output loss;      // scalar: data loss plus regularisation
  Output accuracy;  // scalar fraction (classifiers), with moving-average weights
  Operation train_op;
  Output learning_rate;                  // the scheduled rate (null when a constant)
  std::vector<train::GradAndVar> grads;  // what the optimizer applies (for summaries)
  Variable global_step;
  bool classifier = false;
  std::vector<std::string> tower_devices;  // empty for the plain graph
  std::string variable_device;             // where the towers put the variables ("": placer)
  std::shared_ptr<train::Optimizer> optimizer;
  std::string optimizer_name;  // the optimizer in use (ModelOptions::optimizer resolved)
  // Sync replicas only: the wrapper (its chief ops) and the train op's result, the global step
  // this worker goes on from.
  std::shared_ptr<train::SyncReplicasOptimizer> sync;
  Output step_after;
  // ModelOptions::loss_scale: the dynamic loss scale around `optimizer` (its variables give the
  // scale and the skipped steps).
  std::shared_ptr<train::LossScaleOptimizer> loss_scale;
};

Model BuildMlpSeed000(const Scope& root, const ModelOptions& options);
Model BuildMnistMlp(const Scope& root, const ModelOptions& options);
// The CNNs (models/cnn_models.cc) read [?, h * w * c] inputs as [?, h, w, c] images
// (ModelOptions::image_shape, MNIST's [28, 28, 1] by default) into num_classes logits:
// lenet: conv 5x5x32 - max pool - conv 5x5x64 - max pool - dense 512 - dropout - dense 10;
// mobilenet_v2_small: MobileNetV2 inverted residual blocks (depthwise convs, batch norm, ReLU6)
//   sized for 28x28; cnn_seed004: seed 004's MobileNetV2 (Keras's block table) at width 0.35.
// Adam by default (learning rate 1e-3, times 0.9 after each epoch of steps_per_epoch steps);
// batch-norm moving averages run with every training step (the "update_ops"
// of tower 0 when replicated); `accuracy` runs the network in inference mode.
Model BuildLeNet(const Scope& root, const ModelOptions& options);
Model BuildMobileNetV2Small(const Scope& root, const ModelOptions& options);
Model BuildCnnSeed004(const Scope& root, const ModelOptions& options);
// mobilenet_v2: Keras's MobileNetV2 (tf.keras.applications.MobileNetV2(weights=None)) at
// ModelOptions::width on ModelOptions::image_shape with num_classes outputs: stride-2 stem,
// the whole block table, 1280 channels before the classifier (more above width 1). For
// photos: pf-train --data DIR --data-format images --image-size 224.
Model BuildMobileNetV2(const Scope& root, const ModelOptions& options);
// lstm_seq: MNIST read row by row (28 steps of 28 pixels) by two LSTM layers of 128 units
// ("lstm_0", "lstm_1", stacked in one DynamicRnn loop; `--place "lstm_0=/cpu:0,lstm_1=/cpu:1"`
// puts each on a device and the loop spans both, seed 003's model parallelism) and a dense
// layer on the last step's output.
Model BuildLstmSeq(const Scope& root, const ModelOptions& options);
// The model table: every model pf-train, pf-bench and the tests know, with its defaults. The
// flags' help, --model's choices and the classifier test come from here.
struct ModelSpec {
  const char* name;
  Model (*build)(const Scope& root, const ModelOptions& options);
  bool classifier;           // classifies MNIST-style images (and needs a data set)
  int64_t batch;             // examples per step when --batch is not given
  const char* optimizer;     // when ModelOptions::optimizer is ""
  double learning_rate;      // base rate with the default optimizer, and any but sgd
  double sgd_learning_rate;  // base rate with sgd
  // The base learning rate when none is given, for `optimizer` ("": the default one).
  double LearningRate(const std::string& optimizer) const;
};
const std::vector<ModelSpec>& Models();
// nullptr for a name not in the table.
const ModelSpec* FindModel(const std::string& name);
// "mlp_seed000, mnist_mlp, ...": for messages.
std::string ModelNames();
// By name; throws pf::Error for a name not in the table.
Model BuildModel(const std::string& name, const Scope& root, const ModelOptions& options);
std::unique_ptr<train::Optimizer> MakeOptimizer(const std::string& name,
                                                train::Hyper learning_rate);
// The optimizer and base learning rate `model` trains with under `options`.
std::string OptimizerOf(const std::string& model, const ModelOptions& options);
double LearningRateOf(const std::string& model, const ModelOptions& options);
// Whether `name` is a classifier in the table (false for unknown names).
bool IsClassifier(const std::string& name);

// Shared by the model builders: the loss and gradients of `fn`, built once in `root` or once per
// tower (fills loss, output and tower_devices), and the optimizer's update of them (wrapped for
// sync replicas when asked; keeps the optimizer in the model).
std::vector<train::GradAndVar> LossAndGradients(const Scope& root, const ModelOptions& o,
                                                const std::vector<Output>& inputs,
                                                const train::TowerFn& fn, train::Optimizer& opt,
                                                Model* m);
Operation ApplyUpdate(const Scope& root, const ModelOptions& o,
                      std::unique_ptr<train::Optimizer> opt,
                      const std::vector<train::GradAndVar>& grads, Model* m);

// The seed's synthetic batch: inputs uniform in [0, 1), targets = 2 * inputs + 1.
void SeedBatch(int64_t batch, uint32_t seed, Tensor* inputs, Tensor* targets);

}  // namespace pf::models
