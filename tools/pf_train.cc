// pf-train: builds a model, places it, and runs it step by step, printing progress.
//
//   pf-train --model mlp_seed000 --steps 20 --log-device-placement
//   pf-train --model mnist_mlp --data /usr/share/datasets/fashion-mnist --epochs 1
//
// Gradients arrive with the training issue; until then every step is a forward pass
// (the loss is computed, no variable changes) and the program says so.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <string>

#include "tools/mnist_data.h"
#include "tools/models.h"

namespace {

struct Args {
  std::string model = "mlp_seed000";
  int64_t steps = 20;
  int64_t epochs = 1;
  int64_t batch = 0;  // 0: the model's default
  double lr = 0.01;
  bool log_placement = false;
  int64_t seed = 1;
  std::string data;
  std::string init = "glorot";
  int64_t print_every = 0;
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  int threads = 0;
};

[[noreturn]] void Usage(const std::string& error) {
  std::fprintf(stderr,
               "%s\nusage: pf-train [--model mlp_seed000|mnist_mlp] [--steps N] [--epochs N] [--batch N] [--lr F]\n"
               "                [--log-device-placement] [--seed N] [--data DIR] [--init glorot|seed]\n"
               "                [--print-every N] [--train-limit N] [--test-limit N] [--threads N]\n",
               error.c_str());
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  Args a;
  std::map<std::string, std::string*> strings = {{"--model", &a.model}, {"--data", &a.data}, {"--init", &a.init}};
  std::map<std::string, int64_t*> ints = {{"--steps", &a.steps},           {"--epochs", &a.epochs},
                                          {"--batch", &a.batch},           {"--seed", &a.seed},
                                          {"--print-every", &a.print_every}, {"--train-limit", &a.train_limit},
                                          {"--test-limit", &a.test_limit}};
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") Usage("pf-train: trains a placeflow model");
    if (flag == "--log-device-placement") {
      a.log_placement = true;
      continue;
    }
    if (i + 1 >= argc) Usage("missing value for " + flag);
    std::string value = argv[++i];
    try {
      if (strings.count(flag)) *strings[flag] = value;
      else if (ints.count(flag)) *ints[flag] = std::stoll(value);
      else if (flag == "--lr") a.lr = std::stod(value);
      else if (flag == "--threads") a.threads = std::stoi(value);
      else Usage("unknown flag " + flag);
    } catch (const std::logic_error&) {
      Usage("bad value '" + value + "' for " + flag);
    }
  }
  return a;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

int RunSeed000(const Args& a, pf::Session& sess, const pf::models::Model& m) {
  const int64_t batch = a.batch > 0 ? a.batch : 2000;
  pf::Tensor x, t;
  pf::models::SeedBatch(batch, static_cast<uint32_t>(a.seed), &x, &t);
  const int64_t every = a.print_every > 0 ? a.print_every : std::max<int64_t>(1, a.steps / 10);
  auto start = std::chrono::steady_clock::now();
  auto window = start;
  for (int64_t step = 1; step <= a.steps; ++step) {
    float loss = sess.Run({{m.input, x}, {m.target, t}}, {m.loss})[0].scalar<float>();
    if (step % every == 0 || step == a.steps) {
      double dt = Seconds(window);
      int64_t n = step % every == 0 ? every : step % every;
      std::printf("step %lld/%lld loss=%.6g step_ms=%.3f examples/s=%.0f\n", static_cast<long long>(step),
                  static_cast<long long>(a.steps), loss, 1e3 * dt / n, n * batch / dt);
      std::fflush(stdout);
      window = std::chrono::steady_clock::now();
    }
  }
  std::printf("done: %lld steps in %.3f s\n", static_cast<long long>(a.steps), Seconds(start));
  return 0;
}

int RunMnist(const Args& a, pf::Session& sess, const pf::models::Model& m) {
  std::string dir = a.data;
  if (dir.empty()) {
    for (const char* candidate : {"/usr/share/datasets/fashion-mnist", "../shared/data/mnist"}) {
      if (std::filesystem::exists(candidate)) {
        dir = candidate;
        break;
      }
    }
  }
  if (dir.empty()) Usage("--data DIR is required: no default data set found (apt-get install dataset-fashion-mnist)");
  auto train = pf::data::LoadMnist(dir, pf::data::Split::kTrain);
  auto test = pf::data::LoadMnist(dir, pf::data::Split::kTest);
  if (!train.ok() || !test.ok()) {
    std::fprintf(stderr, "pf-train: %s\n", (train.ok() ? test.status() : train.status()).ToString().c_str());
    return 1;
  }
  pf::data::Dataset tr = pf::data::Take(*train, a.train_limit), te = pf::data::Take(*test, a.test_limit);
  std::printf("data: %s (%lld train, %lld test examples)\n", dir.c_str(), static_cast<long long>(tr.size()),
              static_cast<long long>(te.size()));
  const int64_t batch = a.batch > 0 ? a.batch : 100;
  const int64_t steps_per_epoch = tr.size() / batch;
  std::vector<int64_t> order(tr.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(a.seed);
  const int64_t every = a.print_every > 0 ? a.print_every : std::max<int64_t>(1, steps_per_epoch / 5);
  for (int64_t epoch = 1; epoch <= a.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    for (int64_t s = 0; s < steps_per_epoch; ++s) {
      pf::Tensor x, y;
      pf::data::Gather(tr, order, s * batch, batch, &x, &y);
      loss_sum += sess.Run({{m.input, x}, {m.target, y}}, {m.loss})[0].scalar<float>();
      if ((s + 1) % every == 0) {
        std::printf("epoch %lld step %lld/%lld loss=%.4f examples/s=%.0f\n", static_cast<long long>(epoch),
                    static_cast<long long>(s + 1), static_cast<long long>(steps_per_epoch), loss_sum / (s + 1),
                    (s + 1) * batch / Seconds(start));
        std::fflush(stdout);
      }
    }
    float acc = sess.Run({{m.input, te.images}, {m.target, te.labels}}, {m.accuracy})[0].scalar<float>();
    std::printf("epoch %lld loss=%.4f test_accuracy=%.4f examples/s=%.0f\n", static_cast<long long>(epoch),
                loss_sum / std::max<int64_t>(1, steps_per_epoch), acc, steps_per_epoch * batch / Seconds(start));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  try {
    pf::Graph g;
    g.set_seed(a.seed);
    pf::Scope root = pf::Scope::Root(&g);
    pf::models::ModelOptions mo;
    mo.init = a.init;
    mo.seed = a.seed;
    pf::models::Model m = pf::models::BuildModel(a.model, root, mo);
    pf::Operation init = pf::GlobalVariablesInitializer(root);
    pf::SessionOptions opts;
    opts.log_device_placement = a.log_placement;
    opts.num_threads = a.threads;
    pf::Session sess(g, opts);
    std::printf("pf-train: model %s, %d graph nodes, %zu variables\n", m.name.c_str(), g.num_nodes(),
                pf::GlobalVariables(&g).size());
    std::printf("pf-train: gradients are not implemented yet: running forward passes only (loss evaluation, no updates)\n");
    std::fflush(stdout);
    sess.Run({}, {}, {init});
    return m.classifier ? RunMnist(a, sess, m) : RunSeed000(a, sess, m);
  } catch (const pf::Error& e) {
    std::fprintf(stderr, "pf-train: %s\n", e.what());
    return 1;
  }
}
