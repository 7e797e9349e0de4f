// Device code behind the cuDNN wrappers (devices/cuda/gpu_dnn.cu, gpu_dnn_conv.cu): filter
// layout changes, explicit padding and cropping, layout changes, average pooling with asymmetric
// padding, the batch-norm pieces cuDNN lacks, and direct convolutions for what cuDNN cannot run.
// Plain declarations plus the index maps and per-element sums, which tests check on the host.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define PF_DNN_HD __host__ __device__
#else
#define PF_DNN_HD
#endif

struct CUstream_st;

namespace pf::dnn {

enum class DType : int { kF32 = 0, kF64 = 1 };

#ifdef __CUDACC__
// A grid-stride loop over [0, n) with 64-bit indices (the .cu files' element loops).
#define PF_DNN_LOOP(i, n)                                                                \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
#endif

// Runs KERNEL (a launch written with a type T) for the dtype `t`: double or float.
#define PF_DNN_DISPATCH(t, KERNEL) \
  if ((t) == DType::kF64) {        \
    using T = double;              \
    KERNEL;                        \
  } else {                         \
    using T = float;               \
    KERNEL;                        \
  }

// TensorFlow's HWIO filter [R, S, C, K] (C = in_c / groups) and cuDNN's [K, C, R, S] filter in
// KRSC (NHWC filter format) or KCRS (NCHW) memory order: the offset of element (r, s, c, k).
PF_DNN_HD inline int64_t HwioOffset(int64_t r, int64_t s, int64_t c, int64_t k, int64_t S,
                                    int64_t C, int64_t K) {
  return ((r * S + s) * C + c) * K + k;
}
PF_DNN_HD inline int64_t CudnnFilterOffset(bool krsc, int64_t r, int64_t s, int64_t c, int64_t k,
                                           int64_t R, int64_t S, int64_t C) {
  return krsc ? ((k * R + r) * S + s) * C + c : ((k * C + c) * R + r) * S + s;
}
// Decodes a cuDNN filter offset back into (r, s, c, k).
PF_DNN_HD inline void DecodeCudnnFilter(bool krsc, int64_t i, int64_t R, int64_t S, int64_t C,
                                        int64_t* r, int64_t* s, int64_t* c, int64_t* k) {
  if (krsc) {
    *c = i % C;
    i /= C;
    *s = i % S;
    i /= S;
    *r = i % R;
    *k = i / R;
  } else {
    *s = i % S;
    i /= S;
    *r = i % R;
    i /= R;
    *c = i % C;
    *k = i / C;
  }
}

// The offset of (n, c, h, w) in a packed NHWC (nhwc) or NCHW tensor of dims [N, C, H, W].
PF_DNN_HD inline int64_t Offset4(bool nhwc, int64_t n, int64_t c, int64_t h, int64_t w, int64_t C,
                                 int64_t H, int64_t W) {
  return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

// The input rows [lo, hi) output row o's pooling window covers, clipped to the input.
PF_DNN_HD inline void Window(int64_t o, int stride, int pad, int window, int64_t size, int64_t* lo,
                             int64_t* hi) {
  const int64_t start = o * stride - pad;
  *lo = start < 0 ? 0 : start;
  *hi = start + window < size ? start + window : size;
}
// The output rows [lo, hi) whose window covers input row h (o*stride - pad <= h and
// h < o*stride - pad + window), clipped to the `out` rows.
PF_DNN_HD inline void Covering(int64_t h, int stride, int pad, int window, int64_t out, int64_t* lo,
                               int64_t* hi) {
  const int64_t a = h + pad - window + 1;
  *lo = a <= 0 ? 0 : (a + stride - 1) / stride;
  const int64_t u = (h + pad) / stride + 1;
  *hi = u < out ? u : out;
}

struct Dims4 {
  int64_t n, c, h, w;
};

// Decodes a packed NHWC (nhwc) or NCHW offset into (n, c, h, w) of a tensor of dims `d`.
PF_DNN_HD inline void DecodeOffset4(bool nhwc, int64_t i, const Dims4& d, int64_t* n, int64_t* c,
                                    int64_t* h, int64_t* w) {
  if (nhwc) {
    *c = i % d.c;
    i /= d.c;
    *w = i % d.w;
    i /= d.w;
    *h = i % d.h;
    *n = i / d.h;
  } else {
    *w = i % d.w;
    i /= d.w;
    *h = i % d.h;
    i /= d.h;
    *c = i % d.c;
    *n = i / d.c;
  }
}

// Relayout4's map: the offset in `src` that dst element (n, c, h, w) copies, src(n, c, h + h0,
// w + w0), or -1 where that lies outside src (the padding, filled with zeros).
PF_DNN_HD inline int64_t Relayout4Source(bool src_nhwc, const Dims4& src, int64_t n, int64_t c,
                                         int64_t h, int64_t w, int64_t h0, int64_t w0) {
  const int64_t sh = h + h0, sw = w + w0;
  if (sh < 0 || sh >= src.h || sw < 0 || sw >= src.w) return -1;
  return Offset4(src_nhwc, n, c, sh, sw, src.c, src.h, src.w);
}

// One convolution for the direct kernels (a GpuConvDesc in plain integers): x [n, in_c, in_h,
// in_w] and y [n, out_c, out_h, out_w] in NHWC or NCHW memory order, the filter TensorFlow's
// HWIO [filter_h, filter_w, in_c / groups, out_c]. Output channel k belongs to group
// k / (out_c / groups), which reads input channels [g * in_c / groups, (g + 1) * in_c / groups).
// Only the leading padding matters: rows past the last window are never read.
struct ConvGeom {
  int64_t n, in_c, in_h, in_w;
  int64_t out_c, out_h, out_w;
  int64_t filter_h, filter_w, groups;
  int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
};

// y(n, k, oh, ow) = sum over (r, s, c in k's group) of x(n, c, ih, iw) * w(r, s, c, k),
// ih = oh * stride_h - pad_top + r * dilation_h (likewise iw), out-of-range taps being zeros.
template <typename T>
PF_DNN_HD inline T DirectConvForwardAt(bool nhwc, const ConvGeom& g, const T* x, const T* w,
                                       int64_t n, int64_t k, int64_t oh, int64_t ow) {
  const int64_t cg = g.in_c / g.groups, kg = g.out_c / g.groups;
  const int64_t c0 = (k / kg) * cg;
  T sum = 0;
  for (int64_t r = 0; r < g.filter_h; ++r) {
    const int64_t ih = oh * g.stride_h - g.pad_top + r * g.dilation_h;
    if (ih < 0 || ih >= g.in_h) continue;
    for (int64_t s = 0; s < g.filter_w; ++s) {
      const int64_t iw = ow * g.stride_w - g.pad_left + s * g.dilation_w;
      if (iw < 0 || iw >= g.in_w) continue;
      for (int64_t c = 0; c < cg; ++c) {
        sum += x[Offset4(nhwc, n, c0 + c, ih, iw, g.in_c, g.in_h, g.in_w)] *
               w[HwioOffset(r, s, c, k, g.filter_w, cg, g.out_c)];
      }
    }
  }
  return sum;
}

// dx(n, c, ih, iw) = sum over the taps (r, s) and the outputs (oh, ow) of c's group whose window
// reads (ih, iw) of dy(n, k, oh, ow) * w(r, s, c mod in_c / groups, k): a gather, deterministic.
template <typename T>
PF_DNN_HD inline T DirectConvBackwardDataAt(bool nhwc, const ConvGeom& g, const T* w, const T* dy,
                                            int64_t n, int64_t c, int64_t ih, int64_t iw) {
  const int64_t cg = g.in_c / g.groups, kg = g.out_c / g.groups;
  const int64_t k0 = (c / cg) * kg, ci = c % cg;
  T sum = 0;
  for (int64_t r = 0; r < g.filter_h; ++r) {
    const int64_t th = ih + g.pad_top - r * g.dilation_h;  // oh * stride_h when r is a tap of oh
    if (th < 0 || th % g.stride_h != 0 || th / g.stride_h >= g.out_h) continue;
    const int64_t oh = th / g.stride_h;
    for (int64_t s = 0; s < g.filter_w; ++s) {
      const int64_t tw = iw + g.pad_left - s * g.dilation_w;
      if (tw < 0 || tw % g.stride_w != 0 || tw / g.stride_w >= g.out_w) continue;
      const int64_t ow = tw / g.stride_w;
      for (int64_t k = k0; k < k0 + kg; ++k) {
        sum += dy[Offset4(nhwc, n, k, oh, ow, g.out_c, g.out_h, g.out_w)] *
               w[HwioOffset(r, s, ci, k, g.filter_w, cg, g.out_c)];
      }
    }
  }
  return sum;
}

// Part of dw(r, s, c, k) (c within k's group): the sum of x(n, c', ih, iw) * dy(n, k, oh, ow)
// over the output positions j = first, first + step, ... < n * out_h * out_w (j flattens
// (n, oh, ow)); the kernel gives each thread of a block one `first` and adds the parts up.
template <typename T>
PF_DNN_HD inline T DirectConvBackwardFilterPart(bool nhwc, const ConvGeom& g, const T* x,
                                                const T* dy, int64_t r, int64_t s, int64_t c,
                                                int64_t k, int64_t first, int64_t step) {
  const int64_t cg = g.in_c / g.groups, kg = g.out_c / g.groups;
  const int64_t ic = (k / kg) * cg + c;
  const int64_t total = g.n * g.out_h * g.out_w;
  T sum = 0;
  for (int64_t j = first; j < total; j += step) {
    const int64_t ow = j % g.out_w, oh = (j / g.out_w) % g.out_h, n = j / (g.out_w * g.out_h);
    const int64_t ih = oh * g.stride_h - g.pad_top + r * g.dilation_h;
    const int64_t iw = ow * g.stride_w - g.pad_left + s * g.dilation_w;
    if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) continue;
    sum += x[Offset4(nhwc, n, ic, ih, iw, g.in_c, g.in_h, g.in_w)] *
           dy[Offset4(nhwc, n, k, oh, ow, g.out_c, g.out_h, g.out_w)];
  }
  return sum;
}

// HWIO -> cuDNN filter (to_cudnn) or back.
void LaunchFilterTransform(DType t, bool to_cudnn, bool krsc, const void* src, void* dst, int R,
                           int S, int C, int K, CUstream_st* stream);
// dst [N, C, H + pad_h0 + pad_h1, W + pad_w0 + pad_w1] = src padded with `value`.
void LaunchPad4(DType t, bool nhwc, Dims4 src, int pad_h0, int pad_h1, int pad_w0, int pad_w1,
                double value, const void* src_data, void* dst_data, CUstream_st* stream);
// dst [N, C, H, W] = the window of src (dims `src`) starting at row h0, column w0.
void LaunchCrop4(DType t, bool nhwc, Dims4 src, Dims4 dst, int h0, int w0, const void* src_data,
                 void* dst_data, CUstream_st* stream);

// dst [N, C, H', W'] (dims `dst`, layout dst_nhwc) = src (dims `src`, layout src_nhwc) at
// (n, c, h + h0, w + w0), zero outside src: a layout change, fused with an explicit padding
// (negative offsets) or a crop (positive ones).
void LaunchRelayout4(DType t, bool src_nhwc, Dims4 src, bool dst_nhwc, Dims4 dst, int64_t h0,
                     int64_t w0, const void* src_data, void* dst_data, CUstream_st* stream);

// Direct convolutions (gpu_dnn_conv.cu), over the maps above: y from x and w; dx from w and dy
// (one thread per element, gathering); dw (HWIO) from x and dy (one block per filter element,
// summing in a fixed order: deterministic).
void LaunchDirectConvForward(DType t, bool nhwc, const ConvGeom& g, const void* x, const void* w,
                             void* y, CUstream_st* stream);
void LaunchDirectConvBackwardData(DType t, bool nhwc, const ConvGeom& g, const void* w,
                                  const void* dy, void* dx, CUstream_st* stream);
void LaunchDirectConvBackwardFilter(DType t, bool nhwc, const ConvGeom& g, const void* x,
                                    const void* dy, void* dw, CUstream_st* stream);

struct PoolGeom {
  Dims4 in;
  int64_t out_h, out_w;
  int window_h, window_w, stride_h, stride_w, pad_top, pad_left;
};
// Average pooling over in-bounds elements, forward and (gathering, deterministic) backward.
void LaunchAvgPool(DType t, bool nhwc, const PoolGeom& g, const void* x, void* y,
                   CUstream_st* stream);
void LaunchAvgPoolGrad(DType t, bool nhwc, const PoolGeom& g, const void* dy, void* dx,
                       CUstream_st* stream);

// out[c] = 1 / sqrt(variance[c] + epsilon).
void LaunchBnInvStd(DType t, const void* variance, double epsilon, void* out, int64_t channels,
                    CUstream_st* stream);
// FusedBatchNormGrad with is_training = false: dx = dy * scale * inv_std,
// dscale = sum(dy * (x - mean) * inv_std), doffset = sum(dy), per channel.
void LaunchBnGradInference(DType t, bool nhwc, Dims4 d, const void* dy, const void* x,
                           const void* scale, const void* mean, const void* inv_std, void* dx,
                           void* dscale, void* doffset, CUstream_st* stream);

}  // namespace pf::dnn
