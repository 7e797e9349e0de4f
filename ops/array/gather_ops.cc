// GatherV2 (tf.gather with an axis; batch_dims 0) and Tile, with their gradients: dense
// scatter-add kernels (GatherV2Grad, TileGrad) into zeros shaped like the forward input.
#include <algorithm>
#include <cstring>

#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// The dtypes these kernels are instantiated for (not op_util.h's lists, which may grow).

// ---- GatherV2 ----
// The canonical axis from the axis input's value (rank of params known).
StatusOr<int> GatherAxis(const Shape& params, const Tensor& axis_value) {
  if (axis_value.rank() != 0)
    return errors::InvalidArgument("axis must be a scalar, got shape ", axis_value.shape());
  const int64_t axis = axis_value.AsInt64Vector()[0];
  const int rank = params.rank();
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument("Expected axis in the range [", -rank, ", ", rank, "), but got ",
                                   axis);
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Status GatherV2Shape(ShapeContext& c) {
  if (c.attr<int64_t>("batch_dims") != 0) {
    return errors::Unimplemented("GatherV2: batch_dims != 0 is not supported (got ",
                                 c.attr<int64_t>("batch_dims"), ")");
  }
  PF_RETURN_IF_ERROR(c.WithRank(2, 0));
  const Shape &params = c.input(0), &indices = c.input(1);
  const Tensor* axis = c.input_tensor(2);
  if (params.unknown_rank() || indices.unknown_rank())
    return (c.set_output(0, Shape::Unknown()), Status::OK());
  if (params.rank() < 1) {
    return errors::InvalidArgument("params must be at least 1 dimensional, got ",
                                   params.ToString());
  }
  Shape out;
  if (axis == nullptr) {
    for (int d = 0; d < params.rank() - 1 + indices.rank(); ++d) out.AddDim(-1);
    return (c.set_output(0, out), Status::OK());
  }
  PF_ASSIGN_OR_RETURN(const int a, GatherAxis(params, *axis));
  for (int d = 0; d < a; ++d) out.AddDim(params.dim(d));
  for (int64_t d : indices.dims()) out.AddDim(d);
  for (int d = a + 1; d < params.rank(); ++d) out.AddDim(params.dim(d));
  c.set_output(0, out);
  return Status::OK();
}

// params viewed as [outer, n, inner] around `axis`.
struct GatherGeometry {
  int64_t outer = 1, n = 0, inner = 1;
};
GatherGeometry Geometry(const Shape& params, int axis) {
  GatherGeometry g;
  for (int d = 0; d < axis; ++d) g.outer *= params.dim(d);
  g.n = params.dim(axis);
  for (int d = axis + 1; d < params.rank(); ++d) g.inner *= params.dim(d);
  return g;
}

template <typename Index>
Status CheckIndices(const Tensor& indices, int64_t limit) {
  const Index* idx = indices.data<Index>();
  for (int64_t i = 0; i < indices.num_elements(); ++i) {
    if (idx[i] < 0 || idx[i] >= limit) {
      return errors::InvalidArgument("indices[", i, "] = ", idx[i], " is not in [0, ", limit, ")");
    }
  }
  return Status::OK();
}

template <typename Index>
class GatherV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor &params = ctx->input(0), &indices = ctx->input(1);
    PF_ASSIGN_OR_RETURN(const int axis, GatherAxis(params.shape(), ctx->input(2)));
    const GatherGeometry g = Geometry(params.shape(), axis);
    PF_RETURN_IF_ERROR(CheckIndices<Index>(indices, g.n));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t k = indices.num_elements();
    const size_t row = static_cast<size_t>(g.inner) * DTypeSize(params.dtype());
    const char* src = static_cast<const char*>(params.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    const Index* idx = indices.data<Index>();
    ParallelFor(ctx, g.outer * k, static_cast<int64_t>(row / 4 + 1), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / k, i = t % k;
        std::memcpy(dst + t * row, src + (o * g.n + idx[i]) * row, row);
      }
    });
    return Status::OK();
  }
};

