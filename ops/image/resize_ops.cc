// ResizeBilinear, ResizeNearestNeighbor and their gradients (TensorFlow's ops and attrs), CPU
// kernels over ops/image/resize.h; ops::Resize is TF 2's tf.image.resize.
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/image/resize.h"
#include "placeflow/ops/image_ops.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

const std::vector<DType> kResizeTypes = {DT_FLOAT, DT_DOUBLE, DT_HALF,  DT_BFLOAT16, DT_UINT8,
                                         DT_INT8,  DT_INT16,  DT_INT32, DT_INT64};

image::ResizeMode ModeOf(const Node& n) {
  return {n.attr<bool>("align_corners"), n.attr<bool>("half_pixel_centers")};
}

Status CheckMode(const image::ResizeMode& m, const char* op) {
  if (m.align_corners && m.half_pixel_centers) {
    return errors::InvalidArgument(
        op, ": if half_pixel_centers is True, align_corners must be False (TensorFlow's rule)");
  }
  return Status::OK();
}

// [batch, size[0], size[1], channels]: the size from its value when the shape function sees it.
Status ResizeShape(ShapeContext& c) {
  PF_RETURN_IF_ERROR(c.WithRank(0, 4));
  PF_RETURN_IF_ERROR(c.WithRank(1, 1));
  const Shape& in = c.input(0);
  int64_t h = -1, w = -1;
  if (const Tensor* size = c.input_tensor(1); size != nullptr && size->InHostMemory()) {
    if (size->dtype() != DT_INT32 || size->num_elements() != 2)
      return errors::InvalidArgument("size must be an int32 [2] (new height, new width)");
    h = size->data<int32_t>()[0];
    w = size->data<int32_t>()[1];
    if (h <= 0 || w <= 0)
      return errors::InvalidArgument("size must be positive, got [", h, ", ", w, "]");
  }
  const bool known = !in.unknown_rank();
  c.set_output(0, Shape({known ? in.dim(0) : -1, h, w, known ? in.dim(3) : -1}));
  return Status::OK();
}

// fn(double{}) for DT_DOUBLE, else fn(float{}): the gradient kernels' two dtypes.
template <typename Fn>
void FloatOrDouble(DType t, const Fn& fn) {
  if (t == DT_DOUBLE) {
    fn(double{});
  } else {
    fn(float{});
  }
}

struct Dims {
  int64_t b, h, w, c, oh, ow;
};
StatusOr<Dims> DimsOf(const Tensor& images, const Tensor& size, const char* op) {
  if (images.rank() != 4)
    return errors::InvalidArgument(op, ": images must be 4-D, got ", images.shape().ToString());
  if (size.dtype() != DT_INT32 || size.num_elements() != 2)
    return errors::InvalidArgument(op, ": size must be an int32 [2], got ",
                                   size.shape().ToString());
  const int32_t* s = size.data<int32_t>();
  if (s[0] <= 0 || s[1] <= 0 || images.shape().dim(1) <= 0 || images.shape().dim(2) <= 0) {
    return errors::InvalidArgument(op, ": sizes must be positive, got input ",
                                   images.shape().ToString(), " and size [", s[0], ", ", s[1], "]");
  }
  const Shape& x = images.shape();
  return Dims{x.dim(0), x.dim(1), x.dim(2), x.dim(3), s[0], s[1]};
}

class ResizeBilinearOp : public OpKernel {
 public:
  explicit ResizeBilinearOp(const Node& n) : OpKernel(n), mode_(ModeOf(n)) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(CheckMode(mode_, "ResizeBilinear"));
    PF_ASSIGN_OR_RETURN(Dims d, DimsOf(ctx->input(0), ctx->input(1), "ResizeBilinear"));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    Status s = Status::OK();
    VisitNumericDType(ctx->input(0).dtype(), [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                    std::is_same_v<T, bool>) {
        s = errors::Unimplemented("ResizeBilinear of ", DTypeName(ctx->input(0).dtype()));
      } else {
        image::ResizeBilinearImpl(ctx->input(0).data<T>(), d.b, d.h, d.w, d.c, out->data<float>(),
                                  d.oh, d.ow, mode_);
      }
    });
    return s;
  }

 private:
  image::ResizeMode mode_;
};

