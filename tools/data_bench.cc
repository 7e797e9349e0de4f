#include "tools/data_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "placeflow/data/image_folder.h"
#include "placeflow/data/iterator_ops.h"
#include "placeflow/io/image_codec.h"
#include "placeflow/models/models.h"
#include "tools/bench_util.h"
#include "tools/tfrecord_input.h"

#if defined(PF_WITH_PROTOBUF) && __has_include("placeflow/io/example.h")
#include "placeflow/io/example.h"
#define PF_BENCH_TFRECORD 1
#else
#define PF_BENCH_TFRECORD 0
#endif

namespace pf::bench {
namespace {

double Seconds(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

using Batches = std::vector<std::pair<Tensor, Tensor>>;

// mnist_mlp in a graph of its own, reading `input` through an iterator, or fed when it is null.
struct MnistMlpRun {
  Graph graph;
  std::optional<data::GraphIterator> it;
  models::Model m;
  std::unique_ptr<Session> sess;

  explicit MnistMlpRun(const data::Dataset* input) {
    Scope root = Scope::Root(&graph);
    models::ModelOptions mo;
    if (input != nullptr) {
      it = data::MakeIterator(root, *input);
      mo.input = it->next[0];
      mo.target = it->next[1];
    }
    m = models::BuildMnistMlp(root, mo);
    sess = std::make_unique<Session>(graph, OnDevice(false));
    sess->Run({}, {}, {GlobalVariablesInitializer(root)});
  }
  // `steps` training steps: a new pass of the iterator, or `batches` fed in turn.
  void Steps(int64_t steps, const Batches& batches) {
    if (it) {
      sess->Run({}, {}, {it->initializer});
      for (int64_t i = 0; i < steps; ++i) sess->Run({}, {}, {m.train_op});
      return;
    }
    for (int64_t i = 0; i < steps; ++i) {
      const auto& [x, y] = batches[i % batches.size()];
      sess->Run({{m.input, x}, {m.target, y}}, {}, {m.train_op});
    }
  }
};

}  // namespace

void MnistMlpEpochPipeline() {
  constexpr int64_t kExamples = 60000, kBatch = 100, kSteps = kExamples / kBatch;
  // 60,000 synthetic examples of MNIST's shape.
  std::mt19937 rng(1);
  Tensor images(DT_FLOAT, {kExamples, 784}), labels(DT_INT32, {kExamples});
  for (float& v : images.flat<float>()) v = static_cast<float>(rng() % 256) / 255.f;
  for (int32_t& v : labels.flat<int32_t>()) v = static_cast<int32_t>(rng() % 10);
  // Fed: 20 prepared batches, cycled (pf-bench mnist_mlp_epoch's setting).
  Batches batches;
  for (int64_t b = 0; b < 20; ++b) {
    batches.emplace_back(images.SliceRows(b * kBatch, (b + 1) * kBatch).ValueOrThrow().Clone(),
                         labels.SliceRows(b * kBatch, (b + 1) * kBatch).ValueOrThrow().Clone());
  }
  MnistMlpRun fed(nullptr);
  // Pipeline: the same model reading IteratorGetNext.
  const data::Dataset shuffled = data::Dataset::FromTensorSlices({images, labels})
                                     .Shuffle(kExamples, 1)
                                     .Batch(kBatch, true)
                                     .Prefetch(2);
  MnistMlpRun piped(&shuffled);
  // The fed path's 20 prepared batches through an iterator (row views, no shuffle, no copy):
  // what reading IteratorGetNext costs against a feed, without preparing the batches.
  Tensor stacked_x(DT_FLOAT, {20, kBatch, 784}), stacked_y(DT_INT32, {20, kBatch});
  for (int64_t b = 0; b < 20; ++b) {
    std::copy_n(batches[b].first.data<float>(), kBatch * 784,
                stacked_x.data<float>() + b * kBatch * 784);
    std::copy_n(batches[b].second.data<int32_t>(), kBatch, stacked_y.data<int32_t>() + b * kBatch);
  }
  const data::Dataset prepared =
      data::Dataset::FromTensorSlices({stacked_x, stacked_y}).Repeat(kSteps / 20).Prefetch(2);
  MnistMlpRun ready(&prepared);
  // Warm-up, then the three interleaved: the machine's load hits them alike.
  for (MnistMlpRun* run : {&fed, &piped, &ready}) run->Steps(20, batches);
  std::vector<double> f, p, q;
  for (int r = 0; r < kRepeats; ++r) {
    f.push_back(Seconds([&] { fed.Steps(kSteps, batches); }));
    p.push_back(Seconds([&] { piped.Steps(kSteps, batches); }));
    q.push_back(Seconds([&] { ready.Steps(kSteps, batches); }));
  }
  const double fs = Median(f), ps = Median(p), qs = Median(q);
  std::printf(
      "mnist_mlp_epoch_pipeline examples_per_s=%.0f fed_examples_per_s=%.0f overhead_pct=%.1f "
      "getnext_overhead_pct=%.1f batch=100 steps=600 repeats=%d\n",
      kExamples / ps, kExamples / fs, 100 * (ps / fs - 1), 100 * (qs / fs - 1), kRepeats);
}

void InputPipeline() {
#if PF_BENCH_TFRECORD
  const char* env = std::getenv("PF_BENCH_TFRECORD");
  const std::string path = env ? env : "/tmp/pf_bench_input_pipeline.tfrecord";
  if (!std::filesystem::exists(path)) {
    const char* dir = "/usr/share/datasets/fashion-mnist";
    if (!std::filesystem::exists(dir)) {
      std::printf("input_pipeline skipped=no_data (dataset-fashion-mnist)\n");
      return;
    }
    data::MnistArrays a = data::LoadMnist(dir, data::Split::kTrain).ValueOrThrow();
    auto w = io::RecordWriter::Open(path + ".part").ValueOrThrow();
    for (int64_t i = 0; i < a.size(); ++i) {
      std::string raw(784, '\0');
      for (int k = 0; k < 784; ++k)
        raw[k] = static_cast<char>(std::lround(a.images.data<float>()[i * 784 + k] * 255.f));
      io::ExampleBuilder b;
      b.AddBytes("image_raw", {raw}).AddInt64("label", {a.labels.data<int32_t>()[i]});
      ThrowIfError(w->Write(b.Serialize()));
    }
    ThrowIfError(w->Close());
    std::filesystem::rename(path + ".part", path);
  }
  data::Dataset d =
      data::Dataset::FromTFRecord({path})
          .Shuffle(10000, 1)
          .Batch(100)
          .Map([](data::Element e,
                  const data::MapContext&) { return tfrecord_input::ParseMnistBatch(e[0]); },
               2, {{DT_FLOAT, {-1, -1}}, {DT_INT32, {-1}}})
          .Prefetch(2);
  int64_t examples = 0;
  auto epoch = [&] {
    examples = 0;
    auto it = d.MakeIterator();
    data::Element e;
    while (it->GetNext(&e).ValueOrThrow()) examples += e[1].dim(0);
  };
  epoch();  // warm-up (and the page cache)
  const double s = TimeMedian(epoch);
  std::printf("input_pipeline examples_per_s=%.0f examples=%lld seconds=%.3f repeats=%d\n",
              examples / s, static_cast<long long>(examples), s, kRepeats);
#else
  std::printf("input_pipeline skipped=no_protobuf\n");
#endif
}

void ImageFolder() {
  if (!image::Available()) {
    std::printf("image_folder skipped=no_codecs\n");
    return;
  }
  const char* env = std::getenv("PF_BENCH_IMAGES");
  const std::string dir = env ? env : "/tmp/pf_bench_images";
  constexpr int kImages = 2000;
  if (!std::filesystem::exists(dir + "/.complete")) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> noise(0, 40);
    for (int i = 0; i < kImages; ++i) {
      const std::string cls = i % 2 ? "dark" : "bright";
      std::filesystem::create_directories(dir + "/" + cls);
      Tensor img(DT_UINT8, {256, 256, 3});
      for (int64_t k = 0; k < img.num_elements(); ++k)
        img.data<uint8_t>()[k] =
            static_cast<uint8_t>((i % 2 ? 60 : 170) + noise(rng) + (k / 768) % 30);
      std::ofstream(dir + "/" + cls + "/" + std::to_string(i) + ".jpg", std::ios::binary)
          << image::EncodeJpeg(img, 90).ValueOrThrow();
    }
    std::ofstream(dir + "/.complete") << "done";
  }
  data::ImageFolderOptions o;
  o.image_size = {224, 224};
  o.num_parallel_calls = 2;
  o.shuffle = false;
  data::Dataset d = data::FromImageFolder(dir, o).ValueOrThrow().dataset.Batch(64).Prefetch(2);
  int64_t images = 0;
  auto epoch = [&] {
    images = 0;
    auto it = d.MakeIterator();
    data::Element e;
    while (it->GetNext(&e).ValueOrThrow()) images += e[1].dim(0);
  };
  epoch();  // warm-up (and the page cache)
  const double s = TimeMedian(epoch);
  std::printf("image_folder images_per_s=%.0f images=%lld seconds=%.3f size=224 repeats=%d\n",
              images / s, static_cast<long long>(images), s, kRepeats);
}

}  // namespace pf::bench
