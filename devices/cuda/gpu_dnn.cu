// Device code for the cuDNN wrappers (gpu_dnn.cc, gpu_dnn_pool_bn.cc): what cuDNN does not do.
#include <cuda_runtime.h>

#include "placeflow/devices/cuda/gpu_dnn_launch.h"

namespace pf::dnn {
namespace {

constexpr int kThreads = 256;

int Blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

template <typename T>
__global__ void FilterTransformKernel(bool to_cudnn, bool krsc, const T* src, T* dst, int R, int S,
                                      int C, int K) {
  const int64_t total = static_cast<int64_t>(R) * S * C * K;
  PF_DNN_LOOP(i, total) {
    int64_t r, s, c, k;
    DecodeCudnnFilter(krsc, i, R, S, C, &r, &s, &c, &k);
    const int64_t h = HwioOffset(r, s, c, k, S, C, K);
    if (to_cudnn) {
      dst[i] = src[h];
    } else {
      dst[h] = src[i];
    }
  }
}

template <typename T>
__global__ void Pad4Kernel(bool nhwc, Dims4 src, Dims4 dst, int h0, int w0, T value, const T* in,
                           T* out) {
  const int64_t total = dst.n * dst.c * dst.h * dst.w;
  PF_DNN_LOOP(i, total) {
    int64_t n, c, h, w;
    DecodeOffset4(nhwc, i, dst, &n, &c, &h, &w);
    const int64_t sh = h - h0, sw = w - w0;
    out[i] = (sh >= 0 && sh < src.h && sw >= 0 && sw < src.w)
                 ? in[Offset4(nhwc, n, c, sh, sw, src.c, src.h, src.w)]
                 : value;
  }
}

template <typename T>
__global__ void Crop4Kernel(bool nhwc, Dims4 src, Dims4 dst, int h0, int w0, const T* in, T* out) {
  const int64_t total = dst.n * dst.c * dst.h * dst.w;
  PF_DNN_LOOP(i, total) {
    int64_t n, c, h, w;
    DecodeOffset4(nhwc, i, dst, &n, &c, &h, &w);
    out[i] = in[Offset4(nhwc, n, c, h + h0, w + w0, src.c, src.h, src.w)];
  }
}

template <typename T>
__global__ void AvgPoolKernel(bool nhwc, PoolGeom g, const T* x, T* y) {
  const Dims4 od{g.in.n, g.in.c, g.out_h, g.out_w};
  const int64_t total = od.n * od.c * od.h * od.w;
  PF_DNN_LOOP(i, total) {
    int64_t n, c, oh, ow, h0, h1, w0, w1;
    DecodeOffset4(nhwc, i, od, &n, &c, &oh, &ow);
    Window(oh, g.stride_h, g.pad_top, g.window_h, g.in.h, &h0, &h1);
    Window(ow, g.stride_w, g.pad_left, g.window_w, g.in.w, &w0, &w1);
    T sum = 0;
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = w0; w < w1; ++w) sum += x[Offset4(nhwc, n, c, h, w, g.in.c, g.in.h, g.in.w)];
    }
    const int64_t count = (h1 - h0) * (w1 - w0);
    y[i] = count > 0 ? sum / static_cast<T>(count) : T(0);
  }
}

template <typename T>
__global__ void AvgPoolGradKernel(bool nhwc, PoolGeom g, const T* dy, T* dx) {
  const int64_t total = g.in.n * g.in.c * g.in.h * g.in.w;
  PF_DNN_LOOP(i, total) {
    int64_t n, c, h, w, oh0, oh1, ow0, ow1;
    DecodeOffset4(nhwc, i, g.in, &n, &c, &h, &w);
    Covering(h, g.stride_h, g.pad_top, g.window_h, g.out_h, &oh0, &oh1);
    Covering(w, g.stride_w, g.pad_left, g.window_w, g.out_w, &ow0, &ow1);
    T sum = 0;
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      int64_t a, b;
      Window(oh, g.stride_h, g.pad_top, g.window_h, g.in.h, &a, &b);
      const int64_t rows = b - a;
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        int64_t e, f;
        Window(ow, g.stride_w, g.pad_left, g.window_w, g.in.w, &e, &f);
        sum += dy[Offset4(nhwc, n, c, oh, ow, g.in.c, g.out_h, g.out_w)] /
               static_cast<T>(rows * (f - e));
      }
    }
    dx[i] = sum;
  }
}

template <typename T>
__global__ void BnInvStdKernel(const T* var, double eps, T* out, int64_t n) {
  PF_DNN_LOOP(i, n) { out[i] = static_cast<T>(1.0 / sqrt(static_cast<double>(var[i]) + eps)); }
}