class ResizeNearestOp : public OpKernel {
 public:
  explicit ResizeNearestOp(const Node& n) : OpKernel(n), mode_(ModeOf(n)) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(CheckMode(mode_, "ResizeNearestNeighbor"));
    PF_ASSIGN_OR_RETURN(Dims d, DimsOf(ctx->input(0), ctx->input(1), "ResizeNearestNeighbor"));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    VisitNumericDType(ctx->input(0).dtype(), [&](auto t) {
      using T = decltype(t);
      image::ResizeNearestImpl<false>(ctx->input(0).data<T>(), d.b, d.h, d.w, d.c, out->data<T>(),
                                      d.oh, d.ow, mode_);
    });
    return Status::OK();
  }

 private:
  image::ResizeMode mode_;
};

// ResizeBilinearGrad(grads [b, oh, ow, c] float, original_image [b, h, w, c]): float or double.
class ResizeBilinearGradOp : public OpKernel {
 public:
  explicit ResizeBilinearGradOp(const Node& n) : OpKernel(n), mode_(ModeOf(n)) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(CheckMode(mode_, "ResizeBilinearGrad"));
    const Tensor& g = ctx->input(0);
    const Shape& orig = ctx->input(1).shape();
    if (g.rank() != 4 || orig.rank() != 4 || g.shape().dim(0) != orig.dim(0) ||
        g.shape().dim(3) != orig.dim(3) || orig.dim(1) <= 0 || orig.dim(2) <= 0 ||
        g.shape().dim(1) <= 0 || g.shape().dim(2) <= 0) {
      return errors::InvalidArgument("ResizeBilinearGrad: grads ", g.shape().ToString(),
                                     " do not match the original image ", orig.ToString(),
                                     " (both [batch, height > 0, width > 0, channels])");
    }
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const Dims d{orig.dim(0), orig.dim(1),      orig.dim(2),
                 orig.dim(3), g.shape().dim(1), g.shape().dim(2)};
    FloatOrDouble(out->dtype(), [&](auto t) {
      using T = decltype(t);
      image::ResizeBilinearGradImpl(g.data<float>(), d.b, d.oh, d.ow, d.c, out->data<T>(), d.h, d.w,
                                    mode_);
    });
    return Status::OK();
  }

 private:
  image::ResizeMode mode_;
};

// ResizeNearestNeighborGrad(grads [b, oh, ow, c], size [h, w]) -> [b, h, w, c].
class ResizeNearestGradOp : public OpKernel {
 public:
  explicit ResizeNearestGradOp(const Node& n) : OpKernel(n), mode_(ModeOf(n)) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(CheckMode(mode_, "ResizeNearestNeighborGrad"));
    // DimsOf reads (grads, size) as (images, size): here the small one and the original size.
    PF_ASSIGN_OR_RETURN(Dims d, DimsOf(ctx->input(0), ctx->input(1), "ResizeNearestNeighborGrad"));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    FloatOrDouble(ctx->input(0).dtype(), [&](auto t) {
      using T = decltype(t);
      image::ResizeNearestImpl<true>(ctx->input(0).data<T>(), d.b, d.oh, d.ow, d.c, out->data<T>(),
                                     d.h, d.w, mode_);
    });
    return Status::OK();
  }

 private:
  image::ResizeMode mode_;
};

ops::ResizeAttrs AttrsOf(const Node& n) {
  return {n.attr<bool>("align_corners"), n.attr<bool>("half_pixel_centers")};
}

PF_GRAD(ResizeBilinearGrad) {
  const Output images = n.input(0);
  if (!IsReal(images.dtype())) {
    *dx = {Output(), Output()};
    return Status::OK();
  }
  const ops::ResizeAttrs a = AttrsOf(n);
  Output grad = NodeBuilder(s, "ResizeBilinearGrad")
                    .Input(ops::Cast(s, g[0], DT_FLOAT))
                    .Input(images)
                    .Attr("align_corners", a.align_corners)
                    .Attr("half_pixel_centers", a.half_pixel_centers)
                    .Finalize();
  *dx = {grad, Output()};
  return Status::OK();
}

PF_GRAD(ResizeNearestGrad) {
  const Output images = n.input(0);
  if (!IsReal(images.dtype())) {
    *dx = {Output(), Output()};
    return Status::OK();
  }
  const ops::ResizeAttrs a = AttrsOf(n);
  Output hw = ops::Slice(s, ops::Shape(s, images, DT_INT32), {1}, {2});
  Output grad = NodeBuilder(s, "ResizeNearestNeighborGrad")
                    .Input(g[0])
                    .Input(hw)
                    .Attr("align_corners", a.align_corners)
                    .Attr("half_pixel_centers", a.half_pixel_centers)
                    .Finalize();
  *dx = {grad, Output()};
  return Status::OK();
}

