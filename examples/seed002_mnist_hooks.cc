// Seed 002: MNIST on the article's 784-500-10 network (L2 regularisation, exponential learning-
// rate decay, moving averages of the variables), trained under MonitoredTrainingSession with
// TensorFlow's hooks (stop at a step, NaN check, logging, checkpoints every N steps), then
// exported as a MetaGraph and reloaded in a fresh graph, as a serving or resuming process would:
// the reloaded model must give the same test accuracy and train on from the saved step.
//
//   build/examples/seed002_mnist_hooks [steps] [data_dir] [checkpoint_dir]
//       # defaults: 1000, Fashion-MNIST, a fresh directory under the system's temp directory
//
// Exits 1 if the test accuracy is below 50% (chance: 10%) or the reloaded model disagrees.
#include <placeflow/data/idx.h>
#include <placeflow/placeflow.h>
#include <placeflow/train/basic_hooks.h>
#include <placeflow/train/meta_graph.h>
#include <placeflow/train/monitored_session.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace {

constexpr int64_t kBatch = 100;

struct Net {
  pf::Output x, y, logits, loss, accuracy;
  pf::Operation train_op;
  pf::Variable global_step;
};

// The article's inference() and training ops.
Net Build(const pf::Scope& root) {
  Net n;
  n.x = pf::ops::Placeholder(root.WithOpName("x-input"), pf::DT_FLOAT, {-1, 784});
  n.y = pf::ops::Placeholder(root.WithOpName("y-input"), pf::DT_INT32, {-1});
  auto layer = [&](const std::string& name, pf::Output in, int64_t from, int64_t to, bool relu) {
    pf::Scope vs = root.WithVariableScope(name);
    pf::Variable w =
        pf::GetVariable(vs, "weights", {from, to}, pf::init::TruncatedNormal(0, 0.1, 1));
    pf::Variable b = pf::GetVariable(vs, "biases", {to}, pf::init::Constant(0.1));
    pf::train::L2Regularization(vs, {w}, 1e-4);  // into the "losses" collection
    pf::Output out = pf::ops::XwPlusB(vs, in, w.value(), b.value());
    return relu ? pf::ops::Relu(vs, out) : out;
  };
  n.logits = layer("layer2", layer("layer1", n.x, 784, 500, true), 500, 10, false);
  pf::Output xent =
      pf::ops::Mean(root, pf::ops::SparseSoftmaxCrossEntropyWithLogits(root, n.logits, n.y).first);
  std::vector<pf::Output> losses = root.graph()->GetCollection(pf::kLosses);
  losses.push_back(xent);
  n.loss = pf::ops::AddN(root.WithOpName("loss"), losses);
  n.global_step = pf::train::GetOrCreateGlobalStep(root);
  pf::Output lr = pf::train::ExponentialDecay(root, 0.8, n.global_step, 600, 0.99, true);
  pf::train::GradientDescent opt(lr);
  pf::Operation step = opt.Minimize(root, n.loss, &n.global_step);
  pf::train::ExponentialMovingAverage ema(0.99, &n.global_step);
  pf::Operation average =
      ema.Apply(root.WithControlDependencies({step}), pf::TrainableVariables(root.graph()));
  n.train_op = pf::ops::Group(root.WithOpName("train"), {step, average});
  n.accuracy = pf::train::Accuracy(root, n.logits, n.y);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::atoll(argv[1]) : 1000;
  const std::string data_dir = argc > 2 ? argv[2] : "/usr/share/datasets/fashion-mnist";
  const std::string ckpt =
      argc > 3 ? argv[3]
               : (std::filesystem::temp_directory_path() / ("seed002-" + std::to_string(getpid())))
                     .string();
  pf::data::MnistArrays train = pf::data::LoadMnist(data_dir, pf::data::Split::kTrain).value();
  pf::data::MnistArrays test =
      pf::data::Take(pf::data::LoadMnist(data_dir, pf::data::Split::kTest).value(), 5000);

  // Training, with hooks.
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  Net n = Build(root);
  g.AddToCollection(pf::train::kTrainOp, n.train_op.node);
  pf::train::MonitoredTrainingSessionOptions o;
  o.checkpoint_dir = ckpt;
  o.save_checkpoint_steps = 250;
  o.hooks = {
      std::make_shared<pf::train::StopAtStepHook>(pf::train::StopAtStepHook::LastStep(steps)),
      std::make_shared<pf::train::NanTensorHook>(n.loss),
      std::make_shared<pf::train::LoggingTensorHook>(std::vector<pf::Output>{n.loss}, 200)};
  std::vector<int64_t> order(train.size());
  for (int64_t i = 0; i < train.size(); ++i) order[i] = (i * 7919) % train.size();
  float accuracy = 0;
  {
    auto sess = pf::train::MonitoredTrainingSession(&g, o);
    pf::Tensor images, labels;
    for (int64_t i = 0; !sess->ShouldStop(); ++i) {
      pf::data::Gather(train, order, (i * kBatch) % (train.size() - kBatch), kBatch, &images,
                       &labels);
      sess->Run({{n.x, images}, {n.y, labels}}, {}, {n.train_op});
    }
    accuracy = sess->raw_session()
                   .Run({{n.x, test.images}, {n.y, test.labels}}, {n.accuracy})[0]
                   .scalar<float>();
    sess->Close();  // the last checkpoint
  }
  pf::Saver saver(&g);
  pf::train::ExportMetaGraphOptions export_options;
  export_options.saver = &saver;
  export_options.signatures["serving_default"] = {{{"x", n.x}, {"y", n.y}},
                                                  {{"accuracy", n.accuracy}}};
  pf::train::ExportMetaGraph(ckpt + "/model.meta", g, export_options);
  fmt::print("test accuracy {:.4f} after {} steps; exported {}/model.meta\n", accuracy, steps,
             ckpt);

  // A fresh graph: import, restore the latest checkpoint, serve, then train on.
  pf::Graph g2;
  pf::train::ImportedMetaGraph m = pf::train::ImportMetaGraph(ckpt + "/model.meta", &g2);
  pf::Session sess2(g2);
  m.saver->Restore(sess2, pf::Saver::LatestCheckpoint(ckpt));
  const pf::train::Signature& sig = m.signatures.at("serving_default");
  const float reloaded =
      sess2
          .Run({{sig.inputs.at("x"), test.images}, {sig.inputs.at("y"), test.labels}},
               {sig.outputs.at("accuracy")})[0]
          .scalar<float>();
  pf::Tensor images, labels;
  pf::data::Gather(train, order, 0, kBatch, &images, &labels);
  sess2.Run({{sig.inputs.at("x"), images}, {sig.inputs.at("y"), labels}}, {}, {m.train_op()});
  pf::Output step2 = pf::train::GetOrCreateGlobalStep(pf::Scope::Root(&g2)).value();
  const int64_t resumed_at = sess2.Run({step2})[0].scalar<int64_t>();
  fmt::print("reloaded: test accuracy {:.4f}; one more step: global step {}\n", reloaded,
             resumed_at);
  if (std::filesystem::path(ckpt).filename().string().rfind("seed002-", 0) == 0)
    std::filesystem::remove_all(ckpt);
  if (accuracy < 0.5 || reloaded != accuracy || resumed_at != steps + 1) {
    fmt::print(stderr, "seed002_mnist_hooks: {}\n",
               accuracy < 0.5         ? "accuracy below 0.5"
               : reloaded != accuracy ? "the reloaded model disagrees"
                                      : "the reloaded model did not resume at the saved step");
    return 1;
  }
  return 0;
}
