// The models pf-train and pf-bench run.
//
//   pf::models::Model m = pf::models::BuildMlpSeed000(root, {});
//   sess.Run({{m.input, x}, {m.target, t}}, {m.loss});
//
// mlp_seed000: seed article 000's regression net, 600 -> 512 -> 128 -> 128 -> 1 with ReLU,
//   per-layer variables "affine<i>/w", scalar biases "affine<i>/b", last layer "affine_last",
//   loss mean((y - target)^2) where target is [batch, 600] and y [batch, 1] broadcasts.
// mnist_mlp: seed article 002's 784 -> 500 -> 10 classifier (layer1/layer2), softmax
//   cross-entropy loss plus an L2 term, and accuracy.
#pragma once

#include <string>

#include "executor/placeflow.h"

namespace pf::models {

struct ModelOptions {
  // "glorot" (default, trains) or "seed" (the article's truncated_normal(0, 1), which diverges).
  std::string init = "glorot";
  int64_t seed = 1;
  double l2 = 1e-4;
};

struct Model {
  std::string name;
  Output input;     // float [?, features]
  Output target;    // mlp_seed000: float [?, 600]; mnist_mlp: int32 labels [?]
  Output output;    // predictions: [?, 1] or logits [?, 10]
  Output loss;      // scalar
  Output accuracy;  // scalar fraction (classifiers only)
  bool classifier = false;
};

Model BuildMlpSeed000(const Scope& root, const ModelOptions& options);
Model BuildMnistMlp(const Scope& root, const ModelOptions& options);
// By name: "mlp_seed000" or "mnist_mlp"; throws pf::Error for others.
Model BuildModel(const std::string& name, const Scope& root, const ModelOptions& options);

// The seed's synthetic batch: inputs uniform in [0, 1), targets = 2 * inputs + 1.
void SeedBatch(int64_t batch, uint32_t seed, Tensor* inputs, Tensor* targets);

}  // namespace pf::models
