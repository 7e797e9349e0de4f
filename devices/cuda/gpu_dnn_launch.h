// Device code behind the cuDNN wrappers (devices/cuda/gpu_dnn.cu): filter layout changes,
// explicit padding and cropping, average pooling with asymmetric padding, the batch-norm pieces
// cuDNN lacks. Plain declarations plus the index maps, which tests check on the host.
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

// HWIO -> cuDNN filter (to_cudnn) or back.
void LaunchFilterTransform(DType t, bool to_cudnn, bool krsc, const void* src, void* dst, int R,
                           int S, int C, int K, CUstream_st* stream);
// dst [N, C, H + pad_h0 + pad_h1, W + pad_w0 + pad_w1] = src padded with `value`.
void LaunchPad4(DType t, bool nhwc, Dims4 src, int pad_h0, int pad_h1, int pad_w0, int pad_w1,
                double value, const void* src_data, void* dst_data, CUstream_st* stream);
// dst [N, C, H, W] = the window of src (dims `src`) starting at row h0, column w0.
void LaunchCrop4(DType t, bool nhwc, Dims4 src, Dims4 dst, int h0, int w0, const void* src_data,
                 void* dst_data, CUstream_st* stream);

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
