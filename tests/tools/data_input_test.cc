// pf-train's input pipeline: the IDX pipeline against fed batches, the TFRecord path against
// the IDX path (needs tf.Example parsing: protobuf), exact resumption through the pipeline.
#include <cmath>
#include <filesystem>
#include <fstream>

#include "tests/testing/test_util.h"
#include "tools/tfrecord_input.h"
#include "tools/trainer.h"

#if defined(PF_WITH_PROTOBUF) && __has_include("placeflow/io/example.h")
#include "placeflow/io/example.h"
#define PF_TEST_TFRECORD 1
#else
#define PF_TEST_TFRECORD 0
#endif

namespace pf::data_input_test {
namespace {

namespace fs = std::filesystem;
const char* kFashion = "/usr/share/datasets/fashion-mnist";

std::string DataDir() {
  return fs::exists(kFashion) ? kFashion : PF_SOURCE_DIR "/../shared/data/mnist";
}

// mnist_mlp trained by the Trainer on `n` examples, reading them through the pipeline
// (`pipeline`) or fed; the test accuracy and the final variables' sum.
struct Result {
  double accuracy = 0;
  float weight_sum = 0;
};
Result Train(int64_t n, bool pipeline, int64_t epochs, const std::string& ckpt = "",
             bool restore = false, int64_t stop_after_epochs = 0) {
  auto train = data::Take(data::LoadMnist(DataDir(), data::Split::kTrain).ValueOrThrow(), n);
  auto test = data::Take(data::LoadMnist(DataDir(), data::Split::kTest).ValueOrThrow(), 500);
  Graph g;
  g.set_seed(1);
  Scope root = Scope::Root(&g);
  models::ModelOptions mo;
  mo.steps_per_epoch = n / 100;
  trainer::Options to;
  if (pipeline) {
    auto it = data::MakeIterator(
        root,
        trainer::TrainingPipeline(data::Dataset::FromTensorSlices({train.images, train.labels}), n,
                                  100, to.seed),
        "train_input");
    mo.input = it.next[0];
    mo.target = it.next[1];
    to.iterator = it;
    to.train_examples = n;
  }
  models::Model m = models::BuildModel("mnist_mlp", root, mo);
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  FILE* sink = std::fopen("/dev/null", "w");
  to.out = sink;
  to.epochs = stop_after_epochs > 0 ? stop_after_epochs : epochs;
  to.checkpoint_dir = ckpt;
  to.restore = restore;
  Result r;
  r.accuracy = trainer::Trainer(m, sess, to).Run(&train, &test);
  std::fclose(sink);
  Tensor w = sess.Run({FindVariable(&g, "layer1/w").value()})[0];
  for (float v : w.flat<float>()) r.weight_sum += v;
  return r;
}

TEST_CASE("mnist_mlp learns as well through the input pipeline as from fed batches",
          "[training][data]") {
  // Different batch orders (the pipeline's Shuffle against the feed thread's std::shuffle), the
  // same amount of training: 3 epochs of 3000 examples; chance is 0.10.
  Result piped = Train(3000, true, 3), fed = Train(3000, false, 3);
  CHECK(piped.accuracy > 0.7);
  CHECK(std::abs(piped.accuracy - fed.accuracy) < 0.04);
}

TEST_CASE("Training resumed through the input pipeline matches a straight run bitwise",
          "[training][data][saver]") {
  auto dir = fs::temp_directory_path() / fmt::format("pf_pipeline_resume_{}", getpid());
  fs::remove_all(dir);
  Result straight = Train(2000, true, 3);
  Train(2000, true, 3, dir.string(), false, 1);  // stops after epoch 1, saved
  Result resumed = Train(2000, true, 3, dir.string(), true);
  fs::remove_all(dir);
  CHECK(resumed.weight_sum == straight.weight_sum);
  CHECK(resumed.accuracy == straight.accuracy);
}

TEST_CASE("pf-train --data-format tfrecord reaches the same accuracy as the IDX path",
          "[training][data][cli]") {
  if (!tfrecord_input::Available()) {
    WARN("built without protobuf (PF_WITH_PROTOBUF): tf.Example parsing is absent, skipped");
    return;
  }
#if PF_TEST_TFRECORD
  // The first 3000 training and 1000 test examples as TFRecord files of tf.Example, in
  // pf-data convert's layout.
  const fs::path dir = fs::temp_directory_path() / fmt::format("pf_tfrecord_cli_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](data::Split split, int64_t n, const std::string& name) {
    auto a = data::Take(data::LoadMnist(DataDir(), split).ValueOrThrow(), n);
    auto w = io::RecordWriter::Open((dir / name).string()).ValueOrThrow();
    for (int64_t i = 0; i < a.size(); ++i) {
      std::string raw(784, '\0');
      for (int k = 0; k < 784; ++k)
        raw[k] = static_cast<char>(std::lround(a.images.data<float>()[i * 784 + k] * 255.f));
      io::ExampleBuilder b;
      b.AddBytes("image_raw", {raw}).AddInt64("label", {a.labels.data<int32_t>()[i]});
      REQUIRE(w->Write(b.Serialize()).ok());
    }
    REQUIRE(w->Close().ok());
  };
  write(data::Split::kTrain, 3000, "train.tfrecord");
  write(data::Split::kTest, 1000, "test.tfrecord");
  auto run = [](const std::string& args) {
    const std::string out =
        (fs::temp_directory_path() / fmt::format("pf_tfr_{}", getpid())).string();
    const int rc = std::system(fmt::format("CUDA_VISIBLE_DEVICES= {} --model mnist_mlp --epochs 2 "
                                           "--test-limit 1000 {} >{} 2>&1",
                                           PF_TRAIN_BINARY, args, out)
                                   .c_str());
    std::ifstream in(out);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fs::remove(out);
    INFO(text);
    CHECK(rc == 0);
    const auto at = text.rfind("test_accuracy=");
    REQUIRE(at != std::string::npos);
    return std::stod(text.substr(at + 14, 6));
  };
  const double idx = run("--data " + DataDir() + " --train-limit 3000");
  const double tfr = run("--data-format tfrecord --data " + dir.string());
  fs::remove_all(dir);
  // The same examples, the same shuffle seeds: the same batches. The images went through uint8
  // and back (exact for IDX data), so the two runs should agree to the last digit; allow one
  // test example (0.001) in case summation order differs.
  CHECK(idx > 0.6);
  CHECK(std::abs(idx - tfr) <= 0.001);
#endif
}

}  // namespace
}  // namespace pf::data_input_test
