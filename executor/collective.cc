#include "placeflow/executor/collective.h"

#include <algorithm>

namespace pf {

void LocalCollectiveTable::Join(const std::string& key, int group_size, Participant p,
                                const CompleteFn& complete) {
  std::vector<Participant> all;
  Status error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Group& g = groups_[key];
    if (!aborted_.ok()) {
      error = aborted_;
    } else if (g.size == 0) {
      g.size = group_size;
    }
    if (error.ok() && group_size != g.size) {
      error = errors::InvalidArgument("Collective '", key, "': a participant expects ", group_size,
                                      " participants, another ", g.size);
    }
    if (error.ok() && (p.rank < 0 || p.rank >= group_size)) {
      error = errors::InvalidArgument("Collective '", key, "': rank ", p.rank, " is not in [0, ",
                                      group_size, ")");
    }
    for (const Participant& q : g.arrived) {
      if (error.ok() && q.rank == p.rank) {
        error =
            errors::InvalidArgument("Collective '", key, "': two participants have rank ", p.rank);
      }
    }
    if (error.ok()) {
      g.arrived.push_back(std::move(p));
      if (static_cast<int>(g.arrived.size()) < g.size) return;
      all.swap(g.arrived);
    }
  }
  if (!error.ok()) return p.done(error);
  std::sort(all.begin(), all.end(),
            [](const Participant& a, const Participant& b) { return a.rank < b.rank; });
  Status s = complete(all);
  for (Participant& q : all) q.done(s);
}

void LocalCollectiveTable::StartAbort(const Status& status) {
  std::vector<Participant> waiting;
  Status s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return;
    aborted_ = status.ok() ? errors::Aborted("Collectives aborted") : status;
    s = aborted_;
    for (auto& [key, g] : groups_) {
      for (Participant& p : g.arrived) waiting.push_back(std::move(p));
      g.arrived.clear();
    }
  }
  for (Participant& p : waiting) p.done(s);
}

}  // namespace pf
