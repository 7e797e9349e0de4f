// Host-side helpers for the GPU kernels that reduce (CUDA builds only): the reductions
// (reduction_ops_gpu.cc), SumToShape and ReduceGrad (grad_ops_gpu.cc), BiasAddGrad
// (ops/nn/nn_ops_gpu.cc) and the losses (ops/nn/loss_ops_gpu.cc):
//
//   std::vector<bool> reduced(g.rank(), true);
//   reduced.back() = false;  // BiasAddGrad: sum over every dim but the last
//   return LaunchReduce<T>(gpu, gpu::ReduceFn::kSum, g, reduced, /*mean=*/false, out);
#pragma once

#include <vector>

#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/math/reduction_launch.h"

namespace pf {

// The device-side plan of reducing `in` over the dims marked in `reduced`.
StatusOr<gpu::ReduceDims> GpuReduce(const Shape& in, const std::vector<bool>& reduced);

// Enqueues out = R(in) over the dims marked in `reduced` (mean: divided by the count).
template <typename T>
Status LaunchReduce(GpuDevice* gpu, gpu::ReduceFn f, const Tensor& in,
                    const std::vector<bool>& reduced, bool mean, Tensor* out) {
  PF_ASSIGN_OR_RETURN(gpu::ReduceDims d, GpuReduce(in.shape(), reduced));
  const int64_t divisor = mean && d.num_reduced > 0 ? d.num_reduced : 1;
  gpu::Reduce<T>(f, in.data<T>(), out->data<T>(), d, divisor, gpu->compute_stream());
  return Status::OK();
}

}  // namespace pf
