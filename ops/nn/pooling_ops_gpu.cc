// GPU kernels of the pooling ops (pooling_ops.cc): MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad
// on cuDNN through devices/cuda/gpu_dnn.h. The checks and the window arithmetic are the CPU
// kernels' (ComputePool2DGeometry, ValidatePoolGrad); Pool2DGeometry maps one to one onto
// GpuPoolDesc. AvgPoolGrad's orig_input_shape is HostMemory: the run-time shape function reads
// it, and the kernel takes the input shape from the inferred output shape, as the CPU does.
//
// Ties in MaxPoolGrad: the CPU sends each gradient to the FIRST maximum of its window (row-major
// window order). The wrappers use CUDNN_POOLING_MAX_DETERMINISTIC, which cuDNN documents only as
// "the maximum value inside the pooling window is used; the algorithm is deterministic": which
// of several equal maxima receives the gradient is not documented, so agreement with the CPU on
// ties is unverified (the conformance cases' random inputs have none; docs/gpu.md).
#include <climits>

#include "placeflow/devices/cuda/gpu_dnn.h"
#include "placeflow/ops/array/array_launch.h"
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/nn/pooling_ops.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

StatusOr<GpuPoolDesc> PoolDesc(std::string_view op, DType dtype, bool max,
                               const Pool2DGeometry& g) {
  for (int64_t v : {g.h.window, g.w.window, g.h.stride, g.w.stride, g.h.pad_before, g.h.pad_after,
                    g.w.pad_before, g.w.pad_after}) {
    if (v > INT_MAX) {  // cuDNN takes int; the cast would wrap
      return errors::Unimplemented(op, ": windows, strides and paddings past ", INT_MAX,
                                   " are not supported on the GPU");
    }
  }
  GpuPoolDesc d;
  d.dtype = dtype;
  d.layout = g.nchw ? DnnLayout::kNCHW : DnnLayout::kNHWC;
  d.max = max;
  d.batch = g.batch;
  d.channels = g.channels;
  d.in_h = g.h.in;
  d.in_w = g.w.in;
  d.out_h = g.h.out;
  d.out_w = g.w.out;
  d.window_h = static_cast<int>(g.h.window);
  d.window_w = static_cast<int>(g.w.window);
  d.stride_h = static_cast<int>(g.h.stride);
  d.stride_w = static_cast<int>(g.w.stride);
  d.pad_top = static_cast<int>(g.h.pad_before);
  d.pad_bottom = static_cast<int>(g.h.pad_after);
  d.pad_left = static_cast<int>(g.w.pad_before);
  d.pad_right = static_cast<int>(g.w.pad_after);
  return d;
}

template <typename T, bool kMax>
class PoolGpuOp : public GpuOpKernel {
 public:
  explicit PoolGpuOp(const Node& n) : GpuOpKernel(n), attrs_(ReadPoolAttrs(n)) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& x = ctx->input(0);
    Pool2DGeometry g;
    PF_RETURN_IF_ERROR(ComputePool2DGeometry(node().op(), x.shape(), attrs_, &g));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    // An empty output is the only empty case: an empty input gives an empty output.
    if (out->num_elements() == 0) return Status::OK();
    PF_ASSIGN_OR_RETURN(GpuPoolDesc d, PoolDesc(node().op(), DataTypeOf<T>(), kMax, g));
    return GpuPoolForward(gpu, d, x.raw_data(), out->raw_data());
  }

 private:
  PoolAttrs attrs_;
};

// The gradient of an empty forward output (a VALID window larger than the input, no batch, no
// channels) is zero; cuDNN is never given the empty descriptor.
template <typename T>
bool ZeroIfNoWindow(const Tensor& dy, Tensor* dx, GpuDevice* gpu) {
  if (dy.num_elements() != 0) return false;
  gpu::Fill<T>(dx->data<T>(), dx->num_elements(), T(0), nullptr, gpu->compute_stream());
  return true;
}

// MaxPoolGrad(orig_input, orig_output, grad).
template <typename T>
class MaxPoolGradGpuOp : public GpuOpKernel {
 public:
  explicit MaxPoolGradGpuOp(const Node& n) : GpuOpKernel(n), attrs_(ReadPoolAttrs(n)) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    Pool2DGeometry g;
    PF_RETURN_IF_ERROR(ComputePool2DGeometry("MaxPoolGrad", x.shape(), attrs_, &g));
    PF_RETURN_IF_ERROR(ValidatePoolGrad("MaxPoolGrad", g, y.shape(), "orig_output"));
    PF_RETURN_IF_ERROR(ValidatePoolGrad("MaxPoolGrad", g, dy.shape(), "grad"));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (out->num_elements() == 0 || ZeroIfNoWindow<T>(dy, out, gpu)) return Status::OK();
    PF_ASSIGN_OR_RETURN(GpuPoolDesc d, PoolDesc("MaxPoolGrad", DataTypeOf<T>(), true, g));
    return GpuPoolBackward(gpu, d, x.raw_data(), y.raw_data(), dy.raw_data(), out->raw_data());
  }

 private:
  PoolAttrs attrs_;
};

// AvgPoolGrad(orig_input_shape, grad).
template <typename T>
class AvgPoolGradGpuOp : public GpuOpKernel {
 public:
  explicit AvgPoolGradGpuOp(const Node& n) : GpuOpKernel(n), attrs_(ReadPoolAttrs(n)) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& dy = ctx->input(1);
    Pool2DGeometry g;
    PF_RETURN_IF_ERROR(ComputePool2DGeometry("AvgPoolGrad", ctx->output_shape(0), attrs_, &g));
    PF_RETURN_IF_ERROR(ValidatePoolGrad("AvgPoolGrad", g, dy.shape(), "grad"));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (out->num_elements() == 0 || ZeroIfNoWindow<T>(dy, out, gpu)) return Status::OK();
    PF_ASSIGN_OR_RETURN(GpuPoolDesc d, PoolDesc("AvgPoolGrad", DataTypeOf<T>(), false, g));
    // Average pooling's gradient needs neither the forward input nor its output.
    return GpuPoolBackward(gpu, d, nullptr, nullptr, dy.raw_data(), out->raw_data());
  }

 private:
  PoolAttrs attrs_;
};

#define PF_POOL_GPU_KERNELS(T)                                                           \
  PF_REGISTER_KERNEL(Gpu("MaxPool", DataTypeOf<T>()), PoolGpuOp<T, true>);               \
  PF_REGISTER_KERNEL(Gpu("AvgPool", DataTypeOf<T>()), PoolGpuOp<T, false>);              \
  PF_REGISTER_KERNEL(Gpu("MaxPoolGrad", DataTypeOf<T>()), MaxPoolGradGpuOp<T>);          \
  PF_REGISTER_KERNEL(Gpu("AvgPoolGrad", DataTypeOf<T>()).HostMemory("orig_input_shape"), \
                     AvgPoolGradGpuOp<T>)
PF_POOL_GPU_KERNELS(float);
PF_POOL_GPU_KERNELS(double);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_POOL_GPU_KERNELS
