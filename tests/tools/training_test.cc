// End-to-end training on real data, exact resumption from checkpoints, the seed MLP.
#include <filesystem>

#include "tests/testing/test_util.h"
#include "tools/trainer.h"

namespace pf::tools_training_test {
namespace {

const char* kFashion = "/usr/share/datasets/fashion-mnist";

struct Run {
  Graph g;
  models::Model m;
  std::unique_ptr<Session> sess;
  explicit Run(const models::ModelOptions& o, const std::string& name = "mnist_mlp") {
    g.set_seed(o.seed);
    Scope root = Scope::Root(&g);
    m = models::BuildModel(name, root, o);
    sess = std::make_unique<Session>(g);
    sess->Run({}, {}, {GlobalVariablesInitializer(root)});
  }
};

TEST_CASE("mnist_mlp learns Fashion-MNIST far above chance", "[training]") {
  INFO("install Debian's dataset-fashion-mnist (bash tools/build.sh test does)");
  REQUIRE(std::filesystem::exists(kFashion));
  auto train = data::LoadMnist(kFashion, data::Split::kTrain).ValueOrThrow();
  auto test = data::LoadMnist(kFashion, data::Split::kTest).ValueOrThrow();
  models::ModelOptions mo;
  mo.steps_per_epoch = 600;
  Run r(mo);
  trainer::Options to;
  to.epochs = 3;
  FILE* sink = std::fopen("/dev/null", "w");
  to.out = sink;
  double acc = trainer::Trainer(r.m, *r.sess, to).Run(&train, &test);
  std::fclose(sink);
  // Chance is 0.10. Measured 0.8695 with these seeds; a hidden layer whose gradient is broken
  // leaves random features under a trained softmax layer: measured 0.8319 after 3 epochs.
  CHECK(acc > 0.85);
}

TEST_CASE("Training resumed from a checkpoint matches an uninterrupted run bitwise",
          "[training][saver]") {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("pf_resume_{}", getpid());
  std::filesystem::remove_all(dir);
  const std::string data_dir =
      std::filesystem::exists(kFashion) ? kFashion : PF_SOURCE_DIR "/../shared/data/mnist";
  auto train = data::Take(data::LoadMnist(data_dir, data::Split::kTrain).ValueOrThrow(), 2000);
  auto test = data::Take(data::LoadMnist(data_dir, data::Split::kTest).ValueOrThrow(), 500);
  models::ModelOptions mo;
  mo.steps_per_epoch = 20;
  FILE* sink = std::fopen("/dev/null", "w");
  trainer::Options to;
  to.out = sink;
  to.epochs = 2;
  Run straight(mo);
  trainer::Trainer(straight.m, *straight.sess, to).Run(&train, &test);

  to.checkpoint_dir = dir.string();
  to.epochs = 1;
  {
    Run first(mo);
    trainer::Trainer(first.m, *first.sess, to).Run(&train, &test);
  }
  to.restore = true;
  to.epochs = 2;
  Run resumed(mo);  // a new graph and session, as after a restart
  trainer::Trainer t(resumed.m, *resumed.sess, to);
  t.Run(&train, &test);
  std::fclose(sink);
  CHECK(t.global_step() == 40);
  auto a = GlobalVariables(&straight.g), b = GlobalVariables(&resumed.g);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].name());
    CHECK(straight.sess->Run({a[i].value()})[0].BitwiseEqual(resumed.sess->Run({b[i].value()})[0]));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("mlp_seed000: the loss falls with a sane initialiser", "[training]") {
  models::ModelOptions mo;
  Run r(mo, "mlp_seed000");
  Tensor x, t;
  models::SeedBatch(256, 1, &x, &t);
  std::vector<float> losses;
  for (int i = 0; i < 30; ++i)
    losses.push_back(r.sess->Run({{r.m.input, x}, {r.m.target, t}}, {r.m.loss}, {r.m.train_op})[0]
                         .scalar<float>());
  CHECK(losses.back() < losses.front());
  CHECK(losses.back() < 0.5f);  // targets 2x+1 vary by 1/3 within a row: the floor is ~0.33
}

}  // namespace
}  // namespace pf::tools_training_test
