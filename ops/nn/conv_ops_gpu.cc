// GPU kernels of the convolution ops (conv_ops.cc): Conv2D, DepthwiseConv2dNative and their
// backprops, on cuDNN through devices/cuda/gpu_dnn.h. The checks and the padding arithmetic are
// the CPU kernels' (ParseConvSpec, ValidateConv2D*, ConvParams in conv_ops.h); ConvParams maps
// one to one onto GpuConvDesc (TensorFlow's HWIO filter and its (before, after) padding; the
// wrappers transpose the filter and split an asymmetric padding). Depthwise is a grouped
// convolution with groups = in_depth: its [h, w, in_depth, multiplier] filter is the same
// memory as HWIO [h, w, 1, in_depth * multiplier]. input_sizes / filter_sizes are HostMemory.
// What cuDNN cannot run falls back to NCHW copies or direct kernels inside the wrappers; the
// step trace's label says which ran.
#include <climits>
#include <string>

#include "placeflow/devices/cuda/gpu_dnn.h"
#include "placeflow/ops/array/array_launch.h"
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/nn/conv_ops.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

enum class ConvDir { kForward, kBackwardData, kBackwardFilter };

// cuDNN's descriptors take int; a value past INT_MAX would wrap silently in the cast.
Status CheckInts(const ConvSpec& spec, const ConvParams& p) {
  for (int64_t v : {p.groups, p.stride_rows, p.stride_cols, p.dilation_rows, p.dilation_cols,
                    p.pad_top, p.pad_bottom, p.pad_left, p.pad_right}) {
    if (v > INT_MAX) {
      return errors::Unimplemented(spec.op, ": strides, dilations, paddings and groups past ",
                                   INT_MAX, " are not supported on the GPU");
    }
  }
  return Status::OK();
}

GpuConvDesc ConvDesc(DType dtype, const ConvParams& p) {
  GpuConvDesc d;
  d.dtype = dtype;
  d.layout = p.nchw ? DnnLayout::kNCHW : DnnLayout::kNHWC;
  d.batch = p.batch;
  d.in_h = p.in_rows;
  d.in_w = p.in_cols;
  d.in_c = p.in_depth;
  d.out_h = p.out_rows;
  d.out_w = p.out_cols;
  d.out_c = p.out_depth;
  d.filter_h = p.filter_rows;
  d.filter_w = p.filter_cols;
  d.groups = static_cast<int>(p.groups);
  d.stride_h = static_cast<int>(p.stride_rows);
  d.stride_w = static_cast<int>(p.stride_cols);
  d.dilation_h = static_cast<int>(p.dilation_rows);
  d.dilation_w = static_cast<int>(p.dilation_cols);
  // TensorFlow's padding, not PadBottomExact: cuDNN's output size floors like TensorFlow's, so
  // trailing rows no window reaches need no negative padding (PlanGpuConv checks the sizes).
  d.pad_top = static_cast<int>(p.pad_top);
  d.pad_bottom = static_cast<int>(p.pad_bottom);
  d.pad_left = static_cast<int>(p.pad_left);
  d.pad_right = static_cast<int>(p.pad_right);
  return d;
}

template <typename T, ConvKind kKind, ConvDir kDir>
class ConvGpuOp : public GpuOpKernel {
 public:
  explicit ConvGpuOp(const Node& n)
      : GpuOpKernel(n), spec_(ParseConvSpec(n.op(), n.attrs(), kKind)) {}

  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    if (!spec_.ok()) return spec_.status();
    const ConvSpec& spec = *spec_;
    ConvParams p;
    const Tensor *input = nullptr, *filter = nullptr, *dy = nullptr;
    if constexpr (kDir == ConvDir::kForward) {
      input = &ctx->input(0);
      filter = &ctx->input(1);
      PF_RETURN_IF_ERROR(ValidateConv2D(spec, input->shape(), filter->shape(), &p));
    } else if constexpr (kDir == ConvDir::kBackwardData) {
      PF_ASSIGN_OR_RETURN(Shape sizes, ConvSizesShape(spec, "input_sizes", ctx->input(0)));
      filter = &ctx->input(1);
      dy = &ctx->input(2);
      PF_RETURN_IF_ERROR(ValidateConv2DBackprop(spec, sizes, filter->shape(), dy->shape(), &p));
    } else {
      input = &ctx->input(0);
      PF_ASSIGN_OR_RETURN(Shape sizes, ConvSizesShape(spec, "filter_sizes", ctx->input(1)));
      dy = &ctx->input(2);
      PF_RETURN_IF_ERROR(ValidateConv2DBackprop(spec, input->shape(), sizes, dy->shape(), &p));
    }
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t out_size = out->num_elements();
    if (out_size == 0) return Status::OK();
    // A sum over nothing (no channels, an empty batch, no output positions) is zero, as on the
    // CPU; cuDNN refuses zero-sized descriptors, so this never reaches it.
    for (const Tensor* t : {input, filter, dy}) {
      if (t != nullptr && t->num_elements() == 0) {
        gpu::Fill<T>(out->data<T>(), out_size, T(0), nullptr, gpu->compute_stream());
        return Status::OK();
      }
    }
    PF_RETURN_IF_ERROR(CheckInts(spec, p));
    const GpuConvDesc d = ConvDesc(DataTypeOf<T>(), p);
    // A traced step shows which path ran: cuDNN as asked, through NCHW copies, or direct.
    std::string* label = ctx->trace_label();
    if constexpr (kDir == ConvDir::kForward) {
      return GpuConvForward(gpu, d, input->raw_data(), filter->raw_data(), out->raw_data(), label);
    } else if constexpr (kDir == ConvDir::kBackwardData) {
      return GpuConvBackwardData(gpu, d, filter->raw_data(), dy->raw_data(), out->raw_data(),
                                 label);
    } else {
      return GpuConvBackwardFilter(gpu, d, input->raw_data(), dy->raw_data(), out->raw_data(),
                                   label);
    }
  }

 private:
  StatusOr<ConvSpec> spec_;
};

#define PF_CONV_GPU_KERNELS(op, kind, dir, ...)                       \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT) __VA_ARGS__,                   \
                     ConvGpuOp<float, ConvKind::kind, ConvDir::dir>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE) __VA_ARGS__,                  \
                     ConvGpuOp<double, ConvKind::kind, ConvDir::dir>)

PF_CONV_GPU_KERNELS("Conv2D", kConv2D, kForward);
PF_CONV_GPU_KERNELS("Conv2DBackpropInput", kConv2D, kBackwardData, .HostMemory("input_sizes"));
PF_CONV_GPU_KERNELS("Conv2DBackpropFilter", kConv2D, kBackwardFilter, .HostMemory("filter_sizes"));
PF_CONV_GPU_KERNELS("DepthwiseConv2dNative", kDepthwise, kForward);
PF_CONV_GPU_KERNELS("DepthwiseConv2dNativeBackpropInput", kDepthwise, kBackwardData,
                    .HostMemory("input_sizes"));
PF_CONV_GPU_KERNELS("DepthwiseConv2dNativeBackpropFilter", kDepthwise, kBackwardFilter,
                    .HostMemory("filter_sizes"));

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_CONV_GPU_KERNELS
