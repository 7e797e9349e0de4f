// pf-train's automatic placement (tools/train_app.h): --profile-steps, and the prediction set
// beside the measured step.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "placeflow/executor/auto_placement.h"
#include "tools/train_app.h"

namespace pf::app {

std::shared_ptr<const Profile> ProfileWithRules(const TrainArgs& args, const Role& role,
                                                TrainGraph& tg, TrainingData& data) {
  TrainArgs a = args;
  a.placement = "rules";
  a.log_placement = false;
  auto sess = std::make_unique<Session>(*tg.graph, TrainSessionOptions(a, role, tg, nullptr));
  trainer::Options to = TrainerOptions(a, role, tg, data);
  to.checkpoint_dir.clear();
  to.restore = false;
  to.trace_path.clear();
  to.checkpoint_every = 0;
  to.progress = progress::Mode::kQuiet;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> quiet(std::fopen("/dev/null", "w"), &std::fclose);
  if (quiet) to.out = quiet.get();  // no step lines: this is not the training
  to.steps = a.profile_steps;
  to.epochs = 1;
  if (models::IsClassifier(a.model)) to.max_steps = a.profile_steps;
  auto profile = std::make_shared<Profile>();
  to.hooks.trace = [](int64_t) { return true; };
  to.hooks.after = [&profile](const trainer::StepResult& r) {
    if (r.metadata != nullptr) RecordProfile(*r.metadata, profile.get());
  };
  to.make_creator = [&a, &role, &tg](Session& s, std::shared_ptr<Saver> saver) {
    return MakeCreator(a, role, tg, s, std::move(saver));
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    trainer::Trainer trainer(tg.model, *sess, to);
    trainer.CreateSession();
    trainer.Run(tg.classifier ? &data.train : nullptr, tg.classifier ? &data.test : nullptr);
  } catch (const Error& e) {
    std::printf(
        "placement: profiling with the rules' placement failed (%s); planning from "
        "estimates\n",
        e.what());
    return nullptr;
  }
  std::printf("placement: profiled %zu nodes over %lld steps placed by the rules in %.1f s\n",
              profile->size(), static_cast<long long>(a.profile_steps),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return profile;
}

// --placement auto: the training step's predicted time next to the measured one.
void ReportPrediction(const TrainGraph& tg, const Session& sess, double seconds, int64_t steps) {
  const std::string train_op = "^" + tg.model.train_op.node->name();
  const std::vector<PlacementPrediction> all = sess.PlacementPredictions();
  const PlacementPrediction* step = nullptr;  // the longest signature that runs the train op
  for (const PlacementPrediction& p : all) {
    if (("," + p.signature + ",").find("," + train_op + ",") == std::string::npos) continue;
    if (step == nullptr || p.step_us > step->step_us) step = &p;
  }
  if (step != nullptr) {
    const PlacementPrediction& p = *step;
    std::vector<std::string> peaks;
    for (const auto& [device, bytes] : p.peak_bytes)
      peaks.push_back(fmt::format("{} {:.1f} MB", ShortDeviceName(device), bytes / 1e6));
    std::printf(
        "placement: %s, planned in %.1f ms; training step predicted %.3f ms, measured %.3f ms "
        "(mean of %lld steps, evaluation included); predicted peak memory %s\n",
        p.algorithm.c_str(), p.planning_ms, p.step_us / 1e3,
        steps > 0 ? 1e3 * seconds / static_cast<double>(steps) : 0.0, static_cast<long long>(steps),
        fmt::format("{}", fmt::join(peaks, ", ")).c_str());
    return;
  }
}

}  // namespace pf::app
