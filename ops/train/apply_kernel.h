// The shared part of the fused optimizer kernels (CPU in apply_ops.cc, GPU in
// apply_ops_gpu.cc): lock the variable and its slots, check them against the gradient, update.
#pragma once

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "placeflow/devices/device.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/ops/op_util.h"

namespace pf {

// Locks the variables (in a fixed order), checks them against the gradient, and hands out
// their data.
//
// The same kernels run the remapper's _Fused<Apply> ops (CPU only; executor/remapper.h): the
// gradient input is then term 0 of a sum, AddN's, whose further terms follow the op's own
// inputs ("terms", N of them), and some terms were a Mul by a scalar ("scales", K of them;
// attr scaled_terms says which term each multiplies). The sum is made per chunk in a stack
// buffer, in AddN's order and rounding, and the update applied to the chunk while it is in
// cache: the same bits as Mul, AddN and the update run apart, in one pass over memory.
template <typename T>
class ApplyKernel : public OpKernel {
 public:
  ApplyKernel(const Node& n, std::vector<int> refs, int grad)
      : OpKernel(n), refs_(std::move(refs)), grad_(grad) {
    if (!n.HasAttr("scaled_terms")) return;
    const int base = n.num_inputs() - static_cast<int>(n.attr<int64_t>("N")) -
                     static_cast<int>(n.attr<int64_t>("K"));
    terms_.push_back(grad_);
    for (int j = 0; j < n.attr<int64_t>("N"); ++j) terms_.push_back(base + j);
    scale_input_.assign(terms_.size(), -1);
    const auto scaled = n.attr<std::vector<int64_t>>("scaled_terms");
    for (size_t k = 0; k < scaled.size(); ++k)
      scale_input_.at(scaled[k]) = base + static_cast<int>(n.attr<int64_t>("N") + k);
  }
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
        return errors::UninitializedValue(ReferencedVariable(node().input(r))->name());
      }
      for (size_t j = 0; j < std::max<size_t>(terms_.size(), 1); ++j) {
        const Tensor& g = terms_.empty() ? grad : ctx->input(terms_[j]);
        if (v->value.shape() == g.shape()) continue;
        return errors::InvalidArgument(
            node().op(), ": var and ", terms_.empty() ? "grad" : "AddN input " + std::to_string(j),
            " do not have the same shape: ", v->value.shape().ToString(), " vs ",
            g.shape().ToString(), " (variable ", ReferencedVariable(node().input(r))->name(), ")");
      }
      data.push_back(v->value.template data<T>());
    }
    PF_RETURN_IF_ERROR(terms_.empty() ? Update(ctx, data, grad.data<T>(), grad.num_elements())
                                      : UpdateWithSum(ctx, data, grad.num_elements()));
    *ctx->mutable_output(0) = ctx->ref_input(refs_[0])->value;
    return Status::OK();
  }

 protected:
  T Scalar(OpKernelContext* ctx, int i) const { return ctx->input(i).template data<T>()[0]; }
  // The update itself, on the variable's device; `v` holds the variable and its slots.
  virtual Status Update(OpKernelContext* ctx, const std::vector<T*>& v, const T* g, int64_t n) = 0;
  // fn(begin, end) over [0, n): split over the pool, or at once on a fused update's chunk
  // (already one shard of the pool's split).
  template <typename Fn>
  void ForEach(OpKernelContext* ctx, int64_t n, int64_t cost_per_unit, Fn&& fn) {
    if (t_in_chunk) {
      fn(0, n);
    } else {
      ParallelFor(ctx, n, cost_per_unit, std::forward<Fn>(fn));
    }
  }

 private:
  static constexpr int64_t kChunk = 1024;  // the sum of a chunk stays in L1 for the update
  static inline thread_local bool t_in_chunk = false;

  Status UpdateWithSum(OpKernelContext* ctx, const std::vector<T*>& v, int64_t n) {
    const size_t k = terms_.size();
    std::vector<const T*> x(k);
    std::vector<T> scale(k, T(1));
    for (size_t j = 0; j < k; ++j) {
      x[j] = ctx->input(terms_[j]).template data<T>();
      if (scale_input_[j] < 0) continue;
      const Tensor& s = ctx->input(scale_input_[j]);
      if (s.num_elements() != 1) {
        return errors::InvalidArgument(node().op(), ": the scale of gradient term ", j,
                                       " must be a scalar, got shape ", s.shape().ToString());
      }
      scale[j] = s.template data<T>()[0];
    }
    std::mutex mu;
    Status first_error;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    ParallelFor(ctx, chunks, kChunk * static_cast<int64_t>(4 + k), [&](int64_t b, int64_t e) {
      alignas(64) T sum[kChunk];
      std::vector<T*> at(v.size());
      for (int64_t c = b; c < e; ++c) {
        const int64_t off = c * kChunk, len = std::min(kChunk, n - off);
        for (size_t j = 0; j < k; ++j) {
          const T* xj = x[j] + off;
          const T sj = scale[j];
          if (scale_input_[j] < 0 && j == 0) {
            SimdFor(0, len, [&](int64_t i) { sum[i] = xj[i]; });
          } else if (scale_input_[j] < 0) {
            SimdFor(0, len, [&](int64_t i) { sum[i] += xj[i]; });
          } else if (j == 0) {
            SimdFor(0, len, [&](int64_t i) { sum[i] = xj[i] * sj; });
          } else {
            SimdFor(0, len, [&](int64_t i) { sum[i] += xj[i] * sj; });
          }
        }
        for (size_t r = 0; r < v.size(); ++r) at[r] = v[r] + off;
        t_in_chunk = true;
        Status s = Update(ctx, at, sum, len);
        t_in_chunk = false;
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.ok()) first_error = s;
        }
      }
    });
    return first_error;
  }

  std::vector<int> refs_;
  int grad_;
  std::vector<int> terms_;        // fused: the inputs summed into the gradient, in AddN's order
  std::vector<int> scale_input_;  // fused: per term, the input of its scalar factor, or -1
};

}  // namespace pf
