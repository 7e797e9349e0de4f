#include "placeflow/devices/gpu_dnn_plan.h"

#include <fmt/format.h>

#include <climits>
#include <iterator>

namespace pf {
namespace {

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string s;
  (fmt::format_to(std::back_inserter(s), "{}", args), ...);
  return s;
}

const char* LayoutName(DnnLayout l) { return l == DnnLayout::kNHWC ? "NHWC" : "NCHW"; }

// cuDNN's legacy descriptors take int dims; a tensor past 2^31 elements is refused up front.
bool FitsInt(int64_t elements) { return elements >= 0 && elements <= INT_MAX; }

// cuDNN's output size along one axis (cudnnGetConvolution2dForwardOutputDim's formula).
int64_t CudnnOutDim(int64_t in, int pad_each_side, int64_t window, int stride, int dilation) {
  const int64_t eff = (window - 1) * dilation + 1;
  return (in + 2 * pad_each_side - eff) / stride + 1;
}

}  // namespace

DnnTensor4 MakeDnnTensor4(DnnLayout layout, int n, int c, int h, int w) {
  DnnTensor4 t;
  t.dims[0] = n;
  t.dims[1] = c;
  t.dims[2] = h;
  t.dims[3] = w;
  if (layout == DnnLayout::kNHWC) {
    t.strides[1] = 1;
    t.strides[3] = c;
    t.strides[2] = w * c;
    t.strides[0] = h * w * c;
  } else {
    t.strides[3] = 1;
    t.strides[2] = w;
    t.strides[1] = h * w;
    t.strides[0] = c * h * w;
  }
  return t;
}

std::string GpuConvDesc::ToString() const {
  return StrCat(DTypeName(dtype), " ", LayoutName(layout), " input [", batch, ",", in_h, ",", in_w,
                ",", in_c, "] filter [", filter_h, ",", filter_w, ",",
                groups > 0 ? in_c / groups : 0, ",", out_c, "] output [", batch, ",", out_h, ",",
                out_w, ",", out_c, "] groups ", groups, " strides [", stride_h, ",", stride_w,
                "] dilations [", dilation_h, ",", dilation_w, "] padding [", pad_top, ",",
                pad_bottom, ",", pad_left, ",", pad_right, "] (dims in N,H,W,C order)");
}

std::string GpuPoolDesc::ToString() const {
  return StrCat(max ? "max" : "avg", " pooling ", DTypeName(dtype), " ", LayoutName(layout),
                " input [", batch, ",", in_h, ",", in_w, ",", channels, "] output [", batch, ",",
                out_h, ",", out_w, ",", channels, "] window [", window_h, ",", window_w,
                "] strides [", stride_h, ",", stride_w, "] padding [", pad_top, ",", pad_bottom,
                ",", pad_left, ",", pad_right, "] (dims in N,H,W,C order)");
}

std::string GpuBatchNormDesc::ToString() const {
  return StrCat("batch norm ", DTypeName(dtype), " ", LayoutName(layout), " x [", batch, ",",
                height, ",", width, ",", channels, "] (N,H,W,C) epsilon ", epsilon);
}

Status ValidateGpuConv(const GpuConvDesc& d) {
  if (d.dtype != DT_FLOAT && d.dtype != DT_DOUBLE) {
    return errors::Unimplemented("GPU convolution: no ", DTypeName(d.dtype),
                                 " support: ", d.ToString());
  }
  if (d.batch < 0 || d.in_h <= 0 || d.in_w <= 0 || d.in_c <= 0 || d.out_h < 0 || d.out_w < 0 ||
      d.out_c <= 0 || d.filter_h <= 0 || d.filter_w <= 0 || d.groups <= 0 || d.stride_h <= 0 ||
      d.stride_w <= 0 || d.dilation_h <= 0 || d.dilation_w <= 0 || d.pad_top < 0 ||
      d.pad_bottom < 0 || d.pad_left < 0 || d.pad_right < 0) {
    return errors::InvalidArgument("GPU convolution: bad sizes: ", d.ToString());
  }
  if (d.in_c % d.groups != 0 || d.out_c % d.groups != 0) {
    return errors::InvalidArgument("GPU convolution: groups ", d.groups,
                                   " must divide the input and output channels: ", d.ToString());
  }
  // The split (PlanGpuConv) pads explicitly by the difference and symmetrically by the rest:
  // the same total, so the same output size.
  const int64_t oh =
      CudnnOutDim(d.in_h + d.pad_top + d.pad_bottom, 0, d.filter_h, d.stride_h, d.dilation_h);
  const int64_t ow =
      CudnnOutDim(d.in_w + d.pad_left + d.pad_right, 0, d.filter_w, d.stride_w, d.dilation_w);
  if (oh != d.out_h || ow != d.out_w) {
    return errors::InvalidArgument("GPU convolution: the output is [", d.out_h, ",", d.out_w,
                                   "] but this padding gives [", oh, ",", ow, "]: ", d.ToString());
  }
  return Status::OK();
}

