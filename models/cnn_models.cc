// The convolutional models of pf-train (issue 14): LeNet-style, a small MobileNetV2 for 28x28
// inputs, and seed article 004's MobileNetV2 (Keras's block table, width 0.35).
#include <cmath>
#include <functional>
#include <regex>

#include "placeflow/models/models.h"
#include "placeflow/train/rnn.h"

namespace pf::models {
namespace {

// Builds the network on [N, h, w, c] images (ModelOptions::image_shape) and returns logits
// [N, num_classes]. `training` selects
// batch statistics and dropout; called twice (training under the towers, inference for the
// accuracy with the variables reused).
using NetFn = std::function<Output(const Scope& s, Output images, bool training)>;

Model BuildCnn(const std::string& name, const Scope& root, const ModelOptions& o,
               const NetFn& net) {
  Model m;
  m.name = name;
  m.classifier = true;
  if (o.image_shape.size() != 3 || o.num_classes < 2) {
    throw Error(errors::InvalidArgument("Model ", name, ": image_shape must be [h, w, c] and ",
                                        "num_classes at least 2"));
  }
  const int64_t features = o.image_shape[0] * o.image_shape[1] * o.image_shape[2];
  m.input = o.input.node ? o.input
                         : ops::Placeholder(root.WithOpName("x-input"), DT_FLOAT, {-1, features});
  m.target =
      o.target.node ? o.target : ops::Placeholder(root.WithOpName("y-input"), DT_INT32, {-1});
  const std::vector<int32_t> dims = {-1, static_cast<int32_t>(o.image_shape[0]),
                                     static_cast<int32_t>(o.image_shape[1]),
                                     static_cast<int32_t>(o.image_shape[2])};
  auto images = [dims](const Scope& s, Output x) { return ops::Reshape(s, x, dims); };
  auto tower = [&](const Scope& s, const std::vector<Output>& in) {
    Output logits = net(s, images(s, in[0]), /*training=*/true);
    Output xent = ops::Mean(s.WithOpName("cross_entropy_mean"),
                            ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, in[1]).first);
    return train::TowerOutputs{xent, {logits}};
  };
  m.global_step = train::GetOrCreateGlobalStep(root);
  m.optimizer_name = OptimizerOf(name, o);
  Output lr = train::ExponentialDecay(root, LearningRateOf(name, o), m.global_step,
                                      static_cast<double>(o.steps_per_epoch), 0.9, true);
  m.learning_rate = lr;
  auto opt = MakeOptimizer(m.optimizer_name, lr);
  const size_t updates_before = root.graph()->GetCollection(kUpdateOps).size();
  auto grads = LossAndGradients(root, o, {m.input, m.target}, tower, *opt, &m);
  if (!o.freeze.empty()) {
    const std::regex frozen(o.freeze);
    std::erase_if(grads, [&](const train::GradAndVar& gv) {
      return std::regex_search(gv.second.name(), frozen);
    });
  }
  // The batch-norm moving averages (tower 0's when replicated) run with every training step.
  std::vector<Operation> deps = {ApplyUpdate(root, o, std::move(opt), grads, &m)};
  const std::vector<Output>& updates = root.graph()->GetCollection(kUpdateOps);
  for (size_t i = updates_before; i < updates.size(); ++i) deps.emplace_back(updates[i].node);
  m.train_op = ops::NoOp(root.WithOpName("train").WithControlDependencies(deps));
  // Evaluation: the same variables in inference mode (moving statistics, no dropout).
  Scope eval = root.NewSubScope("eval").WithReuse(Reuse::kReuse);
  m.accuracy = train::Accuracy(eval, net(eval, images(eval, m.input), false), m.target);
  return m;
}

// What the MobileNetV2 builders pass down: training or inference, batch norm's settings.
struct Mode {
  bool training;
  layers::BatchNormOptions bn;
};

Output ConvBn(const Scope& s, const std::string& name, Output x, int64_t filters, int32_t kernel,
              int32_t stride, const Mode& mode, bool relu6, int64_t seed) {
  layers::Conv2DOptions c;
  c.filters = filters;
  c.kernel_size = {kernel, kernel};
  c.strides = {stride, stride};
  c.use_bias = false;
  c.seed = seed;
  Output h = layers::BatchNormalization(s, name + "_bn", layers::Conv2D(s, name, x, c),
                                        mode.training, mode.bn);
  return relu6 ? ops::Relu6(s, h) : h;
}

// MobileNetV2's inverted residual block: 1x1 expansion, 3x3 depthwise, linear 1x1 projection,
// and the shortcut when the shape is kept.
Output InvertedResidual(const Scope& s, const std::string& name, Output x, int64_t expansion,
                        int64_t out_c, int32_t stride, const Mode& mode, int64_t seed) {
  const int64_t in_c = x.shape().dim(3);
  Output h = x;
  if (expansion != 1) h = ConvBn(s, name + "_expand", h, in_c * expansion, 1, 1, mode, true, seed);
  layers::DepthwiseConv2DOptions d;
  d.strides = {stride, stride};
  d.use_bias = false;
  d.seed = seed + 1;
  h = ops::Relu6(s,
                 layers::BatchNormalization(s, name + "_depthwise_bn",
                                            layers::DepthwiseConv2D(s, name + "_depthwise", h, d),
                                            mode.training, mode.bn));
  h = ConvBn(s, name + "_project", h, out_c, 1, 1, mode, false, seed + 2);
  if (stride == 1 && in_c == out_c) h = ops::Add(s.WithOpName(name + "_add"), x, h);
  return h;
}

// Keras's _make_divisible: channels rounded to a multiple of 8, never below 90% of the request.
int64_t Divisible(double v) {
  int64_t r = std::max<int64_t>(8, static_cast<int64_t>(v + 4) / 8 * 8);
  return r < 0.9 * v ? r + 8 : r;
}

struct BlockSpec {
  int64_t t, c, n;
  int32_t s;
};

Output MobileNetV2(const Scope& s, Output x, const Mode& mode, double alpha, int32_t stem_stride,
                   const std::vector<BlockSpec>& table, int64_t last_c, int64_t classes,
                   int64_t seed) {
  Output h = ConvBn(s, "Conv1", x, Divisible(32 * alpha), 3, stem_stride, mode, true, seed);
  int block = 0;
  for (const BlockSpec& b : table) {
    for (int64_t i = 0; i < b.n; ++i, ++block) {
      h = InvertedResidual(s, "block_" + std::to_string(block), h, b.t, Divisible(b.c * alpha),
                           i == 0 ? b.s : 1, mode, seed + 10 * (block + 1));
    }
  }
  h = ConvBn(s, "Conv_1", h, last_c, 1, 1, mode, true, seed + 7);
  layers::DenseOptions d;
  d.units = classes;
  d.seed = seed + 9;
  return layers::Dense(s, "Logits", layers::GlobalAveragePooling2D(s, h), d);
}

}  // namespace

