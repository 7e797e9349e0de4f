// GPU kernels for data movement (device code in copy_ops.cu): Transpose, Concat, Split, Slice,
// Gather, and the gradient kernels ConcatGrad, SliceGrad, GatherGrad (their ops are in
// copy_grad_ops.cc). Concat and Split pieces are 2-D boxes [outer, inner] copied with one
// strided launch per piece.
#include "placeflow/ops/array/array_launch.h"
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

int ElemSize(DType t) { return static_cast<int>(DTypeSize(t)); }

// Elements before `axis` (outer) and from it on (inner) of `s`.
void OuterInner(const Shape& s, int axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  for (int d = 0; d < axis; ++d) *outer *= s.dim(d);
  *inner = *outer == 0 ? 0 : s.num_elements() / *outer;
}

// Copies [outer, piece] from `src` (row length src_row, starting at column src_col) to `dst`
// (row length dst_row, column dst_col).
void CopyColumns(GpuDevice* gpu, int es, const void* src, int64_t src_row, int64_t src_col,
                 void* dst, int64_t dst_row, int64_t dst_col, int64_t outer, int64_t piece) {
  gpu::StridedBox b;
  b.rank = 2;
  b.dims[0] = outer;
  b.dims[1] = piece;
  b.in_strides[0] = src_row;
  b.in_strides[1] = 1;
  b.out_strides[0] = dst_row;
  b.out_strides[1] = 1;
  b.in_offset = src_col;
  b.out_offset = dst_col;
  gpu::StridedCopy(es, src, dst, b, gpu->compute_stream());
}

int Axis(int64_t axis, int rank) { return static_cast<int>(axis < 0 ? axis + rank : axis); }

class ConcatGpuOp : public GpuOpKernel {
 public:
  explicit ConcatGpuOp(const Node& n) : GpuOpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int axis = Axis(axis_, out->rank());
    int64_t outer, out_inner, col = 0;
    OuterInner(out->shape(), axis, &outer, &out_inner);
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      int64_t o, inner;
      OuterInner(ctx->input(i).shape(), axis, &o, &inner);
      CopyColumns(gpu, ElemSize(out->dtype()), ctx->input(i).raw_data(), inner, 0, out->raw_data(),
                  out_inner, col, outer, inner);
      col += inner;
    }
    return Status::OK();
  }

 private:
  int64_t axis_;
};

// Split (equal pieces) and ConcatGrad (pieces shaped like the concatenated inputs) both cut
// input 0 along the axis into the outputs.
class CutGpuOp : public GpuOpKernel {
 public:
  explicit CutGpuOp(const Node& n) : GpuOpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& in = ctx->input(0);
    const int axis = Axis(axis_, in.rank());
    int64_t outer, in_inner, col = 0;
    OuterInner(in.shape(), axis, &outer, &in_inner);
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(i));
      int64_t o, inner;
      OuterInner(out->shape(), axis, &o, &inner);
      CopyColumns(gpu, ElemSize(in.dtype()), in.raw_data(), in_inner, col, out->raw_data(), inner,
                  0, outer, inner);
      col += inner;
    }
    return Status::OK();
  }

 private:
  int64_t axis_;
};

std::vector<int64_t> RowMajorStrides(const Shape& s) {
  std::vector<int64_t> st(s.rank(), 1);
  for (int d = s.rank() - 2; d >= 0; --d) st[d] = st[d + 1] * s.dim(d + 1);
  return st;
}

// The box of `small` inside `big` at `begin`: Slice reads it, SliceGrad writes it.
StatusOr<gpu::StridedBox> BoxAt(const Shape& big, const Shape& small,
                                const std::vector<int64_t>& begin, bool read) {
  if (big.rank() > gpu::kMaxDims)
    return errors::Unimplemented("GPU slices support up to ", gpu::kMaxDims, " dims");
  gpu::StridedBox b;
  b.rank = big.rank();
  const std::vector<int64_t> big_st = RowMajorStrides(big), small_st = RowMajorStrides(small);
  int64_t offset = 0;
  for (int d = 0; d < b.rank; ++d) {
    b.dims[d] = small.dim(d);
    b.in_strides[d] = read ? big_st[d] : small_st[d];
    b.out_strides[d] = read ? small_st[d] : big_st[d];
    offset += begin[d] * big_st[d];
  }
  (read ? b.in_offset : b.out_offset) = offset;
  return b;
}

