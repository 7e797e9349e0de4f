// The CUDA-free arithmetic behind the cuDNN wrappers (devices/cuda/gpu_dnn.h): the descriptor
// structs the GPU kernels fill, how an asymmetric padding is split into the symmetric part cuDNN
// takes plus an explicit pad, the dims/strides of cuDNN's 4-D tensor descriptors, and the
// filter layouts. Compiled in every build so tests/devices/gpu_dnn_plan_test.cc runs without a GPU.
//
//   pf::GpuConvDesc d;  // shapes from the op's Validate... helper
//   PF_ASSIGN_OR_RETURN(pf::GpuConvPlan p, pf::PlanGpuConv(d));
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "placeflow/core/dtype.h"
#include "placeflow/core/status.h"

namespace pf {

enum class DnnLayout : int { kNHWC = 0, kNCHW = 1 };

// A (before, after) padding as cuDNN sees it: `common` on both sides by cuDNN, the rest padded
// explicitly into a scratch copy of the input (TensorFlow's approach for SAME with an odd total).
struct DnnPadSplit {
  int common = 0;
  int extra_before = 0;
  int extra_after = 0;
  bool symmetric() const { return extra_before == 0 && extra_after == 0; }
};
inline DnnPadSplit SplitDnnPadding(int before, int after) {
  const int c = before < after ? before : after;
  return {c, before - c, after - c};
}

// A cuDNN 4-D tensor: dims always in N, C, H, W order; strides in elements for the layout.
struct DnnTensor4 {
  int dims[4] = {0, 0, 0, 0};
  int strides[4] = {0, 0, 0, 0};
};
DnnTensor4 MakeDnnTensor4(DnnLayout layout, int n, int c, int h, int w);

// One 2-D convolution (Conv2D, its two backprops, depthwise as groups = in_c). The filter is
// TensorFlow's HWIO [filter_h, filter_w, in_c / groups, out_c] (a depthwise [h, w, in_c, mult]
// filter is the same memory as HWIO [h, w, 1, in_c * mult]).
struct GpuConvDesc {
  DType dtype = DT_FLOAT;
  DnnLayout layout = DnnLayout::kNHWC;
  int64_t batch = 0;
  int64_t in_h = 0, in_w = 0, in_c = 0;
  int64_t out_h = 0, out_w = 0, out_c = 0;
  int64_t filter_h = 0, filter_w = 0;
  int groups = 1;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  auto operator<=>(const GpuConvDesc&) const = default;  // the algorithm cache's key
  std::string ToString() const;
};

// What the cuDNN calls see for a GpuConvDesc.
struct GpuConvPlan {
  DnnPadSplit rows, cols;
  bool explicit_pad = false;  // the input goes through a padded scratch copy
  int padded_h = 0, padded_w = 0;
  DnnTensor4 x;  // the (padded) input
  DnnTensor4 y;  // the output
  // cuDNN filter [k, c, r, s] = [out_c, in_c / groups, filter_h, filter_w], in KRSC memory order
  // for NHWC tensors (filter format CUDNN_TENSOR_NHWC), KCRS for NCHW.
  int k = 0, c = 0, r = 0, s = 0;
  bool filter_krsc = true;
  int64_t filter_elements = 0;
  int64_t padded_x_elements = 0;
};
// Validates the descriptor (positive sizes, groups dividing both channel counts, dims within
// int, output size equal to what cuDNN computes from the split padding).
StatusOr<GpuConvPlan> PlanGpuConv(const GpuConvDesc& d);
// The checks every convolution path shares (PlanGpuConv's, less cuDNN's int limit): the direct
// kernels index in int64 and take any size. InvalidArgument for bad sizes, Unimplemented for a
// dtype no GPU path has.
Status ValidateGpuConv(const GpuConvDesc& d);

// How a convolution runs, tried in this order until one works (decided once per GPU, math mode,
// direction and GpuConvDesc, and cached with the cuDNN algorithm):
//   kCudnn           cuDNN in the requested layout;
//   kCudnnNchw       NHWC only: cuDNN on NCHW copies (transposed on the GPU, fused with the
//                    explicit padding) -- cuDNN 9 has few NHWC algorithms, for double almost none;
//   kDirect          plain CUDA kernels (devices/cuda/gpu_dnn_conv.cu): every dtype, layout,
//                    stride, dilation, padding and group count the CPU kernels accept, slow.
enum class GpuConvPath : int { kCudnn = 0, kCudnnNchw = 1, kDirect = 2 };
enum class GpuConvDirection : int { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };
const char* GpuConvDirectionName(GpuConvDirection dir);  // "forward", "backward data", ...

// The paths to try for `d`, in order.
std::vector<GpuConvPath> GpuConvCandidates(const GpuConvDesc& d);
// The same under PF_GPU_CONV_PATH (`forced`), which tests and benchmarks set to exercise the
// fallbacks on a GPU where cuDNN would not need them: "" or "auto": as above; "nchw": NHWC
// convolutions skip cuDNN in NHWC (NCHW ones are unchanged); "direct": the direct kernels only.
// Anything else is InvalidArgument.
StatusOr<std::vector<GpuConvPath>> GpuConvCandidates(const GpuConvDesc& d, std::string_view forced);
// The layout the cuDNN calls of `path` use for `d` (the direct kernels: d's own).
DnnLayout GpuConvPathLayout(const GpuConvDesc& d, GpuConvPath path);
// "cudnn NHWC", "cudnn NCHW", "cudnn NCHW via transpose", "direct kernel".
std::string GpuConvPathName(const GpuConvDesc& d, GpuConvPath path);
// What the step trace shows for one run: "conv backward data: cudnn NCHW via transpose
// algo=IMPLICIT_GEMM" (the algorithm only for cuDNN paths; empty `algo`: none shown).
std::string GpuConvTraceLabel(GpuConvDirection dir, const GpuConvDesc& d, GpuConvPath path,
                              std::string_view algo);

// Whether a failed path gives way to the next: Unimplemented (no algorithm fits, cuDNN's
// NOT_SUPPORTED or BAD_PARAM for this configuration, sizes past cuDNN's int descriptors) does;
// any other error (out of memory, a CUDA fault) is the call's own.
bool GpuConvFallsThrough(const Status& s);

// The path that worked and why the ones before it did not ("cudnn NHWC: <message>", one per
// line; empty when the first worked).
struct GpuConvPathChoice {
  GpuConvPath path = GpuConvPath::kCudnn;
  std::string skipped;
};
// Calls try_path(p) for each candidate in order: the first OK wins; an error that
// GpuConvFallsThrough accepts moves on; any other is returned as is. When every candidate
// falls through, Unimplemented naming each one's reason.
StatusOr<GpuConvPathChoice> ChooseGpuConvPath(const std::vector<GpuConvPath>& candidates,
                                              const GpuConvDesc& d,
                                              const std::function<Status(GpuConvPath)>& try_path);

// MaxPool / AvgPool and their gradients. Average pooling divides by the number of in-bounds
// elements (TensorFlow's SAME semantics).
struct GpuPoolDesc {
  DType dtype = DT_FLOAT;
  DnnLayout layout = DnnLayout::kNHWC;
  bool max = true;
  int64_t batch = 0, channels = 0;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int window_h = 1, window_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  std::string ToString() const;
};

// How a pooling runs: cuDNN on the (for max pooling: -inf padded) input, or, for an average
// pooling whose padding is asymmetric, a direct kernel (explicit zeros would be counted).
struct GpuPoolPlan {
  DnnPadSplit rows, cols;
  bool explicit_pad = false;  // max pooling through a -inf padded scratch copy
  bool direct_avg = false;    // average pooling with asymmetric padding: direct kernels
  int padded_h = 0, padded_w = 0;
  DnnTensor4 x, y;
  int64_t padded_x_elements = 0;
};
StatusOr<GpuPoolPlan> PlanGpuPool(const GpuPoolDesc& d);

// FusedBatchNorm / FusedBatchNormGrad, spatial (per channel) statistics.
struct GpuBatchNormDesc {
  DType dtype = DT_FLOAT;  // of x, y and of scale, offset, mean, variance (cuDNN's rule)
  DnnLayout layout = DnnLayout::kNHWC;
  int64_t batch = 0, height = 0, width = 0, channels = 0;
  double epsilon = 1e-3;
  std::string ToString() const;
};
StatusOr<DnnTensor4> PlanGpuBatchNorm(const GpuBatchNormDesc& d);
// cuDNN's minimum epsilon (CUDNN_BN_MIN_EPSILON, 0 in cuDNN 9; 1e-5 in cuDNN < 8): TensorFlow
// clamps to it, so do the wrappers.
double ClampBatchNormEpsilon(double epsilon, double cudnn_min);

}  // namespace pf
