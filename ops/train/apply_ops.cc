// Fused optimizer updates: one op per variable and step, updating the variable and its slots
// in place (TensorFlow's ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyRMSProp,
// ApplyAdagrad), and ApplyMovingAverage for ExponentialMovingAverage's shadows. Scalars (learning
// rate, decay rates) are tensor inputs so schedules can feed them; the variable and slots are
// reference inputs, so the placer keeps them together.
#include "placeflow/devices/device.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/train/apply_functors.cuh"
#include "placeflow/ops/train/apply_kernel.h"

namespace pf {
namespace {

// Each kernel reads its scalar inputs, builds the update of apply_functors.cuh (which the GPU
// kernels in apply_ops.cu run too) and applies it to every element of the variable and slots.

// var -= alpha * delta.  Inputs: var, alpha, delta.
template <typename T>
class GradientDescentOp : public ApplyKernel<T> {
 public:
  explicit GradientDescentOp(const Node& n) : ApplyKernel<T>(n, {0}, 2) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) override {
    const GradientDescentUpdate<T> update{this->Scalar(ctx, 1)};
    T* var = v[0];
    this->ForEach(ctx, n, 2, [&](int64_t b, int64_t e) {
      SimdFor(b, e, [&](int64_t i) { update(var[i], g[i]); });
    });
    return Status::OK();
  }
};

// var -= (1 - decay)(var - value).  Inputs: var, decay, value.
template <typename T>
class MovingAverageOp : public ApplyKernel<T> {
 public:
  explicit MovingAverageOp(const Node& n) : ApplyKernel<T>(n, {0}, 2) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* value,
                int64_t n) override {
    const MovingAverageUpdate<T> update(this->Scalar(ctx, 1));
    T* var = v[0];
    this->ForEach(ctx, n, 2, [&](int64_t b, int64_t e) {
      SimdFor(b, e, [&](int64_t i) { update(var[i], value[i]); });
    });
    return Status::OK();
  }
};

// Inputs: var, accum, lr, grad, momentum.
template <typename T>
class MomentumOp : public ApplyKernel<T> {
 public:
  explicit MomentumOp(const Node& n)
      : ApplyKernel<T>(n, {0, 1}, 3), nesterov_(n.attr<bool>("use_nesterov")) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) override {
    const MomentumUpdate<T> update{this->Scalar(ctx, 2), this->Scalar(ctx, 4), nesterov_};
    T *var = v[0], *accum = v[1];
    this->ForEach(ctx, n, 4, [&](int64_t b, int64_t e) {
      SimdFor(b, e, [&](int64_t i) { update(var[i], accum[i], g[i]); });
    });
    return Status::OK();
  }

 private:
  bool nesterov_;
};

// Inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad.
template <typename T>
class AdamOp : public ApplyKernel<T> {
 public:
  explicit AdamOp(const Node& n) : ApplyKernel<T>(n, {0, 1, 2}, 9) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) override {
    const AdamUpdate<T> update(this->Scalar(ctx, 3), this->Scalar(ctx, 4), this->Scalar(ctx, 5),
                               this->Scalar(ctx, 6), this->Scalar(ctx, 7), this->Scalar(ctx, 8));
    T *var = v[0], *m = v[1], *s = v[2];
    this->ForEach(ctx, n, 20, [&](int64_t b, int64_t e) {
      SimdFor(b, e, [&](int64_t i) { update(var[i], m[i], s[i], g[i]); });
    });
    return Status::OK();
  }
};

// Inputs: var, ms, mom, lr, rho, momentum, epsilon, grad.
template <typename T>
class RMSPropOp : public ApplyKernel<T> {
 public:
  explicit RMSPropOp(const Node& n) : ApplyKernel<T>(n, {0, 1, 2}, 7) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) override {
    const RMSPropUpdate<T> update(this->Scalar(ctx, 3), this->Scalar(ctx, 4), this->Scalar(ctx, 5),
                                  this->Scalar(ctx, 6));
    T *var = v[0], *ms = v[1], *mom = v[2];
    this->ForEach(ctx, n, 20, [&](int64_t b, int64_t e) {
      SimdFor(b, e, [&](int64_t i) { update(var[i], ms[i], mom[i], g[i]); });
    });
    return Status::OK();
  }
};

// Inputs: var, accum, lr, grad.
template <typename T>
class AdagradOp : public ApplyKernel<T> {
 public:
  explicit AdagradOp(const Node& n) : ApplyKernel<T>(n, {0, 1}, 3) {}
  Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) override {
    const AdagradUpdate<T> update{this->Scalar(ctx, 2)};
    T *var = v[0], *accum = v[1];
    this->ForEach(ctx, n, 20, [&](int64_t b, int64_t e) {
      SimdFor(b, e, [&](int64_t i) { update(var[i], accum[i], g[i]); });
    });
    return Status::OK();
  }
};

