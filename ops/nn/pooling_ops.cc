// 2-D pooling: MaxPool, AvgPool and their gradient ops MaxPoolGrad, AvgPoolGrad (TensorFlow's
// attrs and semantics), and the GlobalAvgPool builder. float32 runs oneDNN pooling primitives
// (pooling_onednn.h: one per shard of the batch, single-threaded inside each call, the shards
// split across the intra-op pool); float64 runs the direct loops below, which are also the
// reference for what the primitives must compute:
//  - max windows skip padding; MaxPoolGrad sends each output's gradient to the first maximum
//    in the window's row-major scan (TF's CPU kernels; oneDNN's workspace holds the same one);
//  - AvgPool divides by the number of in-bounds elements (oneDNN pooling_avg_exclude_padding).
#include "placeflow/ops/nn/pooling_ops.h"

#include <algorithm>
#include <array>
#include <limits>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/nn/pooling_onednn.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {

Shape Pool2DGeometry::InputShape() const {
  return nchw ? Shape{batch, channels, h.in, w.in} : Shape{batch, h.in, w.in, channels};
}
Shape Pool2DGeometry::OutputShape() const {
  return nchw ? Shape{batch, channels, h.out, w.out} : Shape{batch, h.out, w.out, channels};
}

namespace {

std::string Dims(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ",")); }

Status ComputePoolDim(int64_t in, int64_t k, int64_t s, bool same, PoolDim* d) {
  d->in = in;
  d->window = k;
  d->stride = s;
  if (in < 0) return Status::OK();
  if (same) {
    d->out = (in + s - 1) / s;
    const int64_t pad_total = std::max<int64_t>((d->out - 1) * s + k - in, 0);
    d->pad_before = pad_total / 2;
    d->pad_after = pad_total - d->pad_before;
  } else {
    d->out = (in - k + s) / s;  // TF's formula, truncating like C++ does
    if (d->out < 0) {
      return errors::InvalidArgument("Computed output size would be negative: ", d->out,
                                     " [input_size: ", in, ", effective_filter_size: ", k,
                                     ", stride: ", s, "]");
    }
  }
  return Status::OK();
}

}  // namespace

Status ComputePool2DGeometry(std::string_view op, const Shape& input, const PoolAttrs& a,
                             Pool2DGeometry* geo) {
  if (a.data_format != "NHWC" && a.data_format != "NCHW") {
    return errors::InvalidArgument(op, ": invalid data_format \"", a.data_format,
                                   "\": expected \"NHWC\" or \"NCHW\"");
  }
  if (a.padding != "SAME" && a.padding != "VALID") {
    return errors::InvalidArgument(op, ": invalid padding \"", a.padding,
                                   "\": expected \"SAME\" or \"VALID\"");
  }
  if (a.ksize.size() != 4) {
    return errors::InvalidArgument("Sliding window ksize field must specify 4 dimensions, got ",
                                   Dims(a.ksize));
  }
  if (a.strides.size() != 4) {
    return errors::InvalidArgument("Sliding window stride field must specify 4 dimensions, got ",
                                   Dims(a.strides));
  }
  const bool nchw = a.data_format == "NCHW";
  const int hi = nchw ? 2 : 1, wi = nchw ? 3 : 2, ci = nchw ? 1 : 3;
  if (a.ksize[0] != 1 || a.strides[0] != 1) {
    return errors::InvalidArgument("Pooling is not yet supported on the batch dimension: ksize ",
                                   Dims(a.ksize), ", strides ", Dims(a.strides));
  }
  if (a.ksize[ci] != 1 || a.strides[ci] != 1) {
    return errors::InvalidArgument("Pooling over the depth dimension is not supported: ksize ",
                                   Dims(a.ksize), ", strides ", Dims(a.strides), " (",
                                   a.data_format, ")");
  }
  if (a.ksize[hi] <= 0 || a.ksize[wi] <= 0 || a.strides[hi] <= 0 || a.strides[wi] <= 0) {
    return errors::InvalidArgument("Sliding window ksize and strides must be positive: ksize ",
                                   Dims(a.ksize), ", strides ", Dims(a.strides));
  }
  if (!input.unknown_rank() && input.rank() != 4) {
    return errors::InvalidArgument(op, ": input must be 4-dimensional, got ", input.ToString());
  }
  *geo = Pool2DGeometry();
  geo->nchw = nchw;
  const bool same = a.padding == "SAME";
  int64_t in_h = -1, in_w = -1;
  if (!input.unknown_rank()) {
    geo->batch = input.dim(0);
    geo->channels = input.dim(ci);
    in_h = input.dim(hi);
    in_w = input.dim(wi);
  }
  PF_RETURN_IF_ERROR(ComputePoolDim(in_h, a.ksize[hi], a.strides[hi], same, &geo->h));
  return ComputePoolDim(in_w, a.ksize[wi], a.strides[wi], same, &geo->w);
}

