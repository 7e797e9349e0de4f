#include "tools/models.h"

#include <random>

namespace pf::models {
namespace {

Initializer WeightInit(const ModelOptions& o, int64_t salt) {
  if (o.init == "seed") return init::TruncatedNormal(0, 1, o.seed * 1000 + salt);
  return init::GlorotUniform(o.seed * 1000 + salt);
}

// relu(x @ w + b) with variables "<scope>/w" and "<scope>/b".
Output Dense(const Scope& root, const std::string& name, Output x, int64_t units, const ModelOptions& o, int64_t salt,
             bool relu, const Shape& bias_shape) {
  Scope vs = root.WithVariableScope(name);
  Variable w = GetVariable(vs, "w", {x.shape().dim(1), units}, WeightInit(o, salt));
  Variable b = GetVariable(vs, "b", bias_shape, init::Zeros());
  Output y = bias_shape.rank() == 0 ? ops::Add(vs, ops::MatMul(vs, x, w.value()), b.value())
                                    : ops::BiasAdd(vs, ops::MatMul(vs, x, w.value()), b.value());
  return relu ? ops::Relu(vs, y) : y;
}

}  // namespace

Model BuildMlpSeed000(const Scope& root, const ModelOptions& o) {
  Model m;
  m.name = "mlp_seed000";
  m.input = ops::Placeholder(root.WithOpName("input"), DT_FLOAT, {-1, 600});
  m.target = ops::Placeholder(root.WithOpName("target"), DT_FLOAT, {-1, 600});
  Output h = m.input;
  const int64_t dims[] = {512, 128, 128};
  for (int i = 0; i < 3; ++i) h = Dense(root, "affine" + std::to_string(i), h, dims[i], o, i, /*relu=*/true, Shape{});
  m.output = Dense(root, "affine_last", h, 1, o, 9, /*relu=*/false, Shape{});
  m.loss = ops::Mean(root.WithOpName("loss"), ops::Square(root, ops::Sub(root, m.output, m.target)));
  root.graph()->AddToCollection(kLosses, m.loss);
  return m;
}

Model BuildMnistMlp(const Scope& root, const ModelOptions& o) {
  Model m;
  m.name = "mnist_mlp";
  m.classifier = true;
  m.input = ops::Placeholder(root.WithOpName("x-input"), DT_FLOAT, {-1, 784});
  m.target = ops::Placeholder(root.WithOpName("y-input"), DT_INT32, {-1});
  Output h = Dense(root, "layer1", m.input, 500, o, 1, /*relu=*/true, Shape{500});
  m.output = Dense(root, "layer2", h, 10, o, 2, /*relu=*/false, Shape{10});
  // Cross-entropy from log-softmax (numerically stable) and one-hot labels.
  Output onehot = ops::OneHot(root, m.target, 10);
  Output xent = ops::Neg(root, ops::Sum(root, ops::Mul(root, onehot, ops::LogSoftmax(root, m.output)), {1}));
  Output data_loss = ops::Mean(root.WithOpName("cross_entropy_mean"), xent);
  Output l2 = ops::Const(root, static_cast<float>(o.l2));
  Output reg = ops::Mul(root, l2,
                        ops::Add(root, ops::Sum(root, ops::Square(root, FindVariable(root.graph(), "layer1/w").value())),
                                 ops::Sum(root, ops::Square(root, FindVariable(root.graph(), "layer2/w").value()))));
  m.loss = ops::Add(root.WithOpName("loss"), data_loss, reg);
  root.graph()->AddToCollection(kLosses, m.loss);
  Output correct = ops::Equal(root, ops::ArgMax(root, m.output, 1, DT_INT32), m.target);
  m.accuracy = ops::Mean(root.WithOpName("accuracy"), ops::Cast(root, correct, DT_FLOAT));
  return m;
}

Model BuildModel(const std::string& name, const Scope& root, const ModelOptions& options) {
  if (name == "mlp_seed000") return BuildMlpSeed000(root, options);
  if (name == "mnist_mlp") return BuildMnistMlp(root, options);
  throw Error(errors::InvalidArgument("Unknown model '", name, "'; known models: mlp_seed000, mnist_mlp"));
}

void SeedBatch(int64_t batch, uint32_t seed, Tensor* inputs, Tensor* targets) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  *inputs = Tensor(DT_FLOAT, {batch, 600});
  *targets = Tensor(DT_FLOAT, {batch, 600});
  for (int64_t i = 0; i < inputs->num_elements(); ++i) {
    float v = u(rng);
    inputs->data<float>()[i] = v;
    targets->data<float>()[i] = 2 * v + 1;
  }
}

}  // namespace pf::models
