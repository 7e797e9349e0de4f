// Where pf-train's towers go (--towers, --devices), and seed article 000's towers table
// (--towers-table): the same model and batch timed with each tower count.
//
//   pf::app::TowerPlan plan = pf::app::PlanTowers(args);   // {"cpu", 2, ""} on a CPU machine
//   return pf::app::TowersTable(args);                      // prints the table
#pragma once

#include <string>

#include "tools/train_flags.h"

namespace pf::app {

struct TowerPlan {
  std::string kind;  // cpu | gpu
  int count;
  std::string note;  // what changed from the request, for the user ("no GPU found: ...")
};

// --devices all picks the GPUs when the process sees any; --towers auto makes one tower per
// GPU, or two on CPU devices (seed article 000's two towers, on this project's 2-core machines).
// --devices gpu without a GPU trains on the CPU under soft placement, and says so.
TowerPlan PlanTowers(const TrainArgs& a);
// ", variables on /gpu:0 (auto: every tower on a GPU)": which layout was chosen, and why.
std::string VariableLayout(const TrainArgs& a, const std::string& device);
train::Aggregation AggregationOf(const TrainArgs& a);
// Times a.model with each count of --towers-table; prints the table; returns the exit status.
int TowersTable(const TrainArgs& a);

}  // namespace pf::app
