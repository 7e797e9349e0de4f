// CollectiveTable: what collective kernels (CollectiveAllReduce) see of the runtime. The
// participants of a collective (one node per device, sharing a group key) meet within one
// step; the last to arrive completes the collective for all of them on its own thread, the
// others wait without holding a thread, like a _Recv. Aborting the step wakes every waiting
// participant with the error. The executor implements it (executor/collective.h).
//
//   ctx->collectives()->Join("grads", /*group_size=*/2, {rank, ctx, std::move(done)},
//                            [](std::vector<pf::CollectiveTable::Participant>& all) {
//                              ...; return pf::Status::OK(); });
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "placeflow/core/status.h"

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
  virtual ~CollectiveTable() = default;

  // Adds `p` to the collective `key` of `group_size` participants. A rank out of range or
  // taken, or a group size that differs between participants, fails that participant.
  virtual void Join(const std::string& key, int group_size, Participant p,
                    const CompleteFn& complete) = 0;
  // Every waiting and later participant fails with `status`.
  virtual void StartAbort(const Status& status) = 0;
};

}  // namespace pf
