// The shared part of the fused optimizer kernels (CPU in apply_ops.cc, GPU in
// apply_ops_gpu.cc): lock the variable and its slots, check them against the gradient, update.
#pragma once

#include <mutex>
#include <vector>

#include "placeflow/devices/device.h"
#include "placeflow/graph/kernel.h"

namespace pf {

// Locks the variables (in a fixed order), checks them against the gradient, and hands out
// their data.
template <typename T>
class ApplyKernel : public OpKernel {
 public:
  ApplyKernel(const Node& n, std::vector<int> refs, int grad)
      : OpKernel(n), refs_(std::move(refs)), grad_(grad) {}
  Status Compute(OpKernelContext* ctx) override {
    std::vector<std::unique_lock<std::mutex>> locks;
    std::vector<T*> data;
    const Tensor& grad = ctx->input(grad_);
    for (int r : refs_) {
      VarState* v = ctx->ref_input(r);
      if (v == nullptr)
        return errors::Internal(node().op(), ": input ", r, " is not a variable reference");
      locks.emplace_back(v->mu);
      if (!v->initialized()) {
        return errors::FailedPrecondition("Attempting to use uninitialized value ",
                                          node().input(r).node->name());
      }
      if (v->value.shape() != grad.shape()) {
        return errors::InvalidArgument(
            node().op(), ": var and grad do not have the same shape: ", v->value.shape().ToString(),
            " vs ", grad.shape().ToString(), " (variable ", node().input(r).node->name(), ")");
      }
      data.push_back(v->value.template data<T>());
    }
    PF_RETURN_IF_ERROR(Update(ctx, data, grad.data<T>(), grad.num_elements()));
    *ctx->mutable_output(0) = ctx->ref_input(refs_[0])->value;
    return Status::OK();
  }

 protected:
  T Scalar(OpKernelContext* ctx, int i) const { return ctx->input(i).template data<T>()[0]; }
  // The update itself, on the variable's device; `v` holds the variable and its slots.
  virtual Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) = 0;

 private:
  std::vector<int> refs_;
  int grad_;
};

}  // namespace pf
