// The cluster role in a build without the cluster runtime (PF_WITH_GRPC off): pf-train reports
// its cluster flags as a usage error before calling these.
#include "tools/cluster_role.h"

namespace pf::cluster {
namespace {

Error NoCluster() {
  return Error(errors::Unimplemented(
      "cluster flags need a placeflow built with the cluster runtime (PF_WITH_GRPC)"));
}

}  // namespace

bool ClusterAvailable() { return false; }

std::unique_ptr<ClusterRole> JoinCluster(const TaskFlags&) { throw NoCluster(); }

int RunLocalCluster(const std::string&, int, char**) { throw NoCluster(); }

}  // namespace pf::cluster
