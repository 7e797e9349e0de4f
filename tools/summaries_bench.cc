// summaries_overhead: a mnist_mlp training step with what pf-train --logdir adds (the merged
// scalar summaries fetched every step, histograms of every weight and gradient every 100 steps,
// two host scalars per step, all through an asynchronous SummaryWriter) against the same step
// without, in alternating blocks of 100 steps so both see the same machine noise.
#include "tools/summaries_bench.h"

#include <filesystem>
#include <random>

#include "placeflow/models/models.h"
#include "placeflow/ops/summary/summary.h"
#include "placeflow/train/summary_writer.h"
#include "tools/bench_util.h"

namespace pf::bench {

void SummariesOverhead() {
  namespace fs = std::filesystem;
  // One graph and session for both: the plain blocks fetch no summary, so their signature
  // prunes them (two sessions differed by up to 4% on their own).
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  const pf::models::Model m = pf::models::BuildMnistMlp(root, {});
  pf::Scope sc = root.NewSubScope("summaries");
  const pf::Output scalars =
      pf::summary::Merge(sc, {pf::summary::Scalar(sc, "loss", m.loss),
                              pf::summary::Scalar(sc, "learning_rate", m.learning_rate)});
  std::vector<pf::Output> h;
  for (const auto& [grad, var] : m.grads) {
    h.push_back(pf::summary::Histogram(sc, var.name(), var.value()));
    h.push_back(pf::summary::Histogram(sc, var.name() + "/gradient", grad));
  }
  const pf::Output histograms = pf::summary::Merge(sc, h);
  pf::Session sess(g, OnDevice(false));
  sess.Run({}, {}, {pf::GlobalVariablesInitializer(root)});
  const fs::path logdir =
      fs::temp_directory_path() / ("pf_bench_summaries_" + std::to_string(getpid()));
  pf::SummaryWriterOptions wo;
  wo.flush_secs = 10;
  wo.max_queue = 100;
  auto writer = std::make_unique<pf::SummaryWriter>(logdir.string(), wo);
  std::mt19937 rng(1);
  std::vector<std::pair<pf::Tensor, pf::Tensor>> batches;
  for (int b = 0; b < 20; ++b) {
    pf::Tensor x(pf::DT_FLOAT, {100, 784}), y(pf::DT_INT32, {100});
    for (float& v : x.flat<float>()) v = static_cast<float>(rng() % 256) / 255.f;
    for (int32_t& v : y.flat<int32_t>()) v = static_cast<int32_t>(rng() % 10);
    batches.emplace_back(x, y);
  }
  int64_t step = 0;
  auto block = [&](bool summaries) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; ++i) {
      const auto& [x, y] = batches[i % batches.size()];
      ++step;
      if (!summaries) {
        sess.Run({{m.input, x}, {m.target, y}}, {}, {m.train_op});
        continue;
      }
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<pf::Output> fetches = {scalars};
      if (step % 100 == 0) fetches.push_back(histograms);
      auto out = sess.Run({{m.input, x}, {m.target, y}}, fetches, {m.train_op});
      const double dt =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      writer->AddSummary(out[0], step);
      if (out.size() > 1) writer->AddSummary(out[1], step);
      writer->AddScalar("step_time_ms", dt * 1e3, step);
      writer->AddScalar("examples_per_sec", 100 / dt, step);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 100;
  };
  block(false);
  block(true);
  std::vector<double> p, s;
  for (int i = 0; i < 2 * kRepeats; ++i) {
    p.push_back(block(false));
    s.push_back(block(true));
  }
  writer->Close();
  const auto bytes = fs::file_size(writer->path());
  writer.reset();
  fs::remove_all(logdir);
  const double mp = Median(p), ms = Median(s);
  std::printf(
      "summaries_overhead percent=%.2f plain_ms=%.3f summaries_ms=%.3f batch=100 "
      "histograms_every=100 event_bytes_per_step=%.0f repeats=%d\n",
      100 * (ms / mp - 1), mp * 1e3, ms * 1e3, static_cast<double>(bytes) / (step / 2.0),
      2 * kRepeats);
}

}  // namespace pf::bench