// Schema: `refs` reference inputs, then `rest` (scalars and the gradient). `fused`: the
// remapper's twin, _Fused<name>, whose gradient is a sum: after those inputs come the sum's
// further terms and the scalars some terms are multiplied by (apply_kernel.h).
OpDef ApplyDef(const std::string& name, const std::vector<std::string>& refs,
               const std::vector<std::string>& rest, bool fused = false) {
  OpDef d(fused ? "_Fused" + name : name);
  for (const std::string& r : refs) d.RefInput(r, "T");
  for (const std::string& r : rest) d.Input(r, "T");
  if (fused) {
    d.InputList("terms", "T", "N")
        .InputList("scales", "T", "K")
        .Attr("N", int64_t{0})
        .Attr("K", int64_t{0})
        .Attr("scaled_terms", std::vector<int64_t>{});
  }
  return d.Output("out", "T")
      .TypeAttr("T", kRealTypes)
      .SetStateful()
      .SetNotDifferentiable()
      .SetShapeFn([base = static_cast<int>(refs.size() + rest.size())](ShapeContext& c) {
        for (int i = 1; i < c.num_inputs(); ++i) {
          if (c.input(i).rank() == 0) continue;  // scalars
          if (c.input(0).IsCompatibleWith(c.input(i))) continue;
          // A fused twin's further inputs are the terms of the gradient's AddN.
          const std::string what =
              i < base
                  ? fmt::format("input {}", i)
                  : fmt::format("AddN input {} (the AddN fused into this update)", i - base + 1);
          return errors::InvalidArgument("var and ", what,
                                         " do not have the same shape: ", c.input(0).ToString(),
                                         " vs ", c.input(i).ToString());
        }
        c.set_output(0, c.input(0));
        return Status::OK();
      });
}

#define PF_APPLY_KERNELS(op, Kernel)                                                            \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}), Kernel<float>); \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), Kernel<double>)

// Each optimizer's op, and its remapper twin _Fused<op> (CPU only; apply_kernel.h).
PF_REGISTER_OP(ApplyDef("ApplyGradientDescent", {"var"}, {"alpha", "delta"}));
PF_REGISTER_OP(ApplyDef("ApplyGradientDescent", {"var"}, {"alpha", "delta"}, true));
PF_APPLY_KERNELS("ApplyGradientDescent", GradientDescentOp);
PF_APPLY_KERNELS("_FusedApplyGradientDescent", GradientDescentOp);
PF_REGISTER_OP(ApplyDef("ApplyMovingAverage", {"var"}, {"decay", "value"}));
PF_APPLY_KERNELS("ApplyMovingAverage", MovingAverageOp);
PF_REGISTER_OP(ApplyDef("ApplyMomentum", {"var", "accum"}, {"lr", "grad", "momentum"})
                   .Attr("use_nesterov", false));
PF_REGISTER_OP(ApplyDef("ApplyMomentum", {"var", "accum"}, {"lr", "grad", "momentum"}, true)
                   .Attr("use_nesterov", false));
PF_APPLY_KERNELS("ApplyMomentum", MomentumOp);
PF_APPLY_KERNELS("_FusedApplyMomentum", MomentumOp);
PF_REGISTER_OP(ApplyDef("ApplyAdam", {"var", "m", "v"},
                        {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"}));
PF_REGISTER_OP(ApplyDef("ApplyAdam", {"var", "m", "v"},
                        {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"},
                        true));
PF_APPLY_KERNELS("ApplyAdam", AdamOp);
PF_APPLY_KERNELS("_FusedApplyAdam", AdamOp);
PF_REGISTER_OP(ApplyDef("ApplyRMSProp", {"var", "ms", "mom"},
                        {"lr", "rho", "momentum", "epsilon", "grad"}));
PF_REGISTER_OP(ApplyDef("ApplyRMSProp", {"var", "ms", "mom"},
                        {"lr", "rho", "momentum", "epsilon", "grad"}, true));
PF_APPLY_KERNELS("ApplyRMSProp", RMSPropOp);
PF_APPLY_KERNELS("_FusedApplyRMSProp", RMSPropOp);
PF_REGISTER_OP(ApplyDef("ApplyAdagrad", {"var", "accum"}, {"lr", "grad"}));
PF_REGISTER_OP(ApplyDef("ApplyAdagrad", {"var", "accum"}, {"lr", "grad"}, true));
PF_APPLY_KERNELS("ApplyAdagrad", AdagradOp);
PF_APPLY_KERNELS("_FusedApplyAdagrad", AdagradOp);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_APPLY_KERNELS
