// Convolutions through cuDNN's graph (backend) API, with one execution plan built per GPU,
// direction and shape and reused for every later call (private to devices/cuda/gpu_dnn.cc).
//
// Why: cuDNN 9 implements the legacy calls (cudnnConvolutionForward and its backward twins) on
// top of the graph API and pays for it on the host at every call. The H100 run of 2026-11-27
// measured about 290 us of host time per Conv2D enqueue (LeNet, MobileNetV2's 1x1 layers), which
// made the GPU steps host-bound. A cached plan leaves a variant pack (three pointers and the
// workspace) and one cudnnBackendExecute per call, as PyTorch's cudnn-frontend path does.
//
// PF_CUDNN_CONV_API=legacy keeps the legacy calls (graph, the default, uses this file). A shape
// the graph API cannot run (no engine, or float without TF32 and no engine free of tensor-core,
// down-converting or reduced-precision notes) is remembered and runs through the legacy calls.
#pragma once

#include <cudnn.h>

#include <string>

#include "placeflow/devices/cuda/gpu_dnn_util.h"
#include "placeflow/devices/gpu_dnn_plan.h"

namespace pf::dnn_graph {

// Whether PF_CUDNN_CONV_API (read once) asks for the graph API: unset, "" or "graph".
bool ConvEnabled();

// One convolution as cuDNN sees it: the (padded) input x and the output y in cuDNN's layout,
// the filter [k, c, r, s] in KRSC or KCRS memory order, symmetric padding.
struct ConvCall {
  GpuConvDirection dir = GpuConvDirection::kForward;
  GpuConvDesc desc;  // in cuDNN's layout; the plan cache's key, with dir and fma_only
  DType dtype = DT_FLOAT;
  DnnTensor4 x, y;
  int k = 0, c = 0, r = 0, s = 0;
  bool filter_krsc = true;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  bool fma_only = false;  // float without TF32: plain FP32 engines only
};

// The call for direction `dir` of `dc` (cuDNN's layout), planned as `p`.
ConvCall MakeConvCall(GpuConvDirection dir, const GpuConvDesc& dc, const GpuConvPlan& p,
                      bool fma_only);

// Runs `call` on the compute stream (the caller holds the cuDNN lock, `h` bound to that stream).
// The tensors by their role in the convolution: x the input (written by backward data), w the
// filter (written by backward filter), y the output (read as dy by both backward directions).
// Unimplemented when the graph API has no plan for the shape (the caller uses the legacy calls)
// or a pointer is not 16-byte aligned; *engine: the engine's global index when it ran.
Status RunConv(const dnn_util::CallSite& site, GpuDevice* gpu, cudnnHandle_t h,
               const ConvCall& call, void* x, void* w, void* y, int* engine);

}  // namespace pf::dnn_graph