StatusOr<GpuConvPlan> PlanGpuConv(const GpuConvDesc& d) {
  PF_RETURN_IF_ERROR(ValidateGpuConv(d));
  GpuConvPlan p;
  p.rows = SplitDnnPadding(d.pad_top, d.pad_bottom);
  p.cols = SplitDnnPadding(d.pad_left, d.pad_right);
  p.explicit_pad = !p.rows.symmetric() || !p.cols.symmetric();
  const int64_t ph = d.in_h + p.rows.extra_before + p.rows.extra_after;
  const int64_t pw = d.in_w + p.cols.extra_before + p.cols.extra_after;
  const int64_t x_elems = d.batch * ph * pw * d.in_c;
  const int64_t y_elems = d.batch * d.out_h * d.out_w * d.out_c;
  const int64_t f_elems = d.filter_h * d.filter_w * (d.in_c / d.groups) * d.out_c;
  if (!FitsInt(x_elems) || !FitsInt(y_elems) || !FitsInt(f_elems)) {
    return errors::Unimplemented("cuDNN convolution: tensors past 2^31 elements: ", d.ToString());
  }
  p.padded_h = static_cast<int>(ph);
  p.padded_w = static_cast<int>(pw);
  p.padded_x_elements = x_elems;
  const int n = static_cast<int>(d.batch);
  p.x = MakeDnnTensor4(d.layout, n, static_cast<int>(d.in_c), p.padded_h, p.padded_w);
  p.y = MakeDnnTensor4(d.layout, n, static_cast<int>(d.out_c), static_cast<int>(d.out_h),
                       static_cast<int>(d.out_w));
  p.k = static_cast<int>(d.out_c);
  p.c = static_cast<int>(d.in_c / d.groups);
  p.r = static_cast<int>(d.filter_h);
  p.s = static_cast<int>(d.filter_w);
  p.filter_krsc = d.layout == DnnLayout::kNHWC;
  p.filter_elements = f_elems;
  return p;
}

const char* GpuConvDirectionName(GpuConvDirection dir) {
  switch (dir) {
    case GpuConvDirection::kForward:
      return "forward";
    case GpuConvDirection::kBackwardData:
      return "backward data";
    case GpuConvDirection::kBackwardFilter:
      return "backward filter";
  }
  return "?";
}

std::vector<GpuConvPath> GpuConvCandidates(const GpuConvDesc& d) {
  // NCHW is cuDNN's native layout: were it to fail there, NHWC would not do better.
  if (d.layout == DnnLayout::kNHWC) {
    return {GpuConvPath::kCudnn, GpuConvPath::kCudnnNchw, GpuConvPath::kDirect};
  }
  return {GpuConvPath::kCudnn, GpuConvPath::kDirect};
}

StatusOr<std::vector<GpuConvPath>> GpuConvCandidates(const GpuConvDesc& d,
                                                     std::string_view forced) {
  std::vector<GpuConvPath> all = GpuConvCandidates(d);
  if (forced.empty() || forced == "auto") return all;
  if (forced == "direct") return std::vector<GpuConvPath>{GpuConvPath::kDirect};
  if (forced == "nchw") {
    if (d.layout == DnnLayout::kNHWC) all.erase(all.begin());  // cuDNN in NHWC
    return all;
  }
  return errors::InvalidArgument("PF_GPU_CONV_PATH must be auto, nchw or direct, not '", forced,
                                 "'");
}

DnnLayout GpuConvPathLayout(const GpuConvDesc& d, GpuConvPath path) {
  return path == GpuConvPath::kCudnnNchw ? DnnLayout::kNCHW : d.layout;
}

std::string GpuConvPathName(const GpuConvDesc& d, GpuConvPath path) {
  switch (path) {
    case GpuConvPath::kCudnn:
      return StrCat("cudnn ", LayoutName(d.layout));
    case GpuConvPath::kCudnnNchw:
      return "cudnn NCHW via transpose";
    case GpuConvPath::kDirect:
      return "direct kernel";
  }
  return "?";
}

std::string GpuConvTraceLabel(GpuConvDirection dir, const GpuConvDesc& d, GpuConvPath path,
                              std::string_view algo) {
  std::string s = StrCat("conv ", GpuConvDirectionName(dir), ": ", GpuConvPathName(d, path));
  if (path != GpuConvPath::kDirect && !algo.empty()) s += StrCat(" algo=", algo);
  return s;
}

bool GpuConvFallsThrough(const Status& s) { return s.code() == Code::kUnimplemented; }

