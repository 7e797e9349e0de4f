// Device code for the convolutions cuDNN cannot run (gpu_dnn.cc's fallbacks): layout changes
// around NCHW cuDNN calls, and direct kernels. The per-element sums are gpu_dnn_launch.h's, which
// tests/devices/gpu_conv_path_test.cc checks on the host; these kernels only spread them over
// threads.
#include <cuda_runtime.h>

#include "placeflow/devices/cuda/gpu_dnn_launch.h"

namespace pf::dnn {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

int Blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < kMaxBlocks ? (b > 0 ? b : 1) : kMaxBlocks);
}

template <typename T>
__global__ void Relayout4Kernel(bool src_nhwc, Dims4 src, bool dst_nhwc, Dims4 dst, int64_t h0,
                                int64_t w0, const T* in, T* out) {
  const int64_t total = dst.n * dst.c * dst.h * dst.w;
  PF_DNN_LOOP(i, total) {
    int64_t n, c, h, w;
    DecodeOffset4(dst_nhwc, i, dst, &n, &c, &h, &w);
    const int64_t j = Relayout4Source(src_nhwc, src, n, c, h, w, h0, w0);
    out[i] = j >= 0 ? in[j] : T(0);
  }
}

template <typename T>
__global__ void DirectConvForwardKernel(bool nhwc, ConvGeom g, const T* x, const T* w, T* y) {
  const Dims4 od{g.n, g.out_c, g.out_h, g.out_w};
  const int64_t total = od.n * od.c * od.h * od.w;
  PF_DNN_LOOP(i, total) {
    int64_t n, k, oh, ow;
    DecodeOffset4(nhwc, i, od, &n, &k, &oh, &ow);
    y[i] = DirectConvForwardAt(nhwc, g, x, w, n, k, oh, ow);
  }
}

template <typename T>
__global__ void DirectConvBackwardDataKernel(bool nhwc, ConvGeom g, const T* w, const T* dy,
                                             T* dx) {
  const Dims4 id{g.n, g.in_c, g.in_h, g.in_w};
  const int64_t total = id.n * id.c * id.h * id.w;
  PF_DNN_LOOP(i, total) {
    int64_t n, c, ih, iw;
    DecodeOffset4(nhwc, i, id, &n, &c, &ih, &iw);
    dx[i] = DirectConvBackwardDataAt(nhwc, g, w, dy, n, c, ih, iw);
  }
}

// One block per HWIO filter element (grid-stride over them); each thread sums every
// blockDim.x-th output position, then a tree in shared memory adds the parts.
template <typename T>
__global__ void DirectConvBackwardFilterKernel(bool nhwc, ConvGeom g, const T* x, const T* dy,
                                               T* dw) {
  __shared__ T part[kThreads];
  const int64_t cg = g.in_c / g.groups;
  const int64_t total = g.filter_h * g.filter_w * cg * g.out_c;
  for (int64_t f = blockIdx.x; f < total; f += gridDim.x) {
    const int64_t k = f % g.out_c;
    const int64_t c = (f / g.out_c) % cg;
    const int64_t s = (f / (g.out_c * cg)) % g.filter_w;
    const int64_t r = f / (g.out_c * cg * g.filter_w);
    part[threadIdx.x] =
        DirectConvBackwardFilterPart(nhwc, g, x, dy, r, s, c, k, threadIdx.x, blockDim.x);
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
      if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
      __syncthreads();
    }
    if (threadIdx.x == 0) dw[f] = part[0];
    __syncthreads();  // part[0] is read before the next element overwrites it
  }
}

}  // namespace

void LaunchRelayout4(DType t, bool src_nhwc, Dims4 src, bool dst_nhwc, Dims4 dst, int64_t h0,
                     int64_t w0, const void* src_data, void* dst_data, CUstream_st* stream) {
  const int64_t total = dst.n * dst.c * dst.h * dst.w;
  if (total == 0) return;
  PF_DNN_DISPATCH(t, (Relayout4Kernel<T><<<Blocks(total), kThreads, 0, stream>>>(
                         src_nhwc, src, dst_nhwc, dst, h0, w0, static_cast<const T*>(src_data),
                         static_cast<T*>(dst_data))));
}

void LaunchDirectConvForward(DType t, bool nhwc, const ConvGeom& g, const void* x, const void* w,
                             void* y, CUstream_st* stream) {
  const int64_t total = g.n * g.out_c * g.out_h * g.out_w;
  if (total == 0) return;
  PF_DNN_DISPATCH(
      t, (DirectConvForwardKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
             nhwc, g, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y))));
}

void LaunchDirectConvBackwardData(DType t, bool nhwc, const ConvGeom& g, const void* w,
                                  const void* dy, void* dx, CUstream_st* stream) {
  const int64_t total = g.n * g.in_c * g.in_h * g.in_w;
  if (total == 0) return;
  PF_DNN_DISPATCH(
      t, (DirectConvBackwardDataKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
             nhwc, g, static_cast<const T*>(w), static_cast<const T*>(dy), static_cast<T*>(dx))));
}

void LaunchDirectConvBackwardFilter(DType t, bool nhwc, const ConvGeom& g, const void* x,
                                    const void* dy, void* dw, CUstream_st* stream) {
  const int64_t total = g.filter_h * g.filter_w * (g.in_c / g.groups) * g.out_c;
  if (total == 0) return;
  const unsigned blocks = static_cast<unsigned>(total < kMaxBlocks ? total : kMaxBlocks);
  PF_DNN_DISPATCH(
      t, (DirectConvBackwardFilterKernel<T><<<blocks, kThreads, 0, stream>>>(
             nhwc, g, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dw))));
}

}  // namespace pf::dnn
