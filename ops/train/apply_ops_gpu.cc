// Fused optimizer updates on the GPU (device code in apply_ops.cu): the same checks and locking
// as the CPU kernels (apply_kernel.h); the scalars stay on the device.
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/train/apply_kernel.h"
#include "placeflow/ops/train/apply_launch.h"

namespace pf {
namespace {

template <typename T>
class ApplyGpuKernel : public ApplyKernel<T> {
 public:
  using ApplyKernel<T>::ApplyKernel;
  bool IsExpensive() const override { return false; }

 protected:
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) final {
    auto* gpu = static_cast<GpuDevice*>(ctx->device());
    PF_RETURN_IF_ERROR(gpu->Activate());
    Launch(ctx, v, g, n, gpu->compute_stream());
    return gpu->CheckLaunch(this->name() + " (" + this->node().op() + ")");
  }
  virtual void Launch(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n,
                      GpuStream s) = 0;
  static const T* In(OpKernelContext* ctx, int i) { return ctx->input(i).template data<T>(); }
};

template <typename T>
class GradientDescentGpuOp : public ApplyGpuKernel<T> {
 public:
  explicit GradientDescentGpuOp(const Node& n) : ApplyGpuKernel<T>(n, {0}, 2) {}
  void Launch(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n,
              GpuStream s) override {
    gpu::ApplyGradientDescent<T>(v[0], this->In(ctx, 1), g, n, s);
  }
};

template <typename T>
class MovingAverageGpuOp : public ApplyGpuKernel<T> {
 public:
  explicit MovingAverageGpuOp(const Node& n) : ApplyGpuKernel<T>(n, {0}, 2) {}
  void Launch(OpKernelContext* ctx, const std::vector<T*>& v, const T* value, int64_t n,
              GpuStream s) override {
    gpu::ApplyMovingAverage<T>(v[0], this->In(ctx, 1), value, n, s);
  }
};

template <typename T>
class MomentumGpuOp : public ApplyGpuKernel<T> {
 public:
  explicit MomentumGpuOp(const Node& n)
      : ApplyGpuKernel<T>(n, {0, 1}, 3), nesterov_(n.attr<bool>("use_nesterov")) {}
  void Launch(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n,
              GpuStream s) override {
    gpu::ApplyMomentum<T>(v[0], v[1], this->In(ctx, 2), g, this->In(ctx, 4), nesterov_, n, s);
  }

 private:
  bool nesterov_;
};

template <typename T>
class AdamGpuOp : public ApplyGpuKernel<T> {
 public:
  explicit AdamGpuOp(const Node& n) : ApplyGpuKernel<T>(n, {0, 1, 2}, 9) {}
  void Launch(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n,
              GpuStream s) override {
    gpu::ApplyAdam<T>(v[0], v[1], v[2], this->In(ctx, 3), this->In(ctx, 4), this->In(ctx, 5),
                      this->In(ctx, 6), this->In(ctx, 7), this->In(ctx, 8), g, n, s);
  }
};

template <typename T>
class RMSPropGpuOp : public ApplyGpuKernel<T> {
 public:
  explicit RMSPropGpuOp(const Node& n) : ApplyGpuKernel<T>(n, {0, 1, 2}, 7) {}
  void Launch(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n,
              GpuStream s) override {
    gpu::ApplyRMSProp<T>(v[0], v[1], v[2], this->In(ctx, 3), this->In(ctx, 4), this->In(ctx, 5),
                         this->In(ctx, 6), g, n, s);
  }
};

template <typename T>
class AdagradGpuOp : public ApplyGpuKernel<T> {
 public:
  explicit AdagradGpuOp(const Node& n) : ApplyGpuKernel<T>(n, {0, 1}, 3) {}
  void Launch(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n,
              GpuStream s) override {
    gpu::ApplyAdagrad<T>(v[0], v[1], this->In(ctx, 2), g, n, s);
  }
};

#define PF_GPU_APPLY(op, Kernel)                        \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), Kernel<float>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), Kernel<double>)
PF_GPU_APPLY("ApplyGradientDescent", GradientDescentGpuOp);
PF_GPU_APPLY("ApplyMovingAverage", MovingAverageGpuOp);
PF_GPU_APPLY("ApplyMomentum", MomentumGpuOp);
PF_GPU_APPLY("ApplyAdam", AdamGpuOp);
PF_GPU_APPLY("ApplyRMSProp", RMSPropGpuOp);
PF_GPU_APPLY("ApplyAdagrad", AdagradGpuOp);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_APPLY