StatusOr<GpuConvPathChoice> ChooseGpuConvPath(const std::vector<GpuConvPath>& candidates,
                                              const GpuConvDesc& d,
                                              const std::function<Status(GpuConvPath)>& try_path) {
  GpuConvPathChoice choice;
  for (GpuConvPath path : candidates) {
    Status s = try_path(path);
    if (s.ok()) {
      choice.path = path;
      return choice;
    }
    if (!GpuConvFallsThrough(s)) return s;
    if (!choice.skipped.empty()) choice.skipped += "\n";
    choice.skipped += StrCat(GpuConvPathName(d, path), ": ", s.message());
  }
  return errors::Unimplemented("GPU convolution: no way to run ", d.ToString(), ":\n",
                               choice.skipped.empty() ? "no path to try" : choice.skipped);
}

StatusOr<GpuPoolPlan> PlanGpuPool(const GpuPoolDesc& d) {
  if (d.dtype != DT_FLOAT && d.dtype != DT_DOUBLE) {
    return errors::Unimplemented("cuDNN pooling: no ", DTypeName(d.dtype),
                                 " support: ", d.ToString());
  }
  if (d.batch < 0 || d.channels <= 0 || d.in_h <= 0 || d.in_w <= 0 || d.out_h < 0 || d.out_w < 0 ||
      d.window_h <= 0 || d.window_w <= 0 || d.stride_h <= 0 || d.stride_w <= 0 || d.pad_top < 0 ||
      d.pad_bottom < 0 || d.pad_left < 0 || d.pad_right < 0) {
    return errors::InvalidArgument("cuDNN pooling: bad sizes: ", d.ToString());
  }
  // A window entirely in the padding has no element to take: the op's shape function never
  // produces one (SAME pads less than a window).
  if (d.pad_top >= d.window_h || d.pad_bottom >= d.window_h || d.pad_left >= d.window_w ||
      d.pad_right >= d.window_w) {
    return errors::InvalidArgument("cuDNN pooling: padding must be smaller than the window: ",
                                   d.ToString());
  }
  GpuPoolPlan p;
  p.rows = SplitDnnPadding(d.pad_top, d.pad_bottom);
  p.cols = SplitDnnPadding(d.pad_left, d.pad_right);
  const bool asymmetric = !p.rows.symmetric() || !p.cols.symmetric();
  p.explicit_pad = asymmetric && d.max;
  p.direct_avg = asymmetric && !d.max;
  const int64_t ph = d.in_h + p.rows.extra_before + p.rows.extra_after;
  const int64_t pw = d.in_w + p.cols.extra_before + p.cols.extra_after;
  const int64_t x_elems = d.batch * d.channels * ph * pw;
  if (!FitsInt(x_elems) || !FitsInt(d.batch * d.channels * d.out_h * d.out_w)) {
    return errors::Unimplemented("cuDNN pooling: tensors past 2^31 elements: ", d.ToString());
  }
  const int64_t oh = CudnnOutDim(ph, p.rows.common, d.window_h, d.stride_h, 1);
  const int64_t ow = CudnnOutDim(pw, p.cols.common, d.window_w, d.stride_w, 1);
  if (oh != d.out_h || ow != d.out_w) {
    return errors::InvalidArgument("cuDNN pooling: the output is [", d.out_h, ",", d.out_w,
                                   "] but this padding gives [", oh, ",", ow, "]: ", d.ToString());
  }
  p.padded_h = static_cast<int>(p.explicit_pad ? ph : d.in_h);
  p.padded_w = static_cast<int>(p.explicit_pad ? pw : d.in_w);
  p.padded_x_elements = d.batch * d.channels * p.padded_h * p.padded_w;
  const int n = static_cast<int>(d.batch), c = static_cast<int>(d.channels);
  p.x = MakeDnnTensor4(d.layout, n, c, p.padded_h, p.padded_w);
  p.y = MakeDnnTensor4(d.layout, n, c, static_cast<int>(d.out_h), static_cast<int>(d.out_w));
  return p;
}

StatusOr<DnnTensor4> PlanGpuBatchNorm(const GpuBatchNormDesc& d) {
  if (d.dtype != DT_FLOAT && d.dtype != DT_DOUBLE) {
    return errors::Unimplemented("cuDNN batch norm: no ", DTypeName(d.dtype),
                                 " support: ", d.ToString());
  }
  if (d.batch < 0 || d.height < 0 || d.width < 0 || d.channels <= 0 || !(d.epsilon >= 0)) {
    return errors::InvalidArgument("cuDNN batch norm: bad sizes or epsilon: ", d.ToString());
  }
  if (!FitsInt(d.batch * d.height * d.width * d.channels)) {
    return errors::Unimplemented("cuDNN batch norm: tensors past 2^31 elements: ", d.ToString());
  }
  return MakeDnnTensor4(d.layout, static_cast<int>(d.batch), static_cast<int>(d.channels),
                        static_cast<int>(d.height), static_cast<int>(d.width));
}

double ClampBatchNormEpsilon(double epsilon, double cudnn_min) {
  return epsilon < cudnn_min ? cudnn_min : epsilon;
}

}  // namespace pf
