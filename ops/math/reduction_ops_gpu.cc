// GPU kernels for the reductions (device code in reduction_ops.cu): Sum Mean Max Min, ArgMax and
// AddN, with the checks of reduction_ops.h that the CPU kernels make.
#include "placeflow/ops/math/reduction_gpu.h"
#include "placeflow/ops/math/reduction_ops.h"
#include "placeflow/ops/ops.h"

namespace pf {

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

namespace {

template <typename T, gpu::ReduceFn F, bool kMean>
class ReduceGpuOp : public GpuOpKernel {
 public:
  explicit ReduceGpuOp(const Node& n)
      : GpuOpKernel(n), axes_(n.attr<std::vector<int64_t>>("axes")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedDims(axes_, in.rank()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    return LaunchReduce<T>(gpu, F, in, reduced, kMean, out);
  }

 private:
  std::vector<int64_t> axes_;
};

template <typename T, typename Index>
class ArgMaxGpuOp : public GpuOpKernel {
 public:
  explicit ArgMaxGpuOp(const Node& n) : GpuOpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(const int axis, ArgMaxAxis(in.shape(), axis_));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= in.dim(d);
    for (int d = axis + 1; d < in.rank(); ++d) inner *= in.dim(d);
    gpu::ArgMax<T, Index>(in.data<T>(), out->data<Index>(), outer, in.dim(axis), inner,
                          gpu->compute_stream());
    return Status::OK();
  }

 private:
  int64_t axis_;
};

template <typename T>
class AddNGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    std::vector<Shape> shapes;
    std::vector<const T*> in;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      shapes.push_back(ctx->input(i).shape());
      in.push_back(ctx->input(i).data<T>());
    }
    PF_RETURN_IF_ERROR(AddNShape(shapes).status());
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::AddN<T>(in.data(), static_cast<int>(in.size()), out->data<T>(), out->num_elements(),
                 gpu->compute_stream());
    return Status::OK();
  }
};

#define PF_GPU_REDUCE(op, F, mean)                                      \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), ReduceGpuOp<float, F, mean>);   \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), ReduceGpuOp<double, F, mean>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_INT32), ReduceGpuOp<int32_t, F, mean>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_INT64), ReduceGpuOp<int64_t, F, mean>)
PF_GPU_REDUCE("Sum", gpu::ReduceFn::kSum, false);
PF_GPU_REDUCE("Mean", gpu::ReduceFn::kSum, true);
PF_GPU_REDUCE("Max", gpu::ReduceFn::kMax, false);
PF_GPU_REDUCE("Min", gpu::ReduceFn::kMin, false);

#define PF_GPU_ARGMAX(T)                                                                       \
  PF_REGISTER_KERNEL(Gpu("ArgMax", DataTypeOf<T>()).TypeConstraint("output_type", {DT_INT32}), \
                     ArgMaxGpuOp<T, int32_t>);                                                 \
  PF_REGISTER_KERNEL(Gpu("ArgMax", DataTypeOf<T>()).TypeConstraint("output_type", {DT_INT64}), \
                     ArgMaxGpuOp<T, int64_t>)
PF_GPU_ARGMAX(float);
PF_GPU_ARGMAX(double);
PF_GPU_ARGMAX(int32_t);
PF_GPU_ARGMAX(int64_t);

PF_REGISTER_KERNEL(Gpu("AddN", DT_FLOAT), AddNGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("AddN", DT_DOUBLE), AddNGpuOp<double>);
PF_REGISTER_KERNEL(Gpu("AddN", DT_INT32), AddNGpuOp<int32_t>);
PF_REGISTER_KERNEL(Gpu("AddN", DT_INT64), AddNGpuOp<int64_t>);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_REDUCE
#undef PF_GPU_ARGMAX