// One block per channel; double accumulation whatever T.
template <typename T>
__global__ void BnGradInferenceKernel(bool nhwc, Dims4 d, const T* dy, const T* x, const T* scale,
                                      const T* mean, const T* inv_std, T* dx, T* dscale,
                                      T* doffset) {
  __shared__ double s_dy[kThreads];
  __shared__ double s_dyx[kThreads];
  const int64_t c = blockIdx.x;
  const int64_t per_channel = d.n * d.h * d.w;
  const double m = static_cast<double>(mean[c]);
  const double is = static_cast<double>(inv_std[c]);
  const T factor = static_cast<T>(static_cast<double>(scale[c]) * is);
  double a = 0, b = 0;
  for (int64_t j = threadIdx.x; j < per_channel; j += blockDim.x) {
    const int64_t w = j % d.w, h = (j / d.w) % d.h, n = j / (d.w * d.h);
    const int64_t off = Offset4(nhwc, n, c, h, w, d.c, d.h, d.w);
    const double g = static_cast<double>(dy[off]);
    a += g;
    b += g * (static_cast<double>(x[off]) - m) * is;
    dx[off] = dy[off] * factor;
  }
  s_dy[threadIdx.x] = a;
  s_dyx[threadIdx.x] = b;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      s_dy[threadIdx.x] += s_dy[threadIdx.x + stride];
      s_dyx[threadIdx.x] += s_dyx[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    doffset[c] = static_cast<T>(s_dy[0]);
    dscale[c] = static_cast<T>(s_dyx[0]);
  }
}

}  // namespace

void LaunchFilterTransform(DType t, bool to_cudnn, bool krsc, const void* src, void* dst, int R,
                           int S, int C, int K, CUstream_st* stream) {
  const int64_t total = static_cast<int64_t>(R) * S * C * K;
  PF_DNN_DISPATCH(
      t, (FilterTransformKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
             to_cudnn, krsc, static_cast<const T*>(src), static_cast<T*>(dst), R, S, C, K)));
}

void LaunchPad4(DType t, bool nhwc, Dims4 src, int pad_h0, int pad_h1, int pad_w0, int pad_w1,
                double value, const void* src_data, void* dst_data, CUstream_st* stream) {
  const Dims4 dst{src.n, src.c, src.h + pad_h0 + pad_h1, src.w + pad_w0 + pad_w1};
  const int64_t total = dst.n * dst.c * dst.h * dst.w;
  PF_DNN_DISPATCH(t, (Pad4Kernel<T><<<Blocks(total), kThreads, 0, stream>>>(
                         nhwc, src, dst, pad_h0, pad_w0, static_cast<T>(value),
                         static_cast<const T*>(src_data), static_cast<T*>(dst_data))));
}

void LaunchCrop4(DType t, bool nhwc, Dims4 src, Dims4 dst, int h0, int w0, const void* src_data,
                 void* dst_data, CUstream_st* stream) {
  const int64_t total = dst.n * dst.c * dst.h * dst.w;
  PF_DNN_DISPATCH(
      t, (Crop4Kernel<T><<<Blocks(total), kThreads, 0, stream>>>(
             nhwc, src, dst, h0, w0, static_cast<const T*>(src_data), static_cast<T*>(dst_data))));
}

void LaunchAvgPool(DType t, bool nhwc, const PoolGeom& g, const void* x, void* y,
                   CUstream_st* stream) {
  const int64_t total = g.in.n * g.in.c * g.out_h * g.out_w;
  PF_DNN_DISPATCH(t, (AvgPoolKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
                         nhwc, g, static_cast<const T*>(x), static_cast<T*>(y))));
}

void LaunchAvgPoolGrad(DType t, bool nhwc, const PoolGeom& g, const void* dy, void* dx,
                       CUstream_st* stream) {
  const int64_t total = g.in.n * g.in.c * g.in.h * g.in.w;
  PF_DNN_DISPATCH(t, (AvgPoolGradKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
                         nhwc, g, static_cast<const T*>(dy), static_cast<T*>(dx))));
}

void LaunchBnInvStd(DType t, const void* variance, double epsilon, void* out, int64_t channels,
                    CUstream_st* stream) {
  PF_DNN_DISPATCH(t,
                  (BnInvStdKernel<T><<<Blocks(channels), kThreads, 0, stream>>>(
                      static_cast<const T*>(variance), epsilon, static_cast<T*>(out), channels)));
}

void LaunchBnGradInference(DType t, bool nhwc, Dims4 d, const void* dy, const void* x,
                           const void* scale, const void* mean, const void* inv_std, void* dx,
                           void* dscale, void* doffset, CUstream_st* stream) {
  if (d.c == 0) return;
  PF_DNN_DISPATCH(t, (BnGradInferenceKernel<T><<<static_cast<unsigned>(d.c), kThreads, 0, stream>>>(
                         nhwc, d, static_cast<const T*>(dy), static_cast<const T*>(x),
                         static_cast<const T*>(scale), static_cast<const T*>(mean),
                         static_cast<const T*>(inv_std), static_cast<T*>(dx),
                         static_cast<T*>(dscale), static_cast<T*>(doffset))));
}

}  // namespace pf::dnn
