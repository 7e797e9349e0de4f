#include "placeflow/ops/gpu/gpu_kernel.h"

namespace pf {

StatusOr<gpu::Type> GpuTypeOf(DType t) {
  switch (t) {
    case DT_FLOAT:
      return gpu::Type::kF32;
    case DT_DOUBLE:
      return gpu::Type::kF64;
    case DT_INT32:
      return gpu::Type::kI32;
    case DT_INT64:
      return gpu::Type::kI64;
    case DT_BOOL:
      return gpu::Type::kBool;
    default:
      return errors::Unimplemented("No GPU kernels for dtype ", DTypeName(t));
  }
}

StatusOr<gpu::BroadcastDims> GpuBroadcast(const Shape& a, const Shape& b, const Shape& out) {
  BroadcastPlan p = MakeBroadcastPlan(a, b, out);
  gpu::BroadcastDims d;
  d.same_shape = p.same_shape;
  d.a_scalar = p.a_scalar;
  d.b_scalar = p.b_scalar;
  if (d.same_shape || d.a_scalar || d.b_scalar) return d;
  if (p.out_dims.size() > static_cast<size_t>(gpu::kMaxDims)) {
    return errors::Unimplemented("GPU broadcasting supports up to ", gpu::kMaxDims, " dims, got ",
                                 a.ToString(), " and ", b.ToString());
  }
  d.rank = static_cast<int>(p.out_dims.size());
  for (int i = 0; i < d.rank; ++i) {
    d.dims[i] = p.out_dims[i];
    d.a_strides[i] = p.a_strides[i];
    d.b_strides[i] = p.b_strides[i];
  }
  return d;
}

StatusOr<gpu::ReduceDims> GpuReduce(const Shape& in, const std::vector<bool>& reduced) {
  gpu::ReduceDims d;
  int64_t stride = 1;
  std::vector<std::pair<int64_t, int64_t>> kept, red;  // (size, stride), innermost first
  for (int i = in.rank() - 1; i >= 0; --i) {
    const int64_t n = in.dim(i);
    if (n != 1) {
      auto& group = reduced[i] ? red : kept;
      // Merge with the previous (inner) dim of the same kind when they are contiguous.
      if (!group.empty() && group.back().second * group.back().first == stride) {
        group.back().first *= n;
      } else {
        group.emplace_back(n, stride);
      }
    }
    stride *= n;
  }
  if (kept.size() > static_cast<size_t>(gpu::kMaxDims) ||
      red.size() > static_cast<size_t>(gpu::kMaxDims)) {
    return errors::Unimplemented("GPU reductions support up to ", gpu::kMaxDims, " dims, got ",
                                 in.ToString());
  }
  d.kept_rank = static_cast<int>(kept.size());
  d.reduced_rank = static_cast<int>(red.size());
  for (int i = 0; i < d.kept_rank; ++i) {
    d.kept_dims[i] = kept[d.kept_rank - 1 - i].first;
    d.kept_strides[i] = kept[d.kept_rank - 1 - i].second;
    d.num_out *= d.kept_dims[i];
  }
  for (int i = 0; i < d.reduced_rank; ++i) {
    d.reduced_dims[i] = red[d.reduced_rank - 1 - i].first;
    d.reduced_strides[i] = red[d.reduced_rank - 1 - i].second;
    d.num_reduced *= d.reduced_dims[i];
  }
  if (in.num_elements() == 0) {
    d.num_reduced = 0;
    d.num_out = 1;
    for (int i = 0; i < in.rank(); ++i) {
      if (!reduced[i]) d.num_out *= in.dim(i);
    }
  }
  return d;
}

StatusOr<Tensor> GpuTemp(OpKernelContext* ctx, DType dtype, const Shape& shape) {
  Allocator* a = ctx->device()->GetAllocator();
  Tensor t(a, dtype, shape);
  if (!t.IsInitialized()) {
    const size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
    return errors::ResourceExhausted("OOM when allocating temporary tensor with shape ",
                                     shape.ToString(), " and type ", DTypeName(dtype), " (", bytes,
                                     " bytes) by allocator ", a->Name(), ": ",
                                     a->DescribeFailure(bytes));
  }
  return t;
}

}  // namespace pf