// conv 5x5x32 - pool - conv 5x5x64 - pool - dense 512 - dropout 0.4 - dense 10.
Model BuildLeNet(const Scope& root, const ModelOptions& o) {
  const int64_t seed = o.seed * 1000;
  const int64_t classes = o.num_classes;
  return BuildCnn("lenet", root, o, [seed, classes](const Scope& s, Output x, bool training) {
    layers::Conv2DOptions c1{.filters = 32, .kernel_size = {5, 5}, .activation = "relu"};
    c1.seed = seed + 1;
    layers::Conv2DOptions c2 = c1;
    c2.filters = 64;
    c2.seed = seed + 2;
    Output h = layers::MaxPooling2D(s, layers::Conv2D(s, "conv1", x, c1));
    h = layers::MaxPooling2D(s, layers::Conv2D(s, "conv2", h, c2));
    layers::DenseOptions fc{.units = 512, .activation = "relu"};
    fc.seed = seed + 3;
    h = layers::Dropout(s, layers::Dense(s, "fc1", layers::Flatten(s, h), fc), 0.4f, training,
                        seed + 4);
    layers::DenseOptions out{.units = classes};
    out.seed = seed + 5;
    return layers::Dense(s, "logits", h, out);
  });
}

// 28x28 -> 28 (stem, stride 1) -> 14 -> 7: three stages of inverted residuals.
Model BuildMobileNetV2Small(const Scope& root, const ModelOptions& o) {
  const int64_t seed = o.seed * 1000;
  const float momentum = o.batch_norm_momentum;
  return BuildCnn("mobilenet_v2_small", root, o, [=](const Scope& s, Output x, bool training) {
    return MobileNetV2(s, x, {training, {.momentum = momentum}}, 1.0, 1,
                       {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 2, 1}}, 256,
                       o.num_classes, seed);
  });
}

