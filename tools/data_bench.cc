#include "tools/data_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "placeflow/data/iterator_ops.h"
#include "tools/bench_util.h"
#include "tools/models.h"
#include "tools/tfrecord_input.h"

#if defined(PF_WITH_PROTOBUF) && __has_include("placeflow/io/example.h")
#include <filesystem>

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

}  // namespace

void MnistMlpEpochPipeline() {
  constexpr int64_t kExamples = 60000, kBatch = 100, kSteps = kExamples / kBatch;
  // 60,000 synthetic examples of MNIST's shape.
  std::mt19937 rng(1);
  Tensor images(DT_FLOAT, {kExamples, 784}), labels(DT_INT32, {kExamples});
  for (float& v : images.flat<float>()) v = static_cast<float>(rng() % 256) / 255.f;
  for (int32_t& v : labels.flat<int32_t>()) v = static_cast<int32_t>(rng() % 10);
  // Fed: 20 prepared batches, cycled (pf-bench mnist_mlp_epoch's setting).
  std::vector<std::pair<Tensor, Tensor>> batches;
  for (int64_t b = 0; b < 20; ++b) {
    batches.emplace_back(images.SliceRows(b * kBatch, (b + 1) * kBatch).ValueOrThrow().Clone(),
                         labels.SliceRows(b * kBatch, (b + 1) * kBatch).ValueOrThrow().Clone());
  }
  Graph fg;
  Scope froot = Scope::Root(&fg);
  models::Model fed = models::BuildMnistMlp(froot, {});
  Session fsess(fg, OnDevice(false));
  fsess.Run({}, {}, {GlobalVariablesInitializer(froot)});
  // Pipeline: the same model reading IteratorGetNext.
  Graph pg;
  Scope proot = Scope::Root(&pg);
  data::GraphIterator it =
      data::MakeIterator(proot, data::Dataset::FromTensorSlices({images, labels})
                                    .Shuffle(kExamples, 1)
                                    .Batch(kBatch, true)
                                    .Prefetch(2));
  models::ModelOptions mo;
  mo.input = it.next[0];
  mo.target = it.next[1];
  models::Model piped = models::BuildMnistMlp(proot, mo);
  Session psess(pg, OnDevice(false));
  psess.Run({}, {}, {GlobalVariablesInitializer(proot)});
  // The fed path's 20 prepared batches through an iterator (row views, no shuffle, no copy):
  // what reading IteratorGetNext costs against a feed, without preparing the batches.
  Tensor stacked_x(DT_FLOAT, {20, kBatch, 784}), stacked_y(DT_INT32, {20, kBatch});
  for (int64_t b = 0; b < 20; ++b) {
    std::copy_n(batches[b].first.data<float>(), kBatch * 784,
                stacked_x.data<float>() + b * kBatch * 784);
    std::copy_n(batches[b].second.data<int32_t>(), kBatch, stacked_y.data<int32_t>() + b * kBatch);
  }
  Graph rg;
  Scope rroot = Scope::Root(&rg);
  data::GraphIterator rit = data::MakeIterator(
      rroot,
      data::Dataset::FromTensorSlices({stacked_x, stacked_y}).Repeat(kSteps / 20).Prefetch(2));
  models::ModelOptions ro;
  ro.input = rit.next[0];
  ro.target = rit.next[1];
  models::Model ready = models::BuildMnistMlp(rroot, ro);
  Session rsess(rg, OnDevice(false));
  rsess.Run({}, {}, {GlobalVariablesInitializer(rroot)});

  auto fed_epoch = [&] {
    for (int64_t i = 0; i < kSteps; ++i) {
      const auto& [x, y] = batches[i % batches.size()];
      fsess.Run({{fed.input, x}, {fed.target, y}}, {}, {fed.train_op});
    }
  };
  auto piped_epoch = [&] {
    psess.Run({}, {}, {it.initializer});
    for (int64_t i = 0; i < kSteps; ++i) psess.Run({}, {}, {piped.train_op});
  };
  auto ready_epoch = [&] {
    rsess.Run({}, {}, {rit.initializer});
    for (int64_t i = 0; i < kSteps; ++i) rsess.Run({}, {}, {ready.train_op});
  };
  // Warm-up, then the two interleaved: the machine's load hits both alike.
  for (int i = 0; i < 20; ++i) {
    const auto& [x, y] = batches[i];
    fsess.Run({{fed.input, x}, {fed.target, y}}, {}, {fed.train_op});
  }
  psess.Run({}, {}, {it.initializer});
  for (int i = 0; i < 20; ++i) psess.Run({}, {}, {piped.train_op});
  rsess.Run({}, {}, {rit.initializer});
  for (int i = 0; i < 20; ++i) rsess.Run({}, {}, {ready.train_op});
  std::vector<double> f, p, q;
  for (int r = 0; r < kRepeats; ++r) {
    f.push_back(Seconds(fed_epoch));
    p.push_back(Seconds(piped_epoch));
    q.push_back(Seconds(ready_epoch));
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

}  // namespace pf::bench
