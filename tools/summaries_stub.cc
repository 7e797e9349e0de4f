// --logdir in a build without protobuf (PF_WITH_PROTOBUF=OFF): a clear error.
#include "tools/summaries.h"

namespace pf::summaries {

std::unique_ptr<TrainingSummaries> TrainingSummaries::Create(const Scope&, const models::Model&,
                                                             const SummaryOptions&) {
  throw Error(errors::Unimplemented(
      "--logdir needs placeflow built with protobuf (PF_WITH_PROTOBUF; libprotobuf-dev and "
      "protobuf-compiler): this build writes no event files"));
}

}  // namespace pf::summaries
