#include "placeflow/devices/cuda/gpu_nccl.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "placeflow/core/logging.h"
#include "placeflow/devices/cuda/cuda_check.h"

namespace pf {
namespace {

// One communicator per rank for an ordered list of physical GPUs, and the devices using it.
struct CommSet {
  std::vector<ncclComm_t> comms;
  // Held from ncclGroupStart to ncclGroupEnd: two collectives of one set launched concurrently
  // could otherwise reach the GPUs in different orders and deadlock.
  std::mutex group_mu;
  std::set<const GpuDevice*> users;
};

std::mutex g_comms_mu;
auto* g_comms = new std::map<std::vector<int>, std::shared_ptr<CommSet>>();

StatusOr<std::shared_ptr<CommSet>> Communicators(const std::vector<GpuDevice*>& gpus,
                                                 const std::vector<int>& ordinals) {
  std::lock_guard<std::mutex> lock(g_comms_mu);
  std::shared_ptr<CommSet>& slot = (*g_comms)[ordinals];
  if (slot == nullptr) {
    auto set = std::make_shared<CommSet>();
    set->comms.resize(ordinals.size());
    Status s = cuda::CheckCall(
        ncclCommInitAll(set->comms.data(), static_cast<int>(ordinals.size()), ordinals.data()),
        "ncclCommInitAll", ordinals[0], __FILE__, __LINE__);
    if (!s.ok()) {
      g_comms->erase(ordinals);
      return s;
    }
    slot = set;
  }
  slot->users.insert(gpus.begin(), gpus.end());
  return slot;
}

// Finalizing waits until every rank is quiescent: one thread finalizing several ranks must
// group the calls, as it groups collectives (NCCL >= 2.19 accepts finalize in a group).
void Destroy(const std::vector<int>& ordinals, CommSet& set) {
  std::lock_guard<std::mutex> group(set.group_mu);  // no collective of this set is in flight
  Status s = cuda::CheckCall(ncclGroupStart(), "ncclGroupStart", ordinals[0], __FILE__, __LINE__);
  for (size_t i = 0; i < set.comms.size() && s.ok(); ++i) {
    cudaSetDevice(ordinals[i]);
    s = cuda::CheckCall(ncclCommFinalize(set.comms[i]), "ncclCommFinalize", ordinals[i], __FILE__,
                        __LINE__);
  }
  Status end = cuda::CheckCall(ncclGroupEnd(), "ncclGroupEnd", ordinals[0], __FILE__, __LINE__);
  if (!s.ok() || !end.ok()) PF_LOG_WARN("{}", (s.ok() ? end : s).message());
  for (size_t i = 0; i < set.comms.size(); ++i) {
    cudaSetDevice(ordinals[i]);
    ncclCommDestroy(set.comms[i]);
  }
}

}  // namespace

bool NcclUsable(const std::vector<GpuDevice*>& gpus) {
  std::set<int> ordinals;
  for (const GpuDevice* g : gpus) ordinals.insert(g->ordinal());
  return gpus.size() > 1 && ordinals.size() == gpus.size();
}

Status NcclAllReduceSum(const std::vector<GpuDevice*>& gpus, const std::vector<void*>& buffers,
                        int64_t count, DType dtype) {
  if (!NcclUsable(gpus)) return errors::Internal("NCCL needs one device per physical GPU");
  std::vector<int> ordinals;
  for (const GpuDevice* g : gpus) ordinals.push_back(g->ordinal());
  PF_ASSIGN_OR_RETURN(std::shared_ptr<CommSet> set, Communicators(gpus, ordinals));
  const ncclDataType_t type = dtype == DT_DOUBLE ? ncclFloat64 : ncclFloat32;
  std::lock_guard<std::mutex> group(set->group_mu);
  PF_GPU_RETURN_IF_ERROR(ordinals[0], ncclGroupStart());
  Status s = Status::OK();
  for (size_t i = 0; i < gpus.size() && s.ok(); ++i) {
    s = cuda::CheckCall(ncclAllReduce(buffers[i], buffers[i], static_cast<size_t>(count), type,
                                      ncclSum, set->comms[i], gpus[i]->compute_stream()),
                        "ncclAllReduce", ordinals[i], __FILE__, __LINE__);
  }
  // The group must be closed even when a call in it failed.
  Status end = cuda::CheckCall(ncclGroupEnd(), "ncclGroupEnd", ordinals[0], __FILE__, __LINE__);
  return s.ok() ? end : s;
}

void NcclReleaseDevice(const GpuDevice* gpu) {
  std::vector<std::pair<std::vector<int>, std::shared_ptr<CommSet>>> unused;
  {
    std::lock_guard<std::mutex> lock(g_comms_mu);
    for (auto it = g_comms->begin(); it != g_comms->end();) {
      it->second->users.erase(gpu);
      if (it->second->users.empty()) {
        unused.emplace_back(it->first, std::move(it->second));
        it = g_comms->erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& [ordinals, set] : unused) Destroy(ordinals, *set);
}

}  // namespace pf
