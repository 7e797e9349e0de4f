#include "tools/rnn_bench.h"

#include <placeflow/placeflow.h>

#include <cstdio>

#include "tools/bench_util.h"

namespace pf::bench {

namespace {

// ms per step of the figure's graph, the LSTM fused (BlockLSTM) or as a while loop.
double LstmStepMs(bool fused) {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {64, 28, 28});
  layers::LSTMCell cell("lstm", 128, 1.f, /*seed=*/1);
  layers::RnnOutputs r = layers::DynamicRnn(root, cell, x, {.fused = fused});
  Output loss = ops::Mean(root, ops::Square(root, r.outputs));
  std::vector<Output> vars;
  for (const Variable& v : GlobalVariables(&g)) vars.push_back(v.value());
  std::vector<Output> grads = Gradients(root, {loss}, vars);
  Session sess(g, OnDevice(false));
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  Tensor batch(DT_FLOAT, {64, 28, 28});
  for (int64_t i = 0; i < batch.num_elements(); ++i)
    batch.data<float>()[i] = static_cast<float>((i * 7919) % 256) / 255.f;
  sess.Run({{x, batch}}, grads);  // prepare once
  const double s = TimeMedian([&] {
    for (int i = 0; i < 10; ++i) sess.Run({{x, batch}}, grads);
  });
  return s / 10 * 1e3;
}

}  // namespace

void LstmStep() {
  const double fused = LstmStepMs(true), loop = LstmStepMs(false);
  std::printf("lstm_step ms=%.3f ms_loop=%.3f units=128 batch=64 steps=28 repeats=%d\n", fused,
              loop, kRepeats);
}

}  // namespace pf::bench
