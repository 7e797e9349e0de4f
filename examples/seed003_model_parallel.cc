// Seed 003: model parallelism, one network split across devices instead of replicated. The
// article's picture is a stacked LSTM with each layer on its own GPU; here a two-layer LSTM,
// unrolled over a fixed sequence length, puts layer 1 on the first device and layer 2 (and the
// output) on the second. Every step then carries layer 1's outputs forward, and layer 2's
// gradients back, across the device boundary (Send/Recv pairs the partitioner inserts; GPUs
// without peer access copy through the host).
//
//   build/examples/seed003_model_parallel [steps]     # default 300
//
// Devices: /gpu:0 and /gpu:1 when there are two GPUs, else /cpu:0 and /cpu:1. The task: read a
// sequence of numbers and output their mean. Prints the placement per device and the loss, and
// exits 1 if the loss did not go down.
#include <placeflow/devices/gpu_probe.h>
#include <placeflow/placeflow.h>

#include <cstdlib>
#include <map>
#include <random>

namespace {

constexpr int64_t kBatch = 64, kSteps = 10, kUnits = 32;

struct LstmLayer {
  pf::Variable w, b;
};

// One LSTM layer's variables: [input + units, 4 units] and a bias (forget gate at +1).
LstmLayer MakeLayer(const pf::Scope& s, const std::string& name, int64_t input, int seed) {
  pf::Scope vs = s.WithVariableScope(name);
  pf::Variable w =
      pf::GetVariable(vs, "kernel", {input + kUnits, 4 * kUnits}, pf::init::GlorotUniform(seed));
  pf::Variable b = pf::GetVariable(vs, "bias", {4 * kUnits}, pf::init::Zeros());
  return {w, b};
}

// One time step of the cell: gates i, g, f, o as in tf.nn.rnn_cell.LSTMCell.
void Cell(const pf::Scope& s, const LstmLayer& l, pf::Output x, pf::Output* h, pf::Output* c) {
  pf::Output z = pf::ops::Add(
      s, pf::ops::MatMul(s, pf::ops::Concat(s, {x, *h}, /*axis=*/1), l.w.value()), l.b.value());
  std::vector<pf::Output> gate = pf::ops::Split(s, z, /*axis=*/1, 4);
  pf::Output forget = pf::ops::Sigmoid(s, pf::ops::Add(s, gate[2], pf::ops::Const(s, 1.f)));
  *c = pf::ops::Add(s, pf::ops::Mul(s, forget, *c),
                    pf::ops::Mul(s, pf::ops::Sigmoid(s, gate[0]), pf::ops::Tanh(s, gate[1])));
  *h = pf::ops::Mul(s, pf::ops::Sigmoid(s, gate[3]), pf::ops::Tanh(s, *c));
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 300;
  const bool gpus = pf::CudaDeviceCount() >= 2;
  const std::string dev0 = gpus ? "/gpu:0" : "/cpu:0", dev1 = gpus ? "/gpu:1" : "/cpu:1";

  pf::Graph g;
  g.set_seed(3);
  pf::Scope root = pf::Scope::Root(&g);
  pf::Output x = pf::ops::Placeholder(root.WithOpName("x"), pf::DT_FLOAT, {kBatch, kSteps});
  pf::Output y = pf::ops::Placeholder(root.WithOpName("y"), pf::DT_FLOAT, {kBatch, 1});
  pf::Scope s0 = root.NewSubScope("layer1").WithDevice(dev0);
  pf::Scope s1 = root.NewSubScope("layer2").WithDevice(dev1);
  LstmLayer l1 = MakeLayer(s0, "lstm1", 1, 1), l2 = MakeLayer(s1, "lstm2", kUnits, 2);
  pf::Output zeros = pf::ops::Const(root, pf::Tensor(pf::DT_FLOAT, {kBatch, kUnits}));
  pf::Output h1 = zeros, c1 = zeros, h2 = zeros, c2 = zeros;
  std::vector<pf::Output> inputs = pf::ops::Split(s0, x, /*axis=*/1, kSteps);
  for (int64_t t = 0; t < kSteps; ++t) {
    Cell(s0, l1, inputs[t], &h1, &c1);  // on the first device
    Cell(s1, l2, h1, &h2, &c2);         // on the second: h1 crosses devices every time step
  }
  pf::Variable w_out =
      pf::GetVariable(s1.WithVariableScope("out"), "w", {kUnits, 1}, pf::init::GlorotUniform(4));
  pf::Output pred = pf::ops::MatMul(s1, h2, w_out.value());
  pf::Output loss = pf::ops::MeanSquaredError(s1.WithOpName("loss"), pred, y);
  pf::train::Adam opt(0.01);
  pf::Operation train_op = opt.Minimize(root, loss);

  pf::SessionOptions opts;
  opts.allow_soft_placement = true;
  if (!gpus) opts.device_count["CPU"] = 2;
  pf::Session sess(g, opts);
  sess.Run({}, {}, {pf::GlobalVariablesInitializer(root)});

  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  pf::Tensor xs(pf::DT_FLOAT, {kBatch, kSteps}), ys(pf::DT_FLOAT, {kBatch, 1});
  double first = 0, last = 0;
  constexpr int kWindow = 5;  // losses averaged over the first and the last steps
  for (int step = 0; step < steps; ++step) {
    for (int64_t i = 0; i < kBatch; ++i) {
      float sum = 0;
      for (int64_t t = 0; t < kSteps; ++t) sum += xs.data<float>()[i * kSteps + t] = u(rng);
      ys.data<float>()[i] = sum / kSteps;
    }
    const float l = sess.Run({{x, xs}, {y, ys}}, {loss}, {train_op})[0].scalar<float>();
    if (step < kWindow) first += l / kWindow;
    if (step >= steps - kWindow) last += l / kWindow;
    if (step % 50 == 0 || step == steps - 1) fmt::print("step {:4}  loss {:.5f}\n", step, l);
  }
  std::map<std::string, int> per_device;
  for (const auto& [node, device] : sess.DevicePlacement()) ++per_device[device];
  for (const auto& [device, n] : per_device) fmt::print("{:5} nodes on {}\n", n, device);
  fmt::print("mean loss of the first {} steps {:.5f}, of the last {} {:.5f}\n", kWindow, first,
             kWindow, last);
  if (per_device.size() < 2 || !(last < first)) {
    fmt::print(
        stderr, "seed003_model_parallel: {}\n",
        per_device.size() < 2 ? "the model did not span two devices" : "the loss did not go down");
    return 1;
  }
  return 0;
}