// Keras's MobileNetV2 block table (t: expansion, c: channels, n: repeats, s: first stride).
const std::vector<BlockSpec>& KerasBlocks() {
  static const std::vector<BlockSpec> table = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2},
                                               {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2},
                                               {6, 320, 1, 1}};
  return table;
}

// Keras's MobileNetV2 (seed 004: tf.keras.applications.MobileNetV2(weights=None)) with its
// whole block table, at width 0.35, on 28x28 inputs (224x224 does not train on two cores):
// 28 -> 14 -> 7 -> 4 -> 2 -> 1.
Model BuildCnnSeed004(const Scope& root, const ModelOptions& o) {
  const int64_t seed = o.seed * 1000;
  const float momentum = o.batch_norm_momentum;
  return BuildCnn("cnn_seed004", root, o, [=](const Scope& s, Output x, bool training) {
    return MobileNetV2(s, x, {training, {.momentum = momentum}}, 0.35, 2, KerasBlocks(), 1280,
                       o.num_classes, seed);
  });
}

Model BuildMobileNetV2(const Scope& root, const ModelOptions& o) {
  if (o.width <= 0) throw Error(errors::InvalidArgument("mobilenet_v2: width must be positive"));
  const int64_t seed = o.seed * 1000;
  const float momentum = o.batch_norm_momentum;
  const int64_t last = o.width > 1.0 ? Divisible(1280 * o.width) : 1280;
  return BuildCnn("mobilenet_v2", root, o, [=](const Scope& s, Output x, bool training) {
    return MobileNetV2(s, x, {training, {.momentum = momentum}}, o.width, 2, KerasBlocks(), last,
                       o.num_classes, seed);
  });
}

// Two LSTM layers over the image's rows (BuildCnn's [N, h, w, c] images as h steps of w * c).
Model BuildLstmSeq(const Scope& root, const ModelOptions& o) {
  const int64_t seed = o.seed * 1000;
  // The image's rows are the steps: h steps of w * c values.
  const auto rows = static_cast<int32_t>(o.image_shape.at(0));
  const auto row = static_cast<int32_t>(o.image_shape.at(1) * o.image_shape.at(2));
  const int64_t classes = o.num_classes;
  return BuildCnn("lstm_seq", root, o, [=](const Scope& s, Output x, bool) {
    Output h = ops::Reshape(s, x, {-1, rows, row});
    // Two LSTM layers stacked in one loop (tf.nn.rnn_cell.MultiRNNCell): with "--place
    // lstm_0=/cpu:0,lstm_1=/cpu:1" the loop spans both devices and layer 1 runs step t while
    // layer 0 runs step t+1.
    layers::LSTMCell lstm0("lstm_0", 128, 1.f, seed), lstm1("lstm_1", 128, 1.f, seed + 1);
    layers::MultiRnnCell cell({&lstm0, &lstm1});
    h = layers::DynamicRnn(s, cell, h).outputs;
    // The last step's output: [N, rows, 128] -> [N, 128].
    h = ops::Reshape(s, ops::Slice(s, h, {0, rows - 1, 0}, {-1, 1, 128}), {-1, 128});
    layers::DenseOptions out{.units = classes};
    out.seed = seed + 5;
    return layers::Dense(s, "logits", h, out);
  });
}

}  // namespace pf::models