Status ValidatePoolGrad(std::string_view op, const Pool2DGeometry& geo, const Shape& grad,
                        std::string_view what) {
  const Shape out = geo.OutputShape();
  if (!grad.IsCompatibleWith(out)) {
    return errors::InvalidArgument(op, ": ", what, " must have the pooling output's shape ",
                                   out.ToString(), ", got ", grad.ToString());
  }
  return Status::OK();
}

namespace {

// ---- direct loops: float64, and the definition of what the primitives compute ----

// The in-bounds window of output position o along one dim: [begin, end).
inline void Window(const PoolDim& d, int64_t o, int64_t* begin, int64_t* end) {
  const int64_t start = o * d.stride - d.pad_before;
  *begin = std::max<int64_t>(start, 0);
  *end = std::min(start + d.window, d.in);
}

// Calls fn(out_offset, in_offsets of the window in scan order) per output of one image.
template <typename Fn>
void ForEachWindow(const Pool2DGeometry& g, Fn&& fn) {
  for (int64_t oh = 0; oh < g.h.out; ++oh) {
    int64_t h0, h1;
    Window(g.h, oh, &h0, &h1);
    for (int64_t ow = 0; ow < g.w.out; ++ow) {
      int64_t w0, w1;
      Window(g.w, ow, &w0, &w1);
      for (int64_t c = 0; c < g.channels; ++c) {
        const int64_t out = oh * g.OutStrideH() + ow * g.OutStrideW() + c * g.OutStrideC();
        fn(out, c * g.InStrideC(), h0, h1, w0, w1);
      }
    }
  }
}

template <typename T>
void MaxPoolImage(const Pool2DGeometry& g, const T* x, T* y) {
  ForEachWindow(g, [&](int64_t o, int64_t base, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    T best = std::numeric_limits<T>::lowest();
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = w0; w < w1; ++w)
        best = std::max(best, x[base + h * g.InStrideH() + w * g.InStrideW()]);
    }
    y[o] = best;
  });
}

template <typename T>
void MaxPoolGradImage(const Pool2DGeometry& g, const T* x, const T* dy, T* dx) {
  std::fill(dx, dx + g.InImageSize(), T(0));
  ForEachWindow(g, [&](int64_t o, int64_t base, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    int64_t arg = -1;
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = w0; w < w1; ++w) {
        const int64_t i = base + h * g.InStrideH() + w * g.InStrideW();
        if (arg < 0 || x[i] > x[arg]) arg = i;  // strict: the first maximum wins ties
      }
    }
    if (arg >= 0) dx[arg] += dy[o];
  });
}

template <typename T>
void AvgPoolImage(const Pool2DGeometry& g, const T* x, T* y) {
  ForEachWindow(g, [&](int64_t o, int64_t base, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    T sum = 0;
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = w0; w < w1; ++w) sum += x[base + h * g.InStrideH() + w * g.InStrideW()];
    }
    y[o] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
  });
}

template <typename T>
void AvgPoolGradImage(const Pool2DGeometry& g, const T* dy, T* dx) {
  std::fill(dx, dx + g.InImageSize(), T(0));
  ForEachWindow(g, [&](int64_t o, int64_t base, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    const T share = dy[o] / static_cast<T>((h1 - h0) * (w1 - w0));
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = w0; w < w1; ++w) dx[base + h * g.InStrideH() + w * g.InStrideW()] += share;
    }
  });
}

// ---- kernels ----

// A MaxPool keeps its workspace under its own name and input; a MaxPoolGrad looks for the one
// of the MaxPool that made its orig_output from its orig_input. A pooled variable (whose buffer
// an Assign may rewrite in place) keeps none.
MaxPoolLink MakeLink(const Node& n) {
  if (n.op() == "MaxPool") {
    if (ReferencedVariable(n.input(0)) != nullptr) return {};
    return {n.name(), n.input(0).name()};
  }
  if (n.op() == "MaxPoolGrad" && n.input(1).index == 0 && n.input(1).node->op() == "MaxPool") {
    return {n.input(1).node->name(), n.input(0).name()};
  }
  return {};
}

