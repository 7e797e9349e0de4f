// CollectiveTable: where the participants of a collective (one node per device, sharing a
// group key) meet within one step. The last participant to arrive completes the collective
// for all of them on its own thread; the others wait without holding a thread, like a _Recv.
// Aborting the step wakes every waiting participant with the error.
//
//   table->Join("grads", /*group_size=*/2, {rank, ctx, std::move(done)},
//               [](std::vector<pf::CollectiveTable::Participant>& all) { ...; return
//               pf::Status::OK(); });
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace pf {

class OpKernelContext;

class CollectiveTable {
 public:
  struct Participant {
    int rank = 0;
    OpKernelContext* ctx = nullptr;
    std::function<void(Status)> done;
  };
  // Runs once, on the last arriving participant's thread, with every participant in rank
  // order; its status goes to every participant's `done`.
  using CompleteFn = std::function<Status(std::vector<Participant>& all)>;

  // Adds `p` to the collective `key` of `group_size` participants. A rank out of range or
  // taken, or a group size that differs between participants, fails that participant.
  void Join(const std::string& key, int group_size, Participant p, const CompleteFn& complete);
  // Every waiting and later participant fails with `status`.
  void StartAbort(const Status& status);

 private:
  struct Group {
    int size = 0;
    std::vector<Participant> arrived;
  };
  std::mutex mu_;
  std::map<std::string, Group> groups_;
  Status aborted_;
};

}  // namespace pf
