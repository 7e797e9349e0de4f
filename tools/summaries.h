// pf-train's --logdir: TensorBoard summaries of a training run (placeflow's SummaryWriter).
//   - scalars every step: loss and learning_rate (summary ops merged in the graph, fetched with
//     the step), examples_per_sec and step_time_ms (measured on the host); accuracy (the test
//     accuracy) after each epoch;
//   - weight and gradient histograms every `histogram_every` steps (and at step 1);
//   - the placed graph once, after the first step (nodes carry their assigned devices);
//   - the step statistics of one traced step (`trace_step`).
//
//   auto s = pf::summaries::TrainingSummaries::Create(root, model, {.logdir = "runs/a"});
//   s->Attach(sess, &trainer_options);   // hooks on the trainer's steps
//   ... train ...
//   s->Close();                            // flushes; the destructor does too
//
// Built with protobuf (PF_WITH_PROTOBUF); without it Create throws Unimplemented.
#pragma once

#include <memory>
#include <string>

#include "placeflow/models/models.h"
#include "tools/trainer.h"

namespace pf::summaries {

struct SummaryOptions {
  std::string logdir;
  int64_t histogram_every = 100;
  int64_t trace_step = 3;  // the global step traced into the RunMetadata record (0: none)
  double flush_secs = 10;  // the writer's background flush period
};

class TrainingSummaries {
 public:
  // Adds the summary ops for `model` under root's "summaries" name scope and opens the writer.
  static std::unique_ptr<TrainingSummaries> Create(const Scope& root, const models::Model& model,
                                                   const SummaryOptions& options);
  virtual ~TrainingSummaries() = default;
  // Sets the trainer's hooks (fetches, trace, after, after_epoch) to write the summaries.
  virtual void Attach(Session& session, trainer::Options* options) = 0;
  virtual void Close() = 0;
  virtual std::string path() const = 0;  // the event file
};

}  // namespace pf::summaries