template <typename T>
class PoolKernelBase : public OpKernel {
 public:
  explicit PoolKernelBase(const Node& n)
      : OpKernel(n), attrs_(ReadPoolAttrs(n)), link_(MakeLink(n)) {}

 protected:
  Status Geometry(const Shape& input, Pool2DGeometry* g) const {
    return ComputePool2DGeometry(node().op(), input, attrs_, g);
  }
  // Runs fn(n) for every image n, split across the pool.
  template <typename Fn>
  void ForEachImage(OpKernelContext* ctx, const Pool2DGeometry& g, Fn&& fn) {
    const int64_t cost =
        std::max<int64_t>(g.OutImageSize() * g.h.window * g.w.window + g.InImageSize(), 1);
    ParallelFor(ctx, g.batch, cost, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) fn(n);
    });
  }
  PoolAttrs attrs_;
  MaxPoolLink link_;  // how a MaxPool and its MaxPoolGrad find each other's workspace
  DnnlPool dnnl_;
};

template <typename T, bool kMax>
class PoolOp : public PoolKernelBase<T> {
 public:
  using PoolKernelBase<T>::PoolKernelBase;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Pool2DGeometry g;
    PF_RETURN_IF_ERROR(this->Geometry(x.shape(), &g));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (out->num_elements() == 0) return Status::OK();
    const T* px = x.data<T>();
    T* py = out->data<T>();
    const int64_t in_size = g.InImageSize(), out_size = g.OutImageSize();
    if constexpr (std::is_same_v<T, float> && kMax) {
      return this->dnnl_.MaxForward(ctx, g, this->link_, x, out);
    } else if constexpr (std::is_same_v<T, float>) {
      return this->dnnl_.Run(ctx, DnnlPoolKind::kAvgForward, g, px, nullptr, py);
    } else {
      this->ForEachImage(ctx, g, [&](int64_t n) {
        if constexpr (kMax) {
          MaxPoolImage(g, px + n * in_size, py + n * out_size);
        } else {
          AvgPoolImage(g, px + n * in_size, py + n * out_size);
        }
      });
    }
    return Status::OK();
  }
};

// MaxPoolGrad(orig_input, orig_output, grad): the float32 path takes the workspace (each
// window's argmax) its MaxPool kept for these very tensors, or recomputes it from orig_input
// (pooling_onednn.cc).
template <typename T>
class MaxPoolGradOp : public PoolKernelBase<T> {
 public:
  using PoolKernelBase<T>::PoolKernelBase;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Pool2DGeometry g;
    PF_RETURN_IF_ERROR(this->Geometry(x.shape(), &g));
    PF_RETURN_IF_ERROR(ValidatePoolGrad("MaxPoolGrad", g, ctx->input(1).shape(), "orig_output"));
    PF_RETURN_IF_ERROR(ValidatePoolGrad("MaxPoolGrad", g, ctx->input(2).shape(), "grad"));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (out->num_elements() == 0) return Status::OK();
    const T* px = x.data<T>();
    const T* pdy = ctx->input(2).data<T>();
    T* pdx = out->data<T>();
    const int64_t in_size = g.InImageSize(), out_size = g.OutImageSize();
    if (out_size == 0) {
      std::fill(pdx, pdx + out->num_elements(), T(0));
      return Status::OK();
    }
    if constexpr (std::is_same_v<T, float>) {
      return this->dnnl_.MaxBackward(ctx, g, this->link_, x, ctx->input(1), pdy, pdx);
    } else {
      this->ForEachImage(ctx, g, [&](int64_t n) {
        MaxPoolGradImage(g, px + n * in_size, pdy + n * out_size, pdx + n * in_size);
      });
    }
    return Status::OK();
  }
};

// AvgPoolGrad(orig_input_shape, grad).
template <typename T>
class AvgPoolGradOp : public PoolKernelBase<T> {
 public:
  using PoolKernelBase<T>::PoolKernelBase;
  Status Compute(OpKernelContext* ctx) override {
    Pool2DGeometry g;
    PF_RETURN_IF_ERROR(this->Geometry(ctx->output_shape(0), &g));
    PF_RETURN_IF_ERROR(ValidatePoolGrad("AvgPoolGrad", g, ctx->input(1).shape(), "grad"));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (out->num_elements() == 0) return Status::OK();
    const T* pdy = ctx->input(1).data<T>();
    T* pdx = out->data<T>();
    const int64_t in_size = g.InImageSize(), out_size = g.OutImageSize();
    if (out_size == 0) {
      std::fill(pdx, pdx + out->num_elements(), T(0));
      return Status::OK();
    }
    if constexpr (std::is_same_v<T, float>) {
      return this->dnnl_.Run(ctx, DnnlPoolKind::kAvgBackward, g, nullptr, pdy, pdx);
    } else {
      this->ForEachImage(
          ctx, g, [&](int64_t n) { AvgPoolGradImage(g, pdy + n * out_size, pdx + n * in_size); });
    }
    return Status::OK();
  }
};