class SliceGpuOp : public GpuOpKernel {
 public:
  explicit SliceGpuOp(const Node& n)
      : GpuOpKernel(n), begin_(n.attr<std::vector<int64_t>>("begin")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (out->num_elements() == 0) return Status::OK();
    if (in.rank() == 0) return ctx->SetOutput(0, in);
    PF_ASSIGN_OR_RETURN(gpu::StridedBox b, BoxAt(in.shape(), out->shape(), begin_, true));
    gpu::StridedCopy(ElemSize(in.dtype()), in.raw_data(), out->raw_data(), b,
                     gpu->compute_stream());
    return Status::OK();
  }

 private:
  std::vector<int64_t> begin_;
};

class SliceGradGpuOp : public GpuOpKernel {
 public:
  explicit SliceGradGpuOp(const Node& n)
      : GpuOpKernel(n), begin_(n.attr<std::vector<int64_t>>("begin")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (out->rank() == 0) return ctx->SetOutput(0, g);
    VisitDType(out->dtype(), [&](auto t) {
      using T = decltype(t);
      gpu::Fill<T>(out->data<T>(), out->num_elements(), T{}, nullptr, gpu->compute_stream());
    });
    if (g.num_elements() == 0) return Status::OK();
    PF_ASSIGN_OR_RETURN(gpu::StridedBox b, BoxAt(out->shape(), g.shape(), begin_, false));
    gpu::StridedCopy(ElemSize(g.dtype()), g.raw_data(), out->raw_data(), b, gpu->compute_stream());
    return Status::OK();
  }

 private:
  std::vector<int64_t> begin_;
};

class TransposeGpuOp : public GpuOpKernel {
 public:
  explicit TransposeGpuOp(const Node& n)
      : GpuOpKernel(n), perm_(n.attr<std::vector<int64_t>>("perm")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (in.num_elements() == 0) return Status::OK();
    if (in.rank() > gpu::kMaxDims)
      return errors::Unimplemented("GPU Transpose supports up to ", gpu::kMaxDims, " dims");
    const std::vector<int64_t> in_st = RowMajorStrides(in.shape()),
                               out_st = RowMajorStrides(out->shape());
    gpu::StridedBox b;
    b.rank = in.rank();
    for (int d = 0; d < b.rank; ++d) {
      b.dims[d] = out->dim(d);
      b.in_strides[d] = in_st[perm_[d]];
      b.out_strides[d] = out_st[d];
    }
    gpu::StridedCopy(ElemSize(in.dtype()), in.raw_data(), out->raw_data(), b,
                     gpu->compute_stream());
    return Status::OK();
  }

 private:
  std::vector<int64_t> perm_;
};

template <typename Index>
class GatherGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t limit = params.dim(0);
    const int64_t row = limit == 0 ? 0 : params.num_elements() / limit;
    gpu::Gather<Index>(ElemSize(params.dtype()), params.raw_data(), indices.data<Index>(),
                       out->raw_data(), indices.num_elements(), row, limit, gpu->compute_stream());
    return Status::OK();
  }
};

template <typename T, typename Index>
class GatherGradGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t limit = out->rank() == 0 ? 1 : out->dim(0);
    const int64_t row = limit == 0 ? 0 : out->num_elements() / limit;
    gpu::ScatterAdd<T, Index>(g.data<T>(), indices.data<Index>(), out->data<T>(),
                              indices.num_elements(), row, limit, gpu->compute_stream());
    return Status::OK();
  }
};

PF_REGISTER_KERNEL(KernelDef("Concat", kDeviceGpu), ConcatGpuOp);
PF_REGISTER_KERNEL(KernelDef("Split", kDeviceGpu), CutGpuOp);
PF_REGISTER_KERNEL(KernelDef("ConcatGrad", kDeviceGpu), CutGpuOp);
PF_REGISTER_KERNEL(KernelDef("Slice", kDeviceGpu), SliceGpuOp);
PF_REGISTER_KERNEL(KernelDef("SliceGrad", kDeviceGpu), SliceGradGpuOp);
PF_REGISTER_KERNEL(KernelDef("Transpose", kDeviceGpu), TransposeGpuOp);
PF_REGISTER_KERNEL(Gpu("Gather", DT_INT32, "Tindices"), GatherGpuOp<int32_t>);
PF_REGISTER_KERNEL(Gpu("Gather", DT_INT64, "Tindices"), GatherGpuOp<int64_t>);
#define PF_GPU_GATHER_GRAD(T, I)                                                        \
  PF_REGISTER_KERNEL(                                                                   \
      Gpu("GatherGrad", DataTypeOf<T>()).TypeConstraint("Tindices", {DataTypeOf<I>()}), \
      GatherGradGpuOp<T, I>)
PF_GPU_GATHER_GRAD(float, int32_t);
PF_GPU_GATHER_GRAD(float, int64_t);
PF_GPU_GATHER_GRAD(double, int32_t);
PF_GPU_GATHER_GRAD(double, int64_t);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_GATHER_GRAD
