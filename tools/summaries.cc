#include "tools/summaries.h"

#include "placeflow/ops/summary/summary.h"
#include "placeflow/train/summary_writer.h"

namespace pf::summaries {
namespace {

// "layer1/w" for a variable, "layer1/w/gradient" for its gradient.
class Impl : public TrainingSummaries {
 public:
  Impl(const Scope& root, const models::Model& m, const SummaryOptions& o)
      : options_(o), writer_(o.logdir, WriterOptions(o)) {
    Graph* g = root.graph();
    Scope s = root.NewSubScope("summaries");
    // Built outside the towers: the collection is not used, so the train graph's own summaries
    // (none today) would not mix in.
    std::vector<Output> scalars = {summary::Scalar(s, "loss", m.loss)};
    if (m.learning_rate.node)
      scalars.push_back(summary::Scalar(s, "learning_rate", m.learning_rate));
    if (m.loss_scale) {  // --mixed-precision float16: the dynamic loss scale and skipped steps
      scalars.push_back(summary::Scalar(s, "loss_scale", m.loss_scale->loss_scale().value()));
      scalars.push_back(summary::Scalar(
          s, "skipped_steps", ops::Cast(s, m.loss_scale->skipped_steps().value(), DT_FLOAT)));
    }
    scalars_ = summary::Merge(s.WithOpName("scalars"), scalars);
    std::vector<Output> histograms;
    for (const auto& [grad, var] : m.grads) {
      histograms.push_back(summary::Histogram(s, var.name(), var.value()));
      if (grad.node) histograms.push_back(summary::Histogram(s, var.name() + "/gradient", grad));
    }
    if (!histograms.empty()) histograms_ = summary::Merge(s.WithOpName("histograms"), histograms);
    graph_ = g;
  }

  void Attach(Session& session, trainer::Options* to) override {
    session_ = &session;
    to->hooks.fetches = [this](int64_t step) {
      std::vector<Output> f = {scalars_};
      if (histograms_.node && WantHistograms(step)) f.push_back(histograms_);
      return f;
    };
    to->hooks.trace = [this](int64_t step) { return step == options_.trace_step; };
    to->hooks.after = [this](const trainer::StepResult& r) { AfterStep(r); };
    to->hooks.after_epoch = [this](int64_t step, double accuracy) {
      writer_.AddScalar("accuracy", accuracy, step);
    };
  }

  void Close() override { writer_.Close(); }
  std::string path() const override { return writer_.path(); }

 private:
  static SummaryWriterOptions WriterOptions(const SummaryOptions& o) {
    SummaryWriterOptions w;
    w.flush_secs = o.flush_secs;
    w.max_queue = 100;
    return w;
  }
  bool WantHistograms(int64_t step) const {
    return step == 1 || step % options_.histogram_every == 0;
  }

  void AfterStep(const trainer::StepResult& r) {
    const std::vector<Tensor>& extra = *r.extra;
    writer_.AddSummary(extra[0], r.step);
    if (extra.size() > 1) writer_.AddSummary(extra[1], r.step);
    writer_.AddScalar("step_time_ms", r.step_s * 1e3, r.step);
    if (r.step_s > 0) writer_.AddScalar("examples_per_sec", r.examples / r.step_s, r.step);
    if (!graph_written_) {
      // After the first step the train signature is placed: the nodes carry their devices.
      writer_.AddGraph(*graph_, session_->DevicePlacement());
      graph_written_ = true;
    }
    if (r.metadata) writer_.AddRunMetadata("step_" + std::to_string(r.step), *r.metadata, r.step);
  }

  SummaryOptions options_;
  SummaryWriter writer_;
  Graph* graph_ = nullptr;
  Session* session_ = nullptr;
  Output scalars_, histograms_;
  bool graph_written_ = false;
};

}  // namespace

std::unique_ptr<TrainingSummaries> TrainingSummaries::Create(const Scope& root,
                                                             const models::Model& model,
                                                             const SummaryOptions& options) {
  return std::make_unique<Impl>(root, model, options);
}

}  // namespace pf::summaries