// ---- schemas, shape functions, gradients ----

template <const char* kOp>
Status PoolShape(ShapeContext& c) {
  Pool2DGeometry g;
  PF_RETURN_IF_ERROR(ComputePool2DGeometry(kOp, c.input(0), ReadPoolAttrs(c), &g));
  c.set_output(0, g.OutputShape());
  return Status::OK();
}

Status MaxPoolGradShape(ShapeContext& c) {
  Pool2DGeometry g;
  PF_RETURN_IF_ERROR(ComputePool2DGeometry("MaxPoolGrad", c.input(0), ReadPoolAttrs(c), &g));
  PF_RETURN_IF_ERROR(ValidatePoolGrad("MaxPoolGrad", g, c.input(1), "orig_output"));
  PF_RETURN_IF_ERROR(ValidatePoolGrad("MaxPoolGrad", g, c.input(2), "grad"));
  c.set_output(0, c.input(0).unknown_rank() ? Shape{-1, -1, -1, -1} : c.input(0));
  return Status::OK();
}

Status AvgPoolGradShape(ShapeContext& c) {
  const Shape& s = c.input(0);
  if (!s.unknown_rank() && (s.rank() != 1 || (s.dim(0) >= 0 && s.dim(0) != 4))) {
    return errors::InvalidArgument("orig_input_shape must be 1-dimensional with 4 elements, got ",
                                   s.ToString());
  }
  PF_ASSIGN_OR_RETURN(Shape in, c.ShapeFromInputTensor(0, 4));
  Pool2DGeometry g;
  PF_RETURN_IF_ERROR(ComputePool2DGeometry("AvgPoolGrad", in, ReadPoolAttrs(c), &g));
  PF_RETURN_IF_ERROR(ValidatePoolGrad("AvgPoolGrad", g, c.input(1), "grad"));
  c.set_output(0, in.unknown_rank() ? Shape{-1, -1, -1, -1} : in);
  return Status::OK();
}

