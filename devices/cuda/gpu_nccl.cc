#include "placeflow/devices/cuda/gpu_nccl.h"

#include <map>
#include <mutex>
#include <set>

#include "placeflow/devices/cuda/cuda_check.h"

namespace pf {
namespace {

std::mutex g_comms_mu;
// Ordered physical GPUs -> one communicator per rank (never destroyed: they live as long as
// the process, like the device allocators).
auto* g_comms = new std::map<std::vector<int>, std::vector<ncclComm_t>>();

StatusOr<std::vector<ncclComm_t>> Communicators(const std::vector<int>& ordinals) {
  std::lock_guard<std::mutex> lock(g_comms_mu);
  auto it = g_comms->find(ordinals);
  if (it != g_comms->end()) return it->second;
  std::vector<ncclComm_t> comms(ordinals.size());
  PF_GPU_RETURN_IF_ERROR(
      ordinals[0],
      ncclCommInitAll(comms.data(), static_cast<int>(ordinals.size()), ordinals.data()));
  (*g_comms)[ordinals] = comms;
  return comms;
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
  PF_ASSIGN_OR_RETURN(std::vector<ncclComm_t> comms, Communicators(ordinals));
  const ncclDataType_t type = dtype == DT_DOUBLE ? ncclFloat64 : ncclFloat32;
  PF_GPU_RETURN_IF_ERROR(ordinals[0], ncclGroupStart());
  Status s = Status::OK();
  for (size_t i = 0; i < gpus.size() && s.ok(); ++i) {
    s = cuda::CheckCall(ncclAllReduce(buffers[i], buffers[i], static_cast<size_t>(count), type,
                                      ncclSum, comms[i], gpus[i]->compute_stream()),
                        "ncclAllReduce", ordinals[i], __FILE__, __LINE__);
  }
  // The group must be closed even when a call in it failed.
  Status end = cuda::CheckCall(ncclGroupEnd(), "ncclGroupEnd", ordinals[0], __FILE__, __LINE__);
  return s.ok() ? end : s;
}

}  // namespace pf
