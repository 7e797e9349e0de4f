// Fused optimizer updates: one op per variable and step, updating the variable and its slots
// in place (TensorFlow's ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyRMSProp,
// ApplyAdagrad). Scalars (learning rate, decay rates) are tensor inputs so schedules can feed
// them; the variable and slots are reference inputs, so the placer keeps them together.
#include <cmath>

#include "placeflow/devices/device.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/train/apply_kernel.h"

namespace pf {
namespace {

// var -= alpha * delta.  Inputs: var, alpha, delta.
template <typename T>
class GradientDescentOp : public ApplyKernel<T> {
 public:
  explicit GradientDescentOp(const Node& n) : ApplyKernel<T>(n, {0}, 2) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) override {
    const T lr = this->Scalar(ctx, 1);
    ParallelFor(ctx, n, 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) v[0][i] -= lr * g[i];
    });
    return Status::OK();
  }
};

// accum = momentum * accum + grad; var -= lr * accum (Nesterov: var -= lr * (grad + momentum *
// accum)). Inputs: var, accum, lr, grad, momentum.
template <typename T>
class MomentumOp : public ApplyKernel<T> {
 public:
  explicit MomentumOp(const Node& n)
      : ApplyKernel<T>(n, {0, 1}, 3), nesterov_(n.attr<bool>("use_nesterov")) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) override {
    const T lr = this->Scalar(ctx, 2), mu = this->Scalar(ctx, 4);
    ParallelFor(ctx, n, 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        v[1][i] = mu * v[1][i] + g[i];
        v[0][i] -= nesterov_ ? lr * (g[i] + mu * v[1][i]) : lr * v[1][i];
      }
    });
    return Status::OK();
  }

 private:
  bool nesterov_;
};

// lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m += (g - m)(1 - beta1); v += (g^2 - v)(1 -
// beta2); var -= lr_t * m / (sqrt(v) + epsilon). Inputs: var, m, v, beta1_power, beta2_power, lr,
// beta1, beta2, epsilon, grad.
template <typename T>
class AdamOp : public ApplyKernel<T> {
 public:
  explicit AdamOp(const Node& n) : ApplyKernel<T>(n, {0, 1, 2}, 9) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) override {
    const T b1p = this->Scalar(ctx, 3), b2p = this->Scalar(ctx, 4), lr = this->Scalar(ctx, 5);
    const T b1 = this->Scalar(ctx, 6), b2 = this->Scalar(ctx, 7), eps = this->Scalar(ctx, 8);
    const T lr_t = lr * std::sqrt(T(1) - b2p) / (T(1) - b1p);
    ParallelFor(ctx, n, 20, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        v[1][i] += (g[i] - v[1][i]) * (T(1) - b1);
        v[2][i] += (g[i] * g[i] - v[2][i]) * (T(1) - b2);
        v[0][i] -= lr_t * v[1][i] / (std::sqrt(v[2][i]) + eps);
      }
    });
    return Status::OK();
  }
};

// ms += (g^2 - ms)(1 - rho); mom = momentum * mom + lr * g / sqrt(ms + epsilon); var -= mom.
// Inputs: var, ms, mom, lr, rho, momentum, epsilon, grad.
template <typename T>
class RMSPropOp : public ApplyKernel<T> {
 public:
  explicit RMSPropOp(const Node& n) : ApplyKernel<T>(n, {0, 1, 2}, 7) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) override {
    const T lr = this->Scalar(ctx, 3), rho = this->Scalar(ctx, 4), mu = this->Scalar(ctx, 5),
            eps = this->Scalar(ctx, 6);
    ParallelFor(ctx, n, 20, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        v[1][i] += (g[i] * g[i] - v[1][i]) * (T(1) - rho);
        v[2][i] = mu * v[2][i] + lr * g[i] / std::sqrt(v[1][i] + eps);
        v[0][i] -= v[2][i];
      }
    });
    return Status::OK();
  }
};

// accum += g^2; var -= lr * g / sqrt(accum). Inputs: var, accum, lr, grad.
template <typename T>
class AdagradOp : public ApplyKernel<T> {
 public:
  explicit AdagradOp(const Node& n) : ApplyKernel<T>(n, {0, 1}, 3) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) override {
    const T lr = this->Scalar(ctx, 2);
    ParallelFor(ctx, n, 20, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        v[1][i] += g[i] * g[i];
        v[0][i] -= lr * g[i] / std::sqrt(v[1][i]);
      }
    });
    return Status::OK();
  }
};

// Schema: `refs` reference inputs, then `scalars`, with the gradient at `grad_pos` among them.
OpDef ApplyDef(const char* name, const std::vector<std::string>& refs,
               const std::vector<std::string>& rest) {
  OpDef d(name);
  for (const std::string& r : refs) d.RefInput(r, "T");
  for (const std::string& r : rest) d.Input(r, "T");
  return d.Output("out", "T")
      .TypeAttr("T", kRealTypes)
      .SetStateful()
      .SetNotDifferentiable()
      .SetShapeFn([](ShapeContext& c) {
        for (int i = 1; i < c.num_inputs(); ++i) {
          if (c.input(i).rank() == 0) continue;  // scalars
          if (!c.input(0).IsCompatibleWith(c.input(i))) {
            return errors::InvalidArgument("var and input ", i,
                                           " do not have the same shape: ", c.input(0).ToString(),
                                           " vs ", c.input(i).ToString());
          }
        }
        c.set_output(0, c.input(0));
        return Status::OK();
      });
}

#define PF_APPLY_KERNELS(op, Kernel)                                                            \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}), Kernel<float>); \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), Kernel<double>)

PF_REGISTER_OP(ApplyDef("ApplyGradientDescent", {"var"}, {"alpha", "delta"}));
PF_APPLY_KERNELS("ApplyGradientDescent", GradientDescentOp);
PF_REGISTER_OP(ApplyDef("ApplyMomentum", {"var", "accum"}, {"lr", "grad", "momentum"})
                   .Attr("use_nesterov", false));
PF_APPLY_KERNELS("ApplyMomentum", MomentumOp);
PF_REGISTER_OP(ApplyDef("ApplyAdam", {"var", "m", "v"},
                        {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"}));
PF_APPLY_KERNELS("ApplyAdam", AdamOp);
PF_REGISTER_OP(ApplyDef("ApplyRMSProp", {"var", "ms", "mom"},
                        {"lr", "rho", "momentum", "epsilon", "grad"}));
PF_APPLY_KERNELS("ApplyRMSProp", RMSPropOp);
PF_REGISTER_OP(ApplyDef("ApplyAdagrad", {"var", "accum"}, {"lr", "grad"}));
PF_APPLY_KERNELS("ApplyAdagrad", AdagradOp);

}  // namespace
}  // namespace pf
