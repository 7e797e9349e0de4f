// Which GPU devices a session gets, TensorFlow's way: `visible_device_list` picks and orders
// physical GPUs ("1,0": GPU:0 is physical 1), logical devices split one physical GPU into
// several (numbered consecutively, a physical GPU's logical devices together), and
// device_count["GPU"] caps the total. Pure, so it is tested without GPUs.
//
//   pf::GpuOptions o;  o.visible_device_list = "1";  o.logical_devices_memory_mb = {{4096, 4096}};
//   auto plan = pf::PlanGpuDevices(/*physical_count=*/2, o);   // GPU:0 and GPU:1 on physical 1
#pragma once

#include <string>
#include <vector>

#include "placeflow/core/status.h"

namespace pf {

struct GpuOptions {
  std::string visible_device_list;  // "" = every physical GPU in order
  // One entry per visible GPU: the memory (MiB) of each logical device it is split into. Empty:
  // one device per GPU using all its memory.
  std::vector<std::vector<double>> logical_devices_memory_mb;
  int max_count = -1;  // device_count["GPU"]; -1 = no cap
  // Memory: false (TensorFlow's default) takes the device's memory limit at the first
  // allocation; true grows the caching allocator on demand.
  bool allow_growth = false;
  // Fraction of the GPU's total memory a device may use; 0 = the free memory less a reserve.
  double per_process_gpu_memory_fraction = 0;
  // cuBLAS may use TF32 tensor cores for float32 GEMMs (faster, ~1e-3 relative error).
  bool allow_tf32 = false;
  // cuBLAS's CUBLAS_PEDANTIC_MATH (no reduced-precision reductions; the GPU tests force it with
  // PF_CUBLAS_PEDANTIC=1 to match the CPU at 1e-5). Ignored with allow_tf32.
  bool pedantic_math = false;
};

struct GpuDevicePlan {
  int id;            // the TensorFlow id: /device:GPU:<id>
  int physical_id;   // the CUDA ordinal
  double memory_mb;  // 0 = all of the GPU's memory
};

StatusOr<std::vector<GpuDevicePlan>> PlanGpuDevices(int physical_count, const GpuOptions& options);

// `configured`, unless PF_FORCE_GPU_ALLOW_GROWTH is "true" or "false" (TensorFlow's
// TF_FORCE_GPU_ALLOW_GROWTH): processes sharing a GPU (the gpu tests) then grow their
// allocators on demand instead of each taking most of the memory. Other values are logged and
// ignored.
bool AllowGrowthFromEnv(bool configured);

}  // namespace pf
