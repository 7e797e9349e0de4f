// NCCL all-reduce between GPU devices, behind a CUDA-free interface. One communicator set per
// ordered list of physical GPUs, created on first use and finalized and destroyed when the
// last device that used it goes away (GpuDevice's destructor), so a process exits cleanly.
// Collectives of one set are serialised (one group call at a time).
//
//   // Sums `count` elements in place across buffers[i] (on gpus[i]), each on its GPU's compute
//   // stream, as one grouped NCCL call.
//   PF_RETURN_IF_ERROR(pf::NcclAllReduceSum(gpus, buffers, count, pf::DT_FLOAT));
#pragma once

#include <vector>

#include "placeflow/core/dtype.h"
#include "placeflow/core/status.h"
#include "placeflow/devices/cuda/gpu_device.h"

namespace pf {

// NCCL needs one rank per physical GPU: false when two devices share one (logical devices).
bool NcclUsable(const std::vector<GpuDevice*>& gpus);
Status NcclAllReduceSum(const std::vector<GpuDevice*>& gpus, const std::vector<void*>& buffers,
                        int64_t count, DType dtype);
// `gpu` no longer uses any communicator; sets left without users are destroyed.
void NcclReleaseDevice(const GpuDevice* gpu);

}  // namespace pf
