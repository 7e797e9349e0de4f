// The training loop's guards: batches larger than the data set, empty data sets, checkpoint
// directories that cannot hold checkpoints, a diverging loss.
#include "tools/trainer.h"

#include <filesystem>
#include <fstream>

#include "tests/testing/test_util.h"

namespace pf::trainer_test {
namespace {

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

data::MnistArrays Synthetic(int64_t n) {
  data::MnistArrays d;
  d.images = Tensor(DT_FLOAT, {n, 784});
  d.labels = Tensor(DT_INT32, {n});
  for (float& v : d.images.flat<float>()) v = 0.5f;
  for (int64_t i = 0; i < n; ++i) d.labels.flat<int32_t>()[i] = static_cast<int32_t>(i % 10);
  return d;
}

TEST_CASE("Batches larger than the data set are clamped and an empty data set is an error",
          "[trainer]") {
  CHECK(trainer::EffectiveBatch(100, 30).value() == 30);
  CHECK(trainer::EffectiveBatch(10, 30).value() == 10);
  CHECK(trainer::EffectiveBatch(100, 0).status().message() == "The training set has no examples");
  CHECK(trainer::EffectiveBatch(0, 30).status().code() == Code::kInvalidArgument);
  // The prefetcher used to read past the shuffled order (heap overflow) for these.
  data::MnistArrays small = Synthetic(30);
  CHECK_THROWS_WITH(trainer::BatchPrefetcher(small, 100, 1, 0),
                    "InvalidArgument: Batches of 100 from a data set of 30 examples: the batch "
                    "must be in [1, 30]");
  CHECK_THROWS_WITH(trainer::BatchPrefetcher(small, 0, 1, 0), Contains("the batch must be in"));
  trainer::BatchPrefetcher whole(small, 30, 1, 0);
  Tensor x, y;
  whole.Next(&x, &y);
  CHECK(x.shape() == Shape{30, 784});
  std::vector<int64_t> order = {0, 1, 2};
  CHECK_THROWS_WITH(data::Gather(small, order, 2, 5, &x, &y),
                    "OutOfRange: Gather of examples [2, 7) from an order of 3");
}

TEST_CASE("A mnist_mlp run on fewer examples than its batch trains on one short batch",
          "[trainer]") {
  data::MnistArrays train = Synthetic(30), test = Synthetic(10);
  Graph g;
  Scope root = Scope::Root(&g);
  models::ModelOptions mo;
  models::Model m = models::BuildModel("mnist_mlp", root, mo);
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  trainer::Options o;
  o.epochs = 2;
  o.batch = 100;
  char buf[4096] = {};
  FILE* out = fmemopen(buf, sizeof(buf) - 1, "w");
  o.out = out;
  trainer::Trainer t(m, sess, o);
  t.Run(&train, &test);
  std::fclose(out);
  CHECK_THAT(std::string(buf),
             Contains("batch 100 is larger than the 30 training examples: batches of 30\n"));
  CHECK(t.global_step() == 2);  // one step per epoch
  data::MnistArrays empty = Synthetic(0);
  CHECK_THROWS_WITH(trainer::Trainer(m, sess, o).Run(&empty, &test),
                    "InvalidArgument: The training set has no examples");
  CHECK_THROWS_WITH(trainer::Trainer(m, sess, o).Run(&train, &empty),
                    "InvalidArgument: The test set has no examples");
}

TEST_CASE("Checkpoint directories are checked before training", "[trainer]") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("pf_ckptdir_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "file";
  std::ofstream(file) << "x";
  Status s = trainer::CheckCheckpointDir(file.string());
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK(s.message() == "Cannot save checkpoints in '" + file.string() + "': it is not a directory");
  CHECK(trainer::CheckCheckpointDir((file / "a/b").string()).message() ==
        "Cannot save checkpoints in '" + (file / "a/b").string() + "': '" + file.string() +
            "' is not a directory");
  CHECK(trainer::CheckCheckpointDir("").message() ==
        "Cannot save checkpoints in '': the path is empty");
  REQUIRE(trainer::CheckCheckpointDir((dir / "x/y").string()).ok());
  CHECK(fs::is_directory(dir / "x/y"));
  CHECK(fs::is_empty(dir / "x/y"));  // the write probe is gone
  // The Trainer refuses before its first step.
  Graph g;
  Scope root = Scope::Root(&g);
  models::Model m = models::BuildModel("mlp_seed000", root, {});
  Session sess(g);
  trainer::Options o;
  o.checkpoint_dir = file.string();
  CHECK_THROWS_WITH(trainer::Trainer(m, sess, o), Contains("it is not a directory"));
  fs::remove_all(dir);
}

TEST_CASE("A NaN loss stops the trainer naming the step and the tensor unless allow_nan",
          "[trainer]") {
  Graph g;
  Scope root = Scope::Root(&g);
  models::ModelOptions mo;
  mo.learning_rate = 1e30;
  models::Model m = models::BuildModel("mlp_seed000", root, mo);
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  trainer::Options o;
  o.steps = 20;
  o.batch = 16;
  FILE* sink = std::fopen("/dev/null", "w");
  o.out = sink;
  try {
    trainer::Trainer(m, sess, o).Run(nullptr, nullptr);
    FAIL("no error for a diverging loss");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_THAT(e.what(), Contains("Model diverged with loss = "));
    CHECK_THAT(e.what(), Contains(" (fetched from loss:0)"));
  }
  o.allow_nan = true;
  const double loss = trainer::Trainer(m, sess, o).Run(nullptr, nullptr);
  std::fclose(sink);
  CHECK_FALSE(std::isfinite(loss));
}

}  // namespace
}  // namespace pf::trainer_test