OpDef ResizeDef(const char* name, const char* out_type) {
  return OpDef(name)
      .Input("images", "T")
      .Input("size", "int32")
      .Output("resized_images", out_type)
      .TypeAttr("T", kResizeTypes)
      .Attr("align_corners", false)
      .Attr("half_pixel_centers", false)
      .SetShapeFn(ResizeShape);
}

PF_REGISTER_OP(ResizeDef("ResizeBilinear", "float").SetGradient(ResizeBilinearGrad));
PF_REGISTER_OP(ResizeDef("ResizeNearestNeighbor", "T").SetGradient(ResizeNearestGrad));
PF_REGISTER_OP(OpDef("ResizeBilinearGrad")
                   .Input("grads", "float")
                   .Input("original_image", "T")
                   .Output("output", "T")
                   .TypeAttr("T", {DT_FLOAT, DT_DOUBLE})
                   .Attr("align_corners", false)
                   .Attr("half_pixel_centers", false)
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.input(1));
                     return Status::OK();
                   }));
PF_REGISTER_OP(OpDef("ResizeNearestNeighborGrad")
                   .Input("grads", "T")
                   .Input("size", "int32")
                   .Output("output", "T")
                   .TypeAttr("T", {DT_FLOAT, DT_DOUBLE})
                   .Attr("align_corners", false)
                   .Attr("half_pixel_centers", false)
                   .SetNotDifferentiable()
                   .SetShapeFn(ResizeShape));
PF_REGISTER_KERNEL(KernelDef("ResizeBilinear", kDeviceCpu), ResizeBilinearOp);
PF_REGISTER_KERNEL(KernelDef("ResizeNearestNeighbor", kDeviceCpu), ResizeNearestOp);
PF_REGISTER_KERNEL(KernelDef("ResizeBilinearGrad", kDeviceCpu), ResizeBilinearGradOp);
PF_REGISTER_KERNEL(KernelDef("ResizeNearestNeighborGrad", kDeviceCpu), ResizeNearestGradOp);

}  // namespace

namespace ops {

namespace {
Output ResizeOp(const char* op, const Scope& s, Output images, Output size, const ResizeAttrs& a) {
  return NodeBuilder(s, op)
      .Input(images)
      .Input(size)
      .Attr("align_corners", a.align_corners)
      .Attr("half_pixel_centers", a.half_pixel_centers)
      .Finalize();
}
}  // namespace

Output ResizeBilinear(const Scope& s, Output images, Output size, const ResizeAttrs& a) {
  return ResizeOp("ResizeBilinear", s, images, size, a);
}

Output ResizeNearestNeighbor(const Scope& s, Output images, Output size, const ResizeAttrs& a) {
  return ResizeOp("ResizeNearestNeighbor", s, images, size, a);
}

Output Resize(const Scope& s, Output images, std::vector<int64_t> size, const std::string& method) {
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0)
    throw Error(errors::InvalidArgument("Resize: size must be [new_height, new_width], positive"));
  if (method != "bilinear" && method != "nearest") {
    throw Error(errors::InvalidArgument("Resize: method must be 'bilinear' or 'nearest', got '",
                                        method, "'"));
  }
  const int rank = images.shape().unknown_rank() ? -1 : images.shape().rank();
  if (rank != 3 && rank != 4) {
    throw Error(errors::InvalidArgument(
        "Resize: images must be [batch, h, w, c] or [h, w, c], got ", images.shape().ToString()));
  }
  Output x = rank == 3 ? ops::ExpandDims(s, images, 0) : images;
  Output sz = ops::ConstInt(s, {static_cast<int32_t>(size[0]), static_cast<int32_t>(size[1])});
  const ResizeAttrs a{.align_corners = false, .half_pixel_centers = true};
  Output y =
      method == "bilinear" ? ResizeBilinear(s, x, sz, a) : ResizeNearestNeighbor(s, x, sz, a);
  return rank == 3 ? ops::Squeeze(s, y, {0}) : y;
}

}  // namespace ops
}  // namespace pf
