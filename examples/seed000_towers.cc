// Seed 000: data-parallel towers on one machine, written the way the TensorFlow 1.x article
// writes them: variables pinned to /cpu:0, one tower per device under a `tower_i` name scope
// with variable reuse, the batch split across the towers, the towers' gradients averaged
// (expand_dims -> concat -> reduce_mean, the article's average_tower_grads) and applied once.
//
// The article's network: input 2000x600, hidden layers 512, 128, 128, one output, SGD. It times
// one device against two and finds that for a net this small the second device does not pay.
//
//   build/examples/seed000_towers [steps] [devices]     # defaults: 200 steps, 2 devices
//
// Devices are /gpu:i when the machine has GPUs, else /cpu:i (logical CPU devices). Prints the
// seconds per tower count and exits 1 if training did not lower the loss.
#include <placeflow/devices/gpu_probe.h>
#include <placeflow/placeflow.h>

#include <chrono>
#include <cstdlib>
#include <random>

namespace {

constexpr int64_t kBatch = 2000, kInput = 600;

// The article's inference(): three ReLU layers and a linear output. Variables are made on
// /cpu:0 (the article's _variable_on_cpu) by tower 0 and reused by the others.
pf::Output Inference(const pf::Scope& s, pf::Output x, pf::Reuse reuse) {
  const int64_t dims[] = {kInput, 512, 128, 128, 1};
  pf::Output h = x;
  for (int i = 0; i < 4; ++i) {
    pf::Scope layer =
        s.WithVariableScope(i < 3 ? "affine" + std::to_string(i) : "affine_last", reuse)
            .WithDevice("/cpu:0");
    pf::Variable w = pf::GetVariable(layer, "w", {dims[i], dims[i + 1]},
                                     pf::init::TruncatedNormal(0, 0.05, /*seed=*/i + 1));
    pf::Variable b = pf::GetVariable(layer, "b", {dims[i + 1]}, pf::init::Zeros());
    h = pf::ops::Add(s, pf::ops::MatMul(s, h, w.value()), b.value());
    if (i < 3) h = pf::ops::Relu(s, h);
  }
  return h;
}

// average_tower_grads: for each variable, stack the towers' gradients and take their mean.
std::vector<pf::train::GradAndVar> AverageTowerGrads(
    const pf::Scope& s, const std::vector<std::vector<pf::train::GradAndVar>>& towers) {
  std::vector<pf::train::GradAndVar> averaged;
  for (size_t v = 0; v < towers[0].size(); ++v) {
    std::vector<pf::Output> grads;
    for (const auto& tower : towers) grads.push_back(pf::ops::ExpandDims(s, tower[v].first, 0));
    pf::Output stacked = pf::ops::Concat(s, grads, /*axis=*/0);
    averaged.push_back({pf::ops::Mean(s, stacked, {0}), towers[0][v].second});
  }
  return averaged;
}

// Builds the towers on `devices`, trains `steps` steps; returns seconds and the losses.
double Train(const std::vector<std::string>& devices, int steps, bool gpus, float* first_loss,
             float* last_loss) {
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  pf::Output x = pf::ops::Placeholder(root.WithOpName("input"), pf::DT_FLOAT, {kBatch, kInput});
  pf::Output y = pf::ops::Placeholder(root.WithOpName("target"), pf::DT_FLOAT, {kBatch, kInput});
  pf::train::GradientDescent opt(0.01);
  const int n = static_cast<int>(devices.size());
  std::vector<pf::Output> xs = pf::ops::Split(root, x, /*axis=*/0, n);
  std::vector<pf::Output> ys = pf::ops::Split(root, y, /*axis=*/0, n);
  std::vector<std::vector<pf::train::GradAndVar>> tower_grads;
  std::vector<pf::Output> losses;
  for (int i = 0; i < n; ++i) {
    // with tf.device('/gpu:i'), tf.name_scope('tower_i'), variables on the CPU, reused after 0.
    pf::Scope tower = root.NewSubScope("tower_" + std::to_string(i)).WithDevice(devices[i]);
    pf::Output pred = Inference(tower, xs[i], i == 0 ? pf::Reuse::kCreate : pf::Reuse::kReuse);
    pf::Output loss = pf::ops::MeanSquaredError(tower, pred, ys[i]);
    losses.push_back(loss);
    tower_grads.push_back(opt.ComputeGradients(tower, loss));
  }
  pf::Scope cpu = root.WithDevice("/cpu:0");
  pf::Operation train_op = opt.ApplyGradients(cpu, AverageTowerGrads(cpu, tower_grads));
  pf::Output loss = pf::ops::Mul(cpu, pf::ops::AddN(cpu, losses), pf::ops::Const(cpu, 1.f / n));

  pf::SessionOptions opts;
  opts.allow_soft_placement = true;
  if (!gpus) opts.device_count["CPU"] = n;
  pf::Session sess(g, opts);
  sess.Run({}, {}, {pf::GlobalVariablesInitializer(root)});

  // The article's data: inputs uniform in [0, 1), targets 2x + 1.
  pf::Tensor inputs(pf::DT_FLOAT, {kBatch, kInput}), targets(pf::DT_FLOAT, {kBatch, kInput});
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < inputs.num_elements(); ++i) {
    inputs.data<float>()[i] = u(rng);
    targets.data<float>()[i] = 2 * inputs.data<float>()[i] + 1;
  }
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    std::vector<pf::Tensor> out = sess.Run({{x, inputs}, {y, targets}}, {loss}, {train_op});
    if (step == 0) *first_loss = out[0].scalar<float>();
    *last_loss = out[0].scalar<float>();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  const int max_devices = argc > 2 ? std::atoi(argv[2]) : 2;
  const bool gpus = pf::CudaDeviceCount() > 0;
  fmt::print("towers  seconds  first loss  last loss   ({} steps, batch {}, on {})\n", steps,
             kBatch, gpus ? "GPUs" : "CPU devices");
  bool learned = true;
  for (int n = 1; n <= max_devices; ++n) {
    std::vector<std::string> devices;
    for (int i = 0; i < n; ++i) devices.push_back(fmt::format("/{}:{}", gpus ? "gpu" : "cpu", i));
    float first = 0, last = 0;
    const double seconds = Train(devices, steps, gpus, &first, &last);
    fmt::print("{:6}  {:7.2f}  {:10.4f}  {:9.4f}\n", n, seconds, first, last);
    learned = learned && last < first;
  }
  if (!learned) fmt::print(stderr, "seed000_towers: the loss did not go down\n");
  return learned ? 0 : 1;
}