std::vector<int32_t> Int32s(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

PF_GRAD(MaxPoolGradFn) {
  const PoolAttrs a = ReadPoolAttrs(n);
  *dx = {ops::MaxPoolGrad(s, n.input(0), Out(n), g[0], Int32s(a.ksize), Int32s(a.strides),
                          a.padding, a.data_format)};
  return Status::OK();
}

PF_GRAD(AvgPoolGradFn) {
  const PoolAttrs a = ReadPoolAttrs(n);
  // A constant shape where it is known keeps the gradient's static shape fully defined.
  const Shape& in = n.input(0).shape();
  Output shape =
      in.IsFullyDefined() ? ops::ConstInt(s, Int32s(in.dim_vector())) : ops::Shape(s, n.input(0));
  *dx = {ops::AvgPoolGrad(s, shape, g[0], Int32s(a.ksize), Int32s(a.strides), a.padding,
                          a.data_format)};
  return Status::OK();
}

// AvgPoolGrad is linear in grad and its adjoint is AvgPool with the same window.
PF_GRAD(AvgPoolGradGradFn) {
  const PoolAttrs a = ReadPoolAttrs(n);
  *dx = {Output(),
         ops::AvgPool(s, g[0], Int32s(a.ksize), Int32s(a.strides), a.padding, a.data_format)};
  return Status::OK();
}

constexpr char kMaxPool[] = "MaxPool";
constexpr char kAvgPool[] = "AvgPool";

OpDef PoolDef(const char* name) {
  return OpDef(name)
      .RequiredAttr("ksize")
      .RequiredAttr("strides")
      .RequiredAttr("padding")
      .Attr("data_format", std::string("NHWC"))
      .TypeAttr("T", kFloatingTypes);
}

PF_REGISTER_OP(PoolDef("MaxPool")
                   .Input("input", "T")
                   .Output("output", "T")
                   .SetGradient(MaxPoolGradFn)
                   .SetShapeFn(PoolShape<kMaxPool>));
PF_REGISTER_OP(PoolDef("AvgPool")
                   .Input("value", "T")
                   .Output("output", "T")
                   .SetGradient(AvgPoolGradFn)
                   .SetShapeFn(PoolShape<kAvgPool>));
// TensorFlow has MaxPoolGradGrad; second-order gradients through max pooling are not needed by
// any model here, so differentiating MaxPoolGrad is an error rather than a silent zero.
PF_REGISTER_OP(PoolDef("MaxPoolGrad")
                   .Input("orig_input", "T")
                   .Input("orig_output", "T")
                   .Input("grad", "T")
                   .Output("output", "T")
                   .SetNoGradient()
                   .SetShapeFn(MaxPoolGradShape));
PF_REGISTER_OP(PoolDef("AvgPoolGrad")
                   .Input("orig_input_shape", "int32")
                   .Input("grad", "T")
                   .Output("output", "T")
                   .SetGradient(AvgPoolGradGradFn)
                   .SetShapeFn(AvgPoolGradShape));

#define PF_POOL_KERNELS(T, dt)                                                                     \
  PF_REGISTER_KERNEL(KernelDef("MaxPool", kDeviceCpu).TypeConstraint("T", {dt}), PoolOp<T, true>); \
  PF_REGISTER_KERNEL(KernelDef("AvgPool", kDeviceCpu).TypeConstraint("T", {dt}),                   \
                     PoolOp<T, false>);                                                            \
  PF_REGISTER_KERNEL(KernelDef("MaxPoolGrad", kDeviceCpu).TypeConstraint("T", {dt}),               \
                     MaxPoolGradOp<T>);                                                            \
  PF_REGISTER_KERNEL(KernelDef("AvgPoolGrad", kDeviceCpu).TypeConstraint("T", {dt}),               \
                     AvgPoolGradOp<T>)
PF_POOL_KERNELS(float, DT_FLOAT);
PF_POOL_KERNELS(double, DT_DOUBLE);

Node* PoolNode(const Scope& s, const char* op, const std::vector<Output>& inputs,
               const std::vector<int32_t>& ksize, const std::vector<int32_t>& strides,
               const std::string& padding, const std::string& data_format) {
  NodeBuilder b(s, op);
  for (const Output& in : inputs) b.Input(in);
  return b.Attr("ksize", std::vector<int64_t>(ksize.begin(), ksize.end()))
      .Attr("strides", std::vector<int64_t>(strides.begin(), strides.end()))
      .Attr("padding", padding)
      .Attr("data_format", data_format)
      .Finalize();
}

}  // namespace

namespace ops {

Output MaxPool(const Scope& s, Output input, const std::vector<int32_t>& ksize,
               const std::vector<int32_t>& strides, const std::string& padding,
               const std::string& data_format) {
  return PoolNode(s, "MaxPool", {input}, ksize, strides, padding, data_format);
}
Output AvgPool(const Scope& s, Output input, const std::vector<int32_t>& ksize,
               const std::vector<int32_t>& strides, const std::string& padding,
               const std::string& data_format) {
  return PoolNode(s, "AvgPool", {input}, ksize, strides, padding, data_format);
}
Output MaxPoolGrad(const Scope& s, Output orig_input, Output orig_output, Output grad,
                   const std::vector<int32_t>& ksize, const std::vector<int32_t>& strides,
                   const std::string& padding, const std::string& data_format) {
  return PoolNode(s, "MaxPoolGrad", {orig_input, orig_output, grad}, ksize, strides, padding,
                  data_format);
}
Output AvgPoolGrad(const Scope& s, Output orig_input_shape, Output grad,
                   const std::vector<int32_t>& ksize, const std::vector<int32_t>& strides,
                   const std::string& padding, const std::string& data_format) {
  return PoolNode(s, "AvgPoolGrad", {orig_input_shape, grad}, ksize, strides, padding, data_format);
}
Output GlobalAvgPool(const Scope& s, Output input, const std::string& data_format) {
  if (data_format == "NCHW") return Mean(s, input, {2, 3});
  if (data_format != "NHWC") {
    throw Error(errors::InvalidArgument("GlobalAvgPool: invalid data_format \"", data_format,
                                        "\": expected \"NHWC\" or \"NCHW\""));
  }
  return Mean(s, input, {1, 2});
}

}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_POOL_KERNELS
