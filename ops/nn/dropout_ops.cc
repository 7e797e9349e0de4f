// Dropout(x; rate, seed, seed2) -> (output, mask): tf.nn.dropout fused into one stateful op.
// Element i of the kernel's call c is kept iff u >= rate, u being the Philox uniform that
// RandomUniform with the same (seed, seed2) draws for its element i in its call c (counter
// (i, c, 0), philox.cuh); mask = 1 / (1 - rate) where kept, else 0, and output = x * mask.
// The GPU kernel (dropout_ops.cu) draws the same u, so both devices drop the same elements.
// The mask is an output so the gradient (g * mask) reuses the draw instead of repeating it.
#include "placeflow/ops/nn/dropout_ops.h"

#include <cmath>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/random/philox.cuh"
#include "placeflow/ops/random/philox_key.h"

namespace pf {

Status ValidateDropoutRate(float rate) {
  if (!(rate >= 0.f && rate < 1.f)) {
    return errors::InvalidArgument(
        "rate must be a scalar tensor or a float in the range [0, 1), got ", rate);
  }
  return Status::OK();
}

namespace {

template <typename T>
class DropoutOp : public OpKernel {
 public:
  explicit DropoutOp(const Node& n) : OpKernel(n), draws_(n), rate_(n.attr<float>("rate")) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(ValidateDropoutRate(rate_));
    const Tensor& x = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(Tensor * mask, ctx->AllocateOutput(1));
    const uint32_t call = draws_.Next();
    const T scale = T(1) / (T(1) - static_cast<T>(rate_));
    const T* px = x.data<T>();
    T* py = out->data<T>();
    T* pm = mask->data<T>();
    const float rate = rate_;
    const uint32_t k0 = draws_.k0(), k1 = draws_.k1();
    ParallelFor(ctx, x.num_elements(), 60, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const float u = Philox4x32::Uniform(static_cast<uint64_t>(i), call, k0, k1);
        const T m = u >= rate ? scale : T(0);
        pm[i] = m;
        py[i] = px[i] * m;
      }
    });
    return Status::OK();
  }

 private:
  PhiloxCalls draws_;
  float rate_;
};

// The mask is the draw's, a constant as far as x is concerned: only the output carries a
// gradient.
PF_GRAD(DropoutGrad) {
  *dx = {ops::Mul(s, g[0], Out(n, 1))};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("Dropout")
                   .Input("x", "T")
                   .Output("output", "T")
                   .Output("mask", "T")
                   .RequiredAttr("rate")
                   .Attr("seed", int64_t{0})
                   .Attr("seed2", int64_t{0})
                   .TypeAttr("T", kRealTypes)
                   .SetStateful()
                   .SetGradient(DropoutGrad)
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(ValidateDropoutRate(c.attr<float>("rate")));
                     c.set_output(0, c.input(0));
                     c.set_output(1, c.input(0));
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("Dropout", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   DropoutOp<float>);
PF_REGISTER_KERNEL(KernelDef("Dropout", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   DropoutOp<double>);

}  // namespace

namespace ops {

Output Dropout(const Scope& s, Output x, float rate, int64_t seed) {
  auto [s1, s2] = ResolveSeeds(s, seed);
  return NodeBuilder(s, "Dropout")
      .Input(x)
      .Attr("rate", rate)
      .Attr("seed", s1)
      .Attr("seed2", s2)
      .Finalize();
}

}  // namespace ops
}  // namespace pf
