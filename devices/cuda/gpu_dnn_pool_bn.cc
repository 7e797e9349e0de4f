// Pooling and batch normalisation wrappers (the convolutions are in gpu_dnn.cc).
#include <limits>

#include "placeflow/devices/cuda/gpu_dnn.h"
#include "placeflow/devices/cuda/gpu_dnn_util.h"

namespace pf {

using dnn_util::CallSite;
using dnn_util::Scratch;

namespace {

dnn::PoolGeom Geom(const GpuPoolDesc& d) {
  return {{d.batch, d.channels, d.in_h, d.in_w},
          d.out_h,
          d.out_w,
          d.window_h,
          d.window_w,
          d.stride_h,
          d.stride_w,
          d.pad_top,
          d.pad_left};
}

struct PoolSetup {
  dnn_util::TensorDesc x, y;
  dnn_util::PoolDesc pool;
};

Status SetupPool(const CallSite& site, const GpuPoolDesc& d, const GpuPoolPlan& p, PoolSetup* s) {
  PF_RETURN_IF_ERROR(s->x.Init(site));
  PF_RETURN_IF_ERROR(s->y.Init(site));
  PF_RETURN_IF_ERROR(s->pool.Init(site));
  PF_RETURN_IF_ERROR(dnn_util::SetTensor(site, s->x, d.dtype, p.x));
  PF_RETURN_IF_ERROR(dnn_util::SetTensor(site, s->y, d.dtype, p.y));
  // Deterministic max pooling routes each gradient to one input, the same on every run. Which
  // of several equal maxima it picks is not documented by cuDNN (the CPU picks the first in
  // window order), so ties may differ from the CPU. NaNs are not propagated, TensorFlow's GPU
  // default.
  PF_DNN_CALL(site,
              cudnnSetPooling2dDescriptor(s->pool.get(),
                                          d.max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                                : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                                          CUDNN_NOT_PROPAGATE_NAN, d.window_h, d.window_w,
                                          p.rows.common, p.cols.common, d.stride_h, d.stride_w));
  return Status::OK();
}

// Max pooling with an asymmetric padding: the input padded with -inf (never a window's
// maximum, as every SAME window holds an input element), in scratch.
StatusOr<const void*> MaxPoolInput(GpuDevice* gpu, const GpuPoolDesc& d, const GpuPoolPlan& p,
                                   const void* x, Scratch* out) {
  if (!p.explicit_pad) return x;
  PF_RETURN_IF_ERROR(out->Allocate(gpu, p.padded_x_elements * DTypeSize(d.dtype), "padded input"));
  dnn::LaunchPad4(dnn_util::LaunchType(d.dtype), dnn_util::IsNhwc(d.layout),
                  {d.batch, d.channels, d.in_h, d.in_w}, p.rows.extra_before, p.rows.extra_after,
                  p.cols.extra_before, p.cols.extra_after, -std::numeric_limits<double>::infinity(),
                  x, out->get(), gpu->compute_stream());
  return static_cast<const void*>(out->get());
}

CallSite PoolSite(GpuDevice* gpu, const GpuPoolDesc& d, const char* what) {
  return CallSite{gpu->ordinal(), [&d, what] { return std::string(what) + " " + d.ToString(); }};
}

CallSite BnSite(GpuDevice* gpu, const GpuBatchNormDesc& d, const char* what) {
  return CallSite{gpu->ordinal(), [&d, what] { return std::string(what) + " " + d.ToString(); }};
}

}  // namespace

Status GpuPoolForward(GpuDevice* gpu, const GpuPoolDesc& d, const void* x, void* y) {
  const CallSite site = PoolSite(gpu, d, "pooling forward");
  PF_ASSIGN_OR_RETURN(GpuPoolPlan p, PlanGpuPool(d));
  if (d.batch == 0 || d.out_h == 0 || d.out_w == 0) return Status::OK();
  if (p.direct_avg) {
    PF_RETURN_IF_ERROR(gpu->Activate());
    dnn::LaunchAvgPool(dnn_util::LaunchType(d.dtype), dnn_util::IsNhwc(d.layout), Geom(d), x, y,
                       gpu->compute_stream());
    return Status::OK();
  }
  PoolSetup s;
  PF_RETURN_IF_ERROR(SetupPool(site, d, p, &s));
  PF_ASSIGN_OR_RETURN(dnn_util::DnnLock lock, dnn_util::LockDnn(gpu, site));
  Scratch xp;
  PF_ASSIGN_OR_RETURN(const void* xin, MaxPoolInput(gpu, d, p, x, &xp));
  PF_DNN_CALL(site, cudnnPoolingForward(lock.handle, s.pool.get(), dnn_util::One(d.dtype),
                                        s.x.get(), xin, dnn_util::Zero(d.dtype), s.y.get(), y));
  return Status::OK();
}

Status GpuPoolBackward(GpuDevice* gpu, const GpuPoolDesc& d, const void* x, const void* y,
                       const void* dy, void* dx) {
  const CallSite site = PoolSite(gpu, d, "pooling backward");
  PF_ASSIGN_OR_RETURN(GpuPoolPlan p, PlanGpuPool(d));
  if (d.batch == 0) return Status::OK();
  PF_RETURN_IF_ERROR(gpu->Activate());
  if (d.out_h == 0 || d.out_w == 0) {
    const size_t bytes =
        static_cast<size_t>(d.batch * d.channels * d.in_h * d.in_w) * DTypeSize(d.dtype);
    PF_DNN_CALL(site, cudaMemsetAsync(dx, 0, bytes, gpu->compute_stream()));
    return Status::OK();
  }
  if (p.direct_avg) {
    dnn::LaunchAvgPoolGrad(dnn_util::LaunchType(d.dtype), dnn_util::IsNhwc(d.layout), Geom(d), dy,
                           dx, gpu->compute_stream());
    return Status::OK();
  }
  if (d.max && (x == nullptr || y == nullptr)) {
    return errors::InvalidArgument("Max pooling backward needs the forward input and output: ",
                                   d.ToString());
  }
  PoolSetup s;
  PF_RETURN_IF_ERROR(SetupPool(site, d, p, &s));
  PF_ASSIGN_OR_RETURN(dnn_util::DnnLock lock, dnn_util::LockDnn(gpu, site));
  Scratch xp, dxp;
  const void* xin = x;
  const void* yin = y;
  void* out = dx;
  if (d.max) {
    PF_ASSIGN_OR_RETURN(xin, MaxPoolInput(gpu, d, p, x, &xp));
    if (p.explicit_pad) {
      PF_RETURN_IF_ERROR(
          dxp.Allocate(gpu, p.padded_x_elements * DTypeSize(d.dtype), "padded input gradient"));
      out = dxp.get();
    }
  } else {
    // Average pooling's gradient does not depend on x or y; cuDNN still takes them, and
    // TensorFlow hands it uninitialised buffers of the right shapes. dy and dx are those shapes.
    if (xin == nullptr) xin = dx;
    if (yin == nullptr) yin = dy;
  }
  PF_DNN_CALL(site, cudnnPoolingBackward(lock.handle, s.pool.get(), dnn_util::One(d.dtype),
                                         s.y.get(), yin, s.y.get(), dy, s.x.get(), xin,
                                         dnn_util::Zero(d.dtype), s.x.get(), out));
  if (p.explicit_pad) {
    dnn::LaunchCrop4(dnn_util::LaunchType(d.dtype), dnn_util::IsNhwc(d.layout), dnn_util::Dims(p.x),
                     {d.batch, d.channels, d.in_h, d.in_w}, p.rows.extra_before,
                     p.cols.extra_before, out, dx, gpu->compute_stream());
  }
  return Status::OK();
}

namespace {

struct BnSetup {
  dnn_util::TensorDesc x, param;
  double epsilon = 0;
};

Status SetupBn(const CallSite& site, const GpuBatchNormDesc& d, const DnnTensor4& t, BnSetup* s) {
  PF_RETURN_IF_ERROR(s->x.Init(site));
  PF_RETURN_IF_ERROR(s->param.Init(site));
  PF_RETURN_IF_ERROR(dnn_util::SetTensor(site, s->x, d.dtype, t));
  // [1, C, 1, 1] of float for float data, double for double.
  PF_DNN_CALL(site,
              cudnnDeriveBNTensorDescriptor(s->param.get(), s->x.get(), CUDNN_BATCHNORM_SPATIAL));
  s->epsilon = ClampBatchNormEpsilon(d.epsilon, CUDNN_BN_MIN_EPSILON);
  return Status::OK();
}

Status CopyParam(const CallSite& site, GpuDevice* gpu, const GpuBatchNormDesc& d, void* dst,
                 const void* src) {
  if (dst == nullptr || dst == src) return Status::OK();
  PF_DNN_CALL(site, cudaMemcpyAsync(dst, src, d.channels * DTypeSize(d.dtype),
                                    cudaMemcpyDeviceToDevice, gpu->compute_stream()));
  return Status::OK();
}

// An all-ones bit pattern is a NaN in float and double: the statistics of an empty batch.
Status FillNaN(const CallSite& site, GpuDevice* gpu, const GpuBatchNormDesc& d, void* dst) {
  if (dst == nullptr) return Status::OK();
  PF_DNN_CALL(site,
              cudaMemsetAsync(dst, 0xFF, d.channels * DTypeSize(d.dtype), gpu->compute_stream()));
  return Status::OK();
}

bool EmptyBn(const GpuBatchNormDesc& d) { return d.batch * d.height * d.width == 0; }

}  // namespace

Status GpuBatchNormForwardTraining(GpuDevice* gpu, const GpuBatchNormDesc& d, const void* x,
                                   const void* scale, const void* offset, const void* mean_in,
                                   const void* variance_in, double exponential_avg_factor, void* y,
                                   void* batch_mean, void* batch_variance, void* saved_mean,
                                   void* saved_inv_std) {
  const CallSite site = BnSite(gpu, d, "batch norm forward (training)");
  PF_ASSIGN_OR_RETURN(DnnTensor4 t, PlanGpuBatchNorm(d));
  const bool blend = exponential_avg_factor != 1.0;
  if (blend && (mean_in == nullptr || variance_in == nullptr)) {
    return errors::InvalidArgument("exponential_avg_factor ", exponential_avg_factor,
                                   " needs the running mean and variance: ", d.ToString());
  }
  PF_RETURN_IF_ERROR(gpu->Activate());
  if (EmptyBn(d)) {
    for (void* p : {batch_mean, batch_variance, saved_mean, saved_inv_std}) {
      PF_RETURN_IF_ERROR(FillNaN(site, gpu, d, p));
    }
    return Status::OK();
  }
  BnSetup s;
  PF_RETURN_IF_ERROR(SetupBn(site, d, t, &s));
  PF_ASSIGN_OR_RETURN(dnn_util::DnnLock lock, dnn_util::LockDnn(gpu, site));
  // cuDNN updates the running statistics in place: result = (1 - f) * result + f * batch (the
  // variance unbiased). With f = 1 the old value is multiplied by 0, which is NaN for an
  // uninitialised NaN or Inf: start from zeros; otherwise from the inputs.
  const size_t param_bytes = d.channels * DTypeSize(d.dtype);
  if (blend) {
    PF_RETURN_IF_ERROR(CopyParam(site, gpu, d, batch_mean, mean_in));
    PF_RETURN_IF_ERROR(CopyParam(site, gpu, d, batch_variance, variance_in));
  } else {
    PF_DNN_CALL(site, cudaMemsetAsync(batch_mean, 0, param_bytes, gpu->compute_stream()));
    PF_DNN_CALL(site, cudaMemsetAsync(batch_variance, 0, param_bytes, gpu->compute_stream()));
  }
  PF_DNN_CALL(site, cudnnBatchNormalizationForwardTraining(
                        lock.handle, CUDNN_BATCHNORM_SPATIAL, dnn_util::One(d.dtype),
                        dnn_util::Zero(d.dtype), s.x.get(), x, s.x.get(), y, s.param.get(), scale,
                        offset, exponential_avg_factor, batch_mean, batch_variance, s.epsilon,
                        saved_mean, saved_inv_std));
  // One element per channel: cuDNN's unbiasing factor n / (n - 1) divides by zero, while the
  // CPU op (like TensorFlow's CPU kernel) takes it as 1, so the unbiased variance is 0 and
  // batch_variance = (1 - f) * variance_in. Rewritten here whatever cuDNN made of it.
  if (d.batch * d.height * d.width == 1) {
    if (!blend) {
      PF_DNN_CALL(site, cudaMemsetAsync(batch_variance, 0, param_bytes, gpu->compute_stream()));
    } else {
      PF_RETURN_IF_ERROR(CopyParam(site, gpu, d, batch_variance, variance_in));
      const double keep = 1.0 - exponential_avg_factor;
      const float keep_f = static_cast<float>(keep);
      const void* alpha = d.dtype == DT_DOUBLE ? static_cast<const void*>(&keep) : &keep_f;
      PF_DNN_CALL(site, cudnnScaleTensor(lock.handle, s.param.get(), batch_variance, alpha));
    }
  }
  return Status::OK();
}

Status GpuBatchNormForwardInference(GpuDevice* gpu, const GpuBatchNormDesc& d, const void* x,
                                    const void* scale, const void* offset, const void* mean,
                                    const void* variance, void* y, void* batch_mean,
                                    void* batch_variance, void* saved_mean, void* saved_inv_std) {
  const CallSite site = BnSite(gpu, d, "batch norm forward (inference)");
  PF_ASSIGN_OR_RETURN(DnnTensor4 t, PlanGpuBatchNorm(d));
  PF_RETURN_IF_ERROR(gpu->Activate());
  const double eps = ClampBatchNormEpsilon(d.epsilon, CUDNN_BN_MIN_EPSILON);
  if (!EmptyBn(d)) {
    BnSetup s;
    PF_RETURN_IF_ERROR(SetupBn(site, d, t, &s));
    PF_ASSIGN_OR_RETURN(dnn_util::DnnLock lock, dnn_util::LockDnn(gpu, site));
    PF_DNN_CALL(site, cudnnBatchNormalizationForwardInference(
                          lock.handle, CUDNN_BATCHNORM_SPATIAL, dnn_util::One(d.dtype),
                          dnn_util::Zero(d.dtype), s.x.get(), x, s.x.get(), y, s.param.get(), scale,
                          offset, mean, variance, s.epsilon));
  }
  PF_RETURN_IF_ERROR(CopyParam(site, gpu, d, batch_mean, mean));
  PF_RETURN_IF_ERROR(CopyParam(site, gpu, d, batch_variance, variance));
  PF_RETURN_IF_ERROR(CopyParam(site, gpu, d, saved_mean, mean));
  if (saved_inv_std != nullptr) {
    dnn::LaunchBnInvStd(dnn_util::LaunchType(d.dtype), variance, eps, saved_inv_std, d.channels,
                        gpu->compute_stream());
  }
  return Status::OK();
}

Status GpuBatchNormBackward(GpuDevice* gpu, const GpuBatchNormDesc& d, bool is_training,
                            const void* dy, const void* x, const void* scale,
                            const void* saved_mean, const void* saved_inv_std, void* dx,
                            void* dscale, void* doffset) {
  const CallSite site = BnSite(
      gpu, d, is_training ? "batch norm backward (training)" : "batch norm backward (inference)");
  PF_ASSIGN_OR_RETURN(DnnTensor4 t, PlanGpuBatchNorm(d));
  PF_RETURN_IF_ERROR(gpu->Activate());
  if (EmptyBn(d)) {  // no element: zero sums
    const size_t param_bytes = d.channels * DTypeSize(d.dtype);
    PF_DNN_CALL(site, cudaMemsetAsync(dscale, 0, param_bytes, gpu->compute_stream()));
    PF_DNN_CALL(site, cudaMemsetAsync(doffset, 0, param_bytes, gpu->compute_stream()));
    return Status::OK();
  }
  if (!is_training) {
    dnn::LaunchBnGradInference(dnn_util::LaunchType(d.dtype), dnn_util::IsNhwc(d.layout),
                               dnn_util::Dims(t), dy, x, scale, saved_mean, saved_inv_std, dx,
                               dscale, doffset, gpu->compute_stream());
    return Status::OK();
  }
  BnSetup s;
  PF_RETURN_IF_ERROR(SetupBn(site, d, t, &s));
  PF_ASSIGN_OR_RETURN(dnn_util::DnnLock lock, dnn_util::LockDnn(gpu, site));
  PF_DNN_CALL(site, cudnnBatchNormalizationBackward(
                        lock.handle, CUDNN_BATCHNORM_SPATIAL, dnn_util::One(d.dtype),
                        dnn_util::Zero(d.dtype), dnn_util::One(d.dtype), dnn_util::Zero(d.dtype),
                        s.x.get(), x, s.x.get(), dy, s.x.get(), dx, s.param.get(), scale, dscale,
                        doffset, s.epsilon, saved_mean, saved_inv_std));
  return Status::OK();
}

}  // namespace pf
