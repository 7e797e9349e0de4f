// The models pf-train and pf-bench run, with their training ops.
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

#include <placeflow/placeflow.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pf::models {

struct ModelOptions {
  // "glorot" (default, trains) or "seed" (the article's truncated_normal(0, 1), which diverges).
  std::string init = "glorot";
  int64_t seed = 1;
  // sgd | momentum | adam | rmsprop | adagrad; learning_rate 0 picks the model's default.
  std::string optimizer = "sgd";
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
};

struct Model {
  std::string name;
  Output input;     // float [?, features]
  Output target;    // mlp_seed000: float [?, 600]; mnist_mlp: int32 labels [?]
  Output output;    // predictions [?, 1] or logits [?, 10] (concatenated over towers)
  Output loss;      // scalar: data loss plus regularisation
  Output accuracy;  // scalar fraction (classifiers), with moving-average weights
  Operation train_op;
  Variable global_step;
  bool classifier = false;
  std::vector<std::string> tower_devices;  // empty for the plain graph
  std::shared_ptr<train::Optimizer> optimizer;
  // Sync replicas only: the wrapper (its chief ops) and the train op's result, the global step
  // this worker goes on from.
  std::shared_ptr<train::SyncReplicasOptimizer> sync;
  Output step_after;
};

Model BuildMlpSeed000(const Scope& root, const ModelOptions& options);
Model BuildMnistMlp(const Scope& root, const ModelOptions& options);
// By name: "mlp_seed000" or "mnist_mlp"; throws pf::Error for others.
Model BuildModel(const std::string& name, const Scope& root, const ModelOptions& options);
std::unique_ptr<train::Optimizer> MakeOptimizer(const std::string& name,
                                                train::Hyper learning_rate);

// The seed's synthetic batch: inputs uniform in [0, 1), targets = 2 * inputs + 1.
void SeedBatch(int64_t batch, uint32_t seed, Tensor* inputs, Tensor* targets);

}  // namespace pf::models
