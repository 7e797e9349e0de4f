// RandomUniform, RandomNormal, TruncatedNormal on a counter-based Philox4x32-10 generator.
// Element i of call c draws from counter (i, c, attempt): results do not depend on how the
// loop is split across threads, and a GPU kernel can reproduce them.
#include <cmath>
#include <random>

#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/random/philox.cuh"
#include "placeflow/ops/random/philox_key.h"

namespace pf {
namespace {

enum class Dist { kUniform, kNormal, kTruncatedNormal };

template <typename T, Dist kDist>
class RandomOp : public OpKernel {
 public:
  explicit RandomOp(const Node& n) : OpKernel(n), draws_(n) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const uint32_t call = draws_.Next();
    T* y = out->data<T>();
    ParallelFor(ctx, out->num_elements(), 60, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = static_cast<T>(Sample(static_cast<uint64_t>(i), call));
    });
    return Status::OK();
  }

 private:
  float Sample(uint64_t i, uint32_t call) const {
    for (uint32_t attempt = 0;; ++attempt) {
      const Philox4x32::Block r = Philox4x32::At(i, call, attempt, draws_.k0(), draws_.k1());
      if constexpr (kDist == Dist::kUniform) {
        return Philox4x32::ToUniform(r.v[0]);
      } else {
        // Box-Muller: two normals from the block; truncated normal keeps the first within 2 sigma.
        for (int k = 0; k < 4; k += 2) {
          float u1 = std::max(Philox4x32::ToUniform(r.v[k]), 1e-7f),
                u2 = Philox4x32::ToUniform(r.v[k + 1]);
          float z = std::sqrt(-2.f * std::log(u1)) * std::cos(6.2831853071795864f * u2);
          if (kDist == Dist::kNormal || std::fabs(z) <= 2.f) return z;
        }
      }
    }
  }

  PhiloxCalls draws_;
};

#define PF_RANDOM_OP(op, dist)                                                       \
  PF_REGISTER_OP(OpDef(op)                                                           \
                     .Output("output", "dtype")                                      \
                     .RequiredAttr("shape")                                          \
                     .Attr("seed", int64_t{0})                                       \
                     .Attr("seed2", int64_t{0})                                      \
                     .TypeAttr("dtype", kRealTypes, DT_FLOAT)                        \
                     .SetStateful()                                                  \
                     .SetNotDifferentiable()                                         \
                     .SetShapeFn([](ShapeContext& c) {                               \
                       c.set_output(0, c.attr<Shape>("shape"));                      \
                       return Status::OK();                                          \
                     }));                                                            \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("dtype", {DT_FLOAT}),  \
                     RandomOp<float, dist>);                                         \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("dtype", {DT_DOUBLE}), \
                     RandomOp<double, dist>)
PF_RANDOM_OP("RandomUniform", Dist::kUniform);
PF_RANDOM_OP("RandomNormal", Dist::kNormal);
PF_RANDOM_OP("TruncatedNormal", Dist::kTruncatedNormal);

Output Random(const Scope& s, const char* op, const Shape& shape, DType dtype, int64_t seed) {
  if (!shape.IsFullyDefined())
    throw Error(
        errors::InvalidArgument(op, " needs a fully defined shape, got ", shape.ToString()));
  auto [s1, s2] = ResolveSeeds(s, seed);
  return NodeBuilder(s, op)
      .Attr("shape", shape)
      .Attr("dtype", dtype)
      .Attr("seed", s1)
      .Attr("seed2", s2)
      .Finalize();
}

}  // namespace

namespace ops {
Output RandomUniform(const Scope& s, const pf::Shape& shape, DType dtype, int64_t seed) {
  return Random(s, "RandomUniform", shape, dtype, seed);
}
Output RandomNormal(const Scope& s, const pf::Shape& shape, DType dtype, int64_t seed) {
  return Random(s, "RandomNormal", shape, dtype, seed);
}
Output TruncatedNormal(const Scope& s, const pf::Shape& shape, DType dtype, int64_t seed) {
  return Random(s, "TruncatedNormal", shape, dtype, seed);
}
}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_RANDOM_OP
