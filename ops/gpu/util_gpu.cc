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