template <typename T, typename Index>
class GatherV2GradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor &grad = ctx->input(0), &indices = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(const int axis, GatherAxis(out->shape(), ctx->input(2)));
    const GatherGeometry g = Geometry(out->shape(), axis);
    PF_RETURN_IF_ERROR(CheckIndices<Index>(indices, g.n));
    const int64_t k = indices.num_elements();
    if (grad.num_elements() != g.outer * k * g.inner) {
      return errors::InvalidArgument("GatherV2Grad: grad ", grad.shape(), " does not fit params ",
                                     out->shape(), " and indices ", indices.shape());
    }
    T* y = out->data<T>();
    std::fill(y, y + out->num_elements(), T(0));
    const T* dy = grad.data<T>();
    const Index* idx = indices.data<Index>();
    // Rows of one outer slice never collide with another's: split over `outer`.
    ParallelFor(ctx, g.outer, k * g.inner, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        for (int64_t i = 0; i < k; ++i) {
          T* dst = y + (o * g.n + idx[i]) * g.inner;
          const T* src = dy + (o * k + i) * g.inner;
          for (int64_t j = 0; j < g.inner; ++j) dst[j] += src[j];
        }
      }
    });
    return Status::OK();
  }
};

PF_GRAD(GatherV2GradFn) {
  *dx = {NodeBuilder(s, "GatherV2Grad")
             .Input(g[0])
             .Input(n.input(1))
             .Input(n.input(2))
             .Input(n.input(0))
             .Finalize(),
         Output(), Output()};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("GatherV2")
                   .Input("params", "Tparams")
                   .Input("indices", "Tindices")
                   .Input("axis", "Taxis")
                   .Output("output", "Tparams")
                   .Attr("batch_dims", int64_t{0})
                   .TypeAttr("Tparams", kComputableTypes)
                   .TypeAttr("Tindices", kIndexTypes)
                   .TypeAttr("Taxis", kIndexTypes, DT_INT32)
                   .SetGradient(GatherV2GradFn)
                   .SetShapeFn(GatherV2Shape));
PF_REGISTER_KERNEL(KernelDef("GatherV2", kDeviceCpu).TypeConstraint("Tindices", {DT_INT32}),
                   GatherV2Op<int32_t>);
PF_REGISTER_KERNEL(KernelDef("GatherV2", kDeviceCpu).TypeConstraint("Tindices", {DT_INT64}),
                   GatherV2Op<int64_t>);

PF_REGISTER_OP(OpDef("GatherV2Grad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("indices", "Tindices")
                   .Input("axis", "Taxis")
                   .Input("like", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kNumberTypes)
                   .TypeAttr("Tindices", kIndexTypes)
                   .TypeAttr("Taxis", kIndexTypes, DT_INT32)
                   .SetShapeOnlyInput(3)
                   .SetShapeFn([](ShapeContext& c) { return ShapeOfInput(c, 3); }));
#define PF_GATHER_GRAD_KERNELS(T)                                 \
  PF_REGISTER_KERNEL(KernelDef("GatherV2Grad", kDeviceCpu)        \
                         .TypeConstraint("T", {DataTypeOf<T>()})  \
                         .TypeConstraint("Tindices", {DT_INT32}), \
                     GatherV2GradOp<T, int32_t>);                 \
  PF_REGISTER_KERNEL(KernelDef("GatherV2Grad", kDeviceCpu)        \
                         .TypeConstraint("T", {DataTypeOf<T>()})  \
                         .TypeConstraint("Tindices", {DT_INT64}), \
                     GatherV2GradOp<T, int64_t>)
PF_GATHER_GRAD_KERNELS(float);
PF_GATHER_GRAD_KERNELS(double);
PF_GATHER_GRAD_KERNELS(int32_t);
PF_GATHER_GRAD_KERNELS(int64_t);

// ---- Tile ----
Status TileShape(ShapeContext& c) {
  const Shape& in = c.input(0);
  PF_RETURN_IF_ERROR(c.WithRank(1, 1));
  const Tensor* m = c.input_tensor(1);
  const int64_t len = m != nullptr                ? m->num_elements()
                      : c.input(1).unknown_rank() ? -1
                                                  : c.input(1).dim(0);
  if (!in.unknown_rank() && len >= 0 && len != in.rank()) {
    return errors::InvalidArgument("Expected multiples argument to be a vector of length ",
                                   in.rank(), " but got length ", len);
  }
  const int rank = in.unknown_rank() ? static_cast<int>(len) : in.rank();
  if (rank < 0) return (c.set_output(0, Shape::Unknown()), Status::OK());
  std::vector<int64_t> mult = m != nullptr ? m->AsInt64Vector() : std::vector<int64_t>(rank, -1);
  Shape out;
  for (int d = 0; d < rank; ++d) {
    if (m != nullptr && mult[d] < 0) {
      return errors::InvalidArgument("Expected multiples[", d, "] >= 0, but got ", mult[d]);
    }
    const int64_t dim = in.unknown_rank() ? -1 : in.dim(d);
    int64_t prod = -1;
    if (dim >= 0 && mult[d] >= 0 && __builtin_mul_overflow(dim, mult[d], &prod)) {
      return errors::InvalidArgument("Tile: dimension ", d, " of ", in.ToString(), " times ",
                                     mult[d], " overflows int64");
    }
    out.AddDim(dim == 0 || mult[d] == 0 ? 0 : prod);
  }
  c.set_output(0, out);
  return Status::OK();
}

// Calls fn(out_index, in_index) for every element of `out`, the input index taken modulo the
// input's dims (Tile reads there; TileGrad adds there).
template <typename Fn>
void ForTiled(const Shape& in, const Shape& out, int64_t begin, int64_t end, Fn&& fn) {
  const int rank = out.rank();
  for (int64_t i = begin; i < end; ++i) {
    int64_t rem = i, src = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      src += (rem % out.dim(d)) % in.dim(d) * stride;
      rem /= out.dim(d);
      stride *= in.dim(d);
    }
    fn(i, src);
  }
}

class TileOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (out->num_elements() == 0) return Status::OK();
    const size_t size = DTypeSize(in.dtype());
    const char* x = static_cast<const char*>(in.raw_data());
    char* y = static_cast<char*>(out->raw_data());
    ParallelFor(ctx, out->num_elements(), 4, [&](int64_t b, int64_t e) {
      ForTiled(in.shape(), out->shape(), b, e,
               [&](int64_t o, int64_t i) { std::memcpy(y + o * size, x + i * size, size); });
    });
    return Status::OK();
  }
};

template <typename T>
class TileGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    T* y = out->data<T>();
    std::fill(y, y + out->num_elements(), T(0));
    if (grad.num_elements() == 0) return Status::OK();
    const T* dy = grad.data<T>();
    ForTiled(out->shape(), grad.shape(), 0, grad.num_elements(),
             [&](int64_t o, int64_t i) { y[i] += dy[o]; });
    return Status::OK();
  }
};

PF_GRAD(TileGradFn) {
  *dx = {NodeBuilder(s, "TileGrad").Input(g[0]).Input(n.input(1)).Input(n.input(0)).Finalize(),
         Output()};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("Tile")
                   .Input("input", "T")
                   .Input("multiples", "Tmultiples")
                   .Output("output", "T")
                   .TypeAttr("T", kComputableTypes)
                   .TypeAttr("Tmultiples", kIndexTypes, DT_INT32)
                   .SetGradient(TileGradFn)
                   .SetShapeFn(TileShape));
PF_REGISTER_KERNEL(KernelDef("Tile", kDeviceCpu), TileOp);

PF_REGISTER_OP(OpDef("TileGrad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("multiples", "Tmultiples")
                   .Input("like", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kNumberTypes)
                   .TypeAttr("Tmultiples", kIndexTypes, DT_INT32)
                   .SetShapeOnlyInput(2)
                   .SetShapeFn([](ShapeContext& c) { return ShapeOfInput(c, 2); }));
#define PF_TILE_GRAD_KERNEL(T)                                                                 \
  PF_REGISTER_KERNEL(KernelDef("TileGrad", kDeviceCpu).TypeConstraint("T", {DataTypeOf<T>()}), \
                     TileGradOp<T>)
PF_TILE_GRAD_KERNEL(float);
PF_TILE_GRAD_KERNEL(double);
PF_TILE_GRAD_KERNEL(int32_t);
PF_TILE_GRAD_KERNEL(int64_t);

}  // namespace

namespace ops {

Output GatherV2(const Scope& s, Output params, Output indices, Output axis) {
  return NodeBuilder(s, "GatherV2").Input(params).Input(indices).Input(axis).Finalize();
}
Output GatherV2(const Scope& s, Output params, Output indices, int axis) {
  return GatherV2(s, params, indices, ConstInt(s.NewSubScope("").WithOpName("axis"), axis));
}
Output Tile(const Scope& s, Output input, Output multiples) {
  return NodeBuilder(s, "Tile").Input(input).Input(multiples).Finalize();
}
Output Tile(const Scope& s, Output input, const std::vector<int32_t>& multiples) {
  return Tile(s, input, ConstInt(s.NewSubScope("").WithOpName("multiples"), multiples));
}

}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GATHER_GRAD_KERNELS
#undef PF_TILE_GRAD_KERNEL
