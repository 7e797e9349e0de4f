// FusedBatchNorm and FusedBatchNormGrad (TensorFlow's attrs; conventions in batch_norm_ops.h), and
// _FusedBatchNormEx / _FusedBatchNormGradEx, the same with a Relu or Relu6 fused in (the
// remapper's, executor/remapper.cc). float32 and float64 NHWC run the loops of
// batch_norm_nhwc.cc: the moments in one pass over x, the normalisation (and activation) in a
// second. NCHW runs the loops below: per-channel sums over each (image, channel) plane, partial
// sums added in order, so results do not depend on the pool's thread count, then one
// elementwise pass. PF_BATCHNORM_ONEDNN=1 runs oneDNN's batch_normalization
// (batch_norm_onednn.cc) for float32 NHWC without an activation instead; oneDNN 2.6's plain-nchw
// implementation (ncsp_bnorm, no JIT) measured 2-16x slower than the loops.
#include "placeflow/ops/nn/batch_norm_ops.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/nn/batch_norm_nhwc.h"
#include "placeflow/ops/nn/batch_norm_onednn.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

Status CheckFormat(const std::string& data_format) {
  if (data_format != "NHWC" && data_format != "NCHW") {
    return errors::InvalidArgument("Invalid data_format \"", data_format,
                                   "\": expected \"NHWC\" or \"NCHW\"");
  }
  return Status::OK();
}

Status CheckVector(const char* name, const Shape& s, int64_t channels, bool check_size,
                   const char* when = "") {
  if (s.unknown_rank()) return Status::OK();
  if (s.rank() != 1) {
    return errors::InvalidArgument(name, " must be 1-dimensional, got ", s.ToString());
  }
  if (check_size && channels >= 0 && s.dim(0) >= 0 && s.dim(0) != channels) {
    return errors::InvalidArgument(when, name,
                                   " must have the same number of elements as the channels of "
                                   "x, got ",
                                   s.dim(0), " and ", channels);
  }
  return Status::OK();
}

Status Geometry(const Shape& x, const std::string& data_format, BatchNormGeometry* geo) {
  PF_RETURN_IF_ERROR(CheckFormat(data_format));
  if (!x.unknown_rank() && x.rank() != 4) {
    return errors::InvalidArgument("x must be 4-dimensional, got ", x.ToString());
  }
  *geo = BatchNormGeometry();
  geo->nchw = data_format == "NCHW";
  if (x.unknown_rank()) return Status::OK();
  auto mul = [](int64_t a, int64_t b) { return a < 0 || b < 0 ? -1 : a * b; };
  if (geo->nchw) {
    geo->outer = x.dim(0);
    geo->channels = x.dim(1);
    geo->inner = mul(x.dim(2), x.dim(3));
  } else {
    geo->outer = mul(mul(x.dim(0), x.dim(1)), x.dim(2));
    geo->channels = x.dim(3);
    geo->inner = 1;
  }
  return Status::OK();
}

}  // namespace

Status ValidateFusedBatchNorm(const Shape& x, const Shape& scale, const Shape& offset,
                              const Shape& mean, const Shape& variance, bool is_training,
                              float exponential_avg_factor, const std::string& data_format,
                              BatchNormGeometry* geo) {
  PF_RETURN_IF_ERROR(Geometry(x, data_format, geo));
  const int64_t c = geo->channels;
  PF_RETURN_IF_ERROR(CheckVector("scale", scale, c, true));
  PF_RETURN_IF_ERROR(CheckVector("offset", offset, c, true));
  // TensorFlow ignores the statistics inputs when training without running averages.
  const bool stats_used = !is_training || exponential_avg_factor != 1.f;
  const char* when =
      is_training ? "When exponential_avg_factor != 1, " : "When is_training=false, ";
  PF_RETURN_IF_ERROR(CheckVector("mean", mean, c, stats_used, when));
  return CheckVector("variance", variance, c, stats_used, when);
}

Status ValidateFusedBatchNormGrad(const Shape& y_backprop, const Shape& x, const Shape& scale,
                                  const Shape& reserve_space_1, const Shape& reserve_space_2,
                                  const std::string& data_format, BatchNormGeometry* geo) {
  PF_RETURN_IF_ERROR(Geometry(x, data_format, geo));
  if (!y_backprop.IsCompatibleWith(x)) {
    return errors::InvalidArgument("y_backprop and x must have the same shape, got ",
                                   y_backprop.ToString(), " and ", x.ToString());
  }
  const int64_t c = geo->channels;
  PF_RETURN_IF_ERROR(CheckVector("scale", scale, c, true));
  PF_RETURN_IF_ERROR(CheckVector("reserve_space_1", reserve_space_1, c, true));
  return CheckVector("reserve_space_2", reserve_space_2, c, true);
}

namespace {

// NCHW: per-channel sums s0[c] += a, s1[c] += b of f(i, c, a, b) over every element i of
// channel c, one partial per (image, channel) plane, added in order.
template <typename T, typename F>
void ChannelSums(OpKernelContext* ctx, const BatchNormGeometry& g, F f, T* s0, T* s1) {
  const int64_t c = g.channels;
  std::fill(s0, s0 + c, T(0));
  std::fill(s1, s1 + c, T(0));
  if (g.count() == 0 || c == 0) return;
  const int64_t planes = g.outer * c;
  std::vector<T> partial(planes * 2, T(0));
  ParallelFor(ctx, planes, g.inner * 3, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t k = p % c, base = p * g.inner;
      T a = 0, b = 0;
      for (int64_t i = 0; i < g.inner; ++i) f(base + i, k, a, b);
      partial[2 * p] = a;
      partial[2 * p + 1] = b;
    }
  });
  for (int64_t p = 0; p < planes; ++p) {
    s0[p % c] += partial[2 * p];
    s1[p % c] += partial[2 * p + 1];
  }
}

// NCHW: out[i] = in0[i] * a[c] + in1[i] * b[c] + d[c] (in1 may be null).
template <typename T>
void ChannelAffine(OpKernelContext* ctx, const BatchNormGeometry& g, const T* in0, const T* in1,
                   const T* a, const T* b, const T* d, T* out) {
  const int64_t c = g.channels;
  if (g.count() == 0 || c == 0) return;
  ParallelFor(ctx, g.outer * c, g.inner * 2, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t k = p % c, base = p * g.inner;
      const T ak = a[k], bk = b != nullptr ? b[k] : T(0), dk = d[k];
      if (in1 == nullptr) {
        for (int64_t i = 0; i < g.inner; ++i) out[base + i] = in0[base + i] * ak + dk;
      } else {
        for (int64_t i = 0; i < g.inner; ++i) {
          out[base + i] = in0[base + i] * ak + in1[base + i] * bk + dk;
        }
      }
    }
  });
}

// The fused ops' activation_mode: a known one, and NHWC when it is not Identity.
Status ParseActivation(const std::string& mode, const std::string& data_format, BnActivation* act) {
  PF_RETURN_IF_ERROR(ParseBnActivation(mode, act));
  if (*act != BnActivation::kIdentity && data_format != "NHWC") {
    return errors::InvalidArgument("activation_mode \"", mode, "\" needs data_format \"NHWC\"");
  }
  return Status::OK();
}

// A kernel's activation: Identity for the plain ops, which have no activation_mode.
Status ActivationOf(const Node& n, BnActivation* act) {
  *act = BnActivation::kIdentity;
  if (!n.HasAttr("activation_mode")) return Status::OK();
  return ParseActivation(n.attr<std::string>("activation_mode"), n.attr<std::string>("data_format"),
                         act);
}

template <typename T>
bool UseDnnl(const BatchNormGeometry& g, BnActivation act) {
  return std::is_same_v<T, float> && !g.nchw && g.count() > 0 && g.channels > 0 &&
         act == BnActivation::kIdentity && BatchNormUseOneDnn();
}

template <typename T>
class FusedBatchNormOp : public OpKernel {
 public:
  explicit FusedBatchNormOp(const Node& n)
      : OpKernel(n),
        epsilon_(n.attr<float>("epsilon")),
        factor_(n.attr<float>("exponential_avg_factor")),
        is_training_(n.attr<bool>("is_training")),
        data_format_(n.attr<std::string>("data_format")),
        act_status_(ActivationOf(n, &act_)) {}

  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(act_status_);
    const Tensor& x = ctx->input(0);
    BatchNormGeometry g;
    PF_RETURN_IF_ERROR(ValidateFusedBatchNorm(
        x.shape(), ctx->input(1).shape(), ctx->input(2).shape(), ctx->input(3).shape(),
        ctx->input(4).shape(), is_training_, factor_, data_format_, &g));
    Tensor* out[5];
    for (int i = 0; i < 5; ++i) {
      PF_ASSIGN_OR_RETURN(out[i], ctx->AllocateOutput(i));
    }
    const int64_t c = g.channels;
    const T* px = x.data<T>();
    const T* scale = ctx->input(1).data<T>();
    const T* offset = ctx->input(2).data<T>();
    T* batch_mean = out[1]->data<T>();
    T* batch_var = out[2]->data<T>();
    T* mean = out[3]->data<T>();     // reserve_space_1: the mean used
    T* inv_std = out[4]->data<T>();  // reserve_space_2: 1/sqrt(variance used + epsilon)
    const T eps = static_cast<T>(epsilon_);
    const T* mean_in = ctx->input(3).data<T>();
    const T* var_in = ctx->input(4).data<T>();
    const bool dnnl = UseDnnl<T>(g, act_);
    if (is_training_) {
      PF_RETURN_IF_ERROR(TrainingStatistics(ctx, g, dnnl, out));
    } else {
      if constexpr (std::is_same_v<T, float>) {
        if (dnnl) {
          PF_RETURN_IF_ERROR(dnnl_.Forward(ctx, x.shape(), g.nchw, false, epsilon_, px, scale,
                                           offset, const_cast<T*>(mean_in), const_cast<T*>(var_in),
                                           out[0]->data<T>()));
        }
      }
      for (int64_t k = 0; k < c; ++k) {
        batch_mean[k] = mean[k] = mean_in[k];
        batch_var[k] = var_in[k];
        inv_std[k] = T(1) / std::sqrt(var_in[k] + eps);
      }
    }
    if (dnnl) return Status::OK();
    // y = x * a + (offset - mean * a), a = scale * inv_std.
    std::vector<T> a(c), d(c);
    NormalizeCoefficients<T>(scale, offset, mean, inv_std, c, a.data(), d.data());
    if (g.nchw) {
      ChannelAffine<T>(ctx, g, px, nullptr, a.data(), nullptr, d.data(), out[0]->data<T>());
    } else {
      NhwcNormalize<T>(ctx, px, g.outer, c, a.data(), d.data(), act_, out[0]->data<T>());
    }
    return Status::OK();
  }

 private:
  // Training: the batch's mean (reserve_space_1) and 1/sqrt(biased variance + epsilon)
  // (reserve_space_2), and batch_mean / batch_variance (the unbiased variance) blended into the
  // running ones by exponential_avg_factor. With oneDNN, y too.
  Status TrainingStatistics(OpKernelContext* ctx, const BatchNormGeometry& g, bool dnnl,
                            Tensor* const* out) {
    const Tensor& x = ctx->input(0);
    const int64_t c = g.channels;
    const T* px = x.data<T>();
    T* batch_mean = out[1]->data<T>();
    T* batch_var = out[2]->data<T>();
    T* mean = out[3]->data<T>();
    T* inv_std = out[4]->data<T>();
    const T eps = static_cast<T>(epsilon_);
    const T* mean_in = ctx->input(3).data<T>();
    const T* var_in = ctx->input(4).data<T>();
    std::vector<T> var(c), unused(c);
    const T n = static_cast<T>(g.count());
    if constexpr (std::is_same_v<T, float>) {
      if (dnnl) {
        // mean and biased variance, straight into reserve_space_1 and var.
        PF_RETURN_IF_ERROR(dnnl_.Forward(ctx, x.shape(), g.nchw, true, epsilon_, px,
                                         ctx->input(1).data<T>(), ctx->input(2).data<T>(), mean,
                                         var.data(), out[0]->data<T>()));
      }
    }
    if (!dnnl && !g.nchw) NhwcMoments<T>(ctx, px, g.outer, c, mean, var.data());
    if (!dnnl && g.nchw) {
      ChannelSums<T>(
          ctx, g, [&](int64_t i, int64_t, T& s, T&) { s += px[i]; }, mean, unused.data());
      for (int64_t k = 0; k < c; ++k) mean[k] /= n;
      ChannelSums<T>(
          ctx, g,
          [&](int64_t i, int64_t k, T& s, T&) {
            const T d = px[i] - mean[k];
            s += d * d;
          },
          var.data(), unused.data());
      for (int64_t k = 0; k < c; ++k) var[k] /= n;
    }
    const T unbias = g.count() > 1 ? n / (n - 1) : T(1);
    const T f = static_cast<T>(factor_);
    for (int64_t k = 0; k < c; ++k) {
      inv_std[k] = T(1) / std::sqrt(var[k] + eps);
      const T unbiased = var[k] * unbias;
      if (factor_ == 1.f) {
        batch_mean[k] = mean[k];
        batch_var[k] = unbiased;
      } else {
        batch_mean[k] = (T(1) - f) * mean_in[k] + f * mean[k];
        batch_var[k] = (T(1) - f) * var_in[k] + f * unbiased;
      }
    }
    return Status::OK();
  }

  float epsilon_, factor_;
  bool is_training_;
  std::string data_format_;
  BnActivation act_;
  Status act_status_;
  DnnlBatchNorm dnnl_;  // float32 only
};

// dscale = sum(dy * xhat), doffset = sum(dy) with xhat = (x - mean) * inv_std. Training:
// dx = scale * inv_std / n * (n * dy - sum(dy) - xhat * sum(dy * xhat)); inference:
// dx = dy * scale * inv_std. epsilon is unused: reserve_space_2 already holds the inverse std.
template <typename T>
class FusedBatchNormGradOp : public OpKernel {
 public:
  explicit FusedBatchNormGradOp(const Node& n)
      : OpKernel(n),
        is_training_(n.attr<bool>("is_training")),
        data_format_(n.attr<std::string>("data_format")),
        act_status_(ActivationOf(n, &act_)) {}

  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(act_status_);
    const Tensor& dy_t = ctx->input(0);
    const Tensor& x_t = ctx->input(1);
    BatchNormGeometry g;
    PF_RETURN_IF_ERROR(ValidateFusedBatchNormGrad(dy_t.shape(), x_t.shape(), ctx->input(2).shape(),
                                                  ctx->input(3).shape(), ctx->input(4).shape(),
                                                  data_format_, &g));
    // NHWC's own loops may write dx over dy (NhwcGradApply reads each element first).
    const bool own_nhwc = !g.nchw && !UseDnnl<T>(g, act_);
    Tensor* out[5];
    for (int i = 0; i < 5; ++i) {
      PF_ASSIGN_OR_RETURN(out[i], i == 0 && own_nhwc ? ctx->ForwardInputOrAllocateOutput({0}, 0)
                                                     : ctx->AllocateOutput(i));
    }
    const int64_t c = g.channels;
    const T* dy = dy_t.data<T>();
    const T* x = x_t.data<T>();
    const T* scale = ctx->input(2).data<T>();
    const T* mean = ctx->input(3).data<T>();
    const T* inv_std = ctx->input(4).data<T>();
    T* dscale = out[1]->data<T>();
    T* doffset = out[2]->data<T>();
    // _FusedBatchNormGradEx: the forward pass's coefficients, for the activation's mask.
    std::vector<T> fa, fd;
    if (act_ != BnActivation::kIdentity) {
      PF_RETURN_IF_ERROR(CheckVector("offset", ctx->input(5).shape(), c, true));
      fa.resize(c);
      fd.resize(c);
      NormalizeCoefficients<T>(scale, ctx->input(5).data<T>(), mean, inv_std, c, fa.data(),
                               fd.data());
    }
    if constexpr (std::is_same_v<T, float>) {
      if (UseDnnl<T>(g, act_)) {
        return dnnl_.Backward(ctx, x_t.shape(), g.nchw, is_training_, dy, x, scale, mean, inv_std,
                              out[0]->data<T>(), dscale, doffset);
      }
    }
    std::vector<T> dy_xc(c);  // sum(dy * (x - mean))
    if (g.nchw) {
      ChannelSums<T>(
          ctx, g,
          [&](int64_t i, int64_t k, T& s0, T& s1) {
            s0 += dy[i];
            s1 += dy[i] * (x[i] - mean[k]);
          },
          doffset, dy_xc.data());
    } else {
      NhwcGradSums<T>(ctx, dy, x, fa.data(), fd.data(), act_, mean, g.outer, c, doffset,
                      dy_xc.data());
    }
    for (int64_t k = 0; k < c; ++k) dscale[k] = dy_xc[k] * inv_std[k];
    // dx = dy * a + x * b + d.
    std::vector<T> a(c), b(c, T(0)), d(c, T(0));
    const T n = static_cast<T>(g.count());
    for (int64_t k = 0; k < c; ++k) {
      a[k] = scale[k] * inv_std[k];
      if (is_training_ && g.count() > 0) {
        b[k] = -a[k] * inv_std[k] * dscale[k] / n;
        d[k] = -a[k] * doffset[k] / n - mean[k] * b[k];
      }
    }
    if (g.nchw) {
      ChannelAffine<T>(ctx, g, dy, x, a.data(), b.data(), d.data(), out[0]->data<T>());
    } else {
      NhwcGradApply<T>(ctx, dy, x, fa.data(), fd.data(), act_, a.data(), b.data(), d.data(),
                       g.outer, c, out[0]->data<T>());
    }
    return Status::OK();
  }

 private:
  bool is_training_;
  std::string data_format_;
  BnActivation act_;
  Status act_status_;
  DnnlBatchNorm dnnl_;  // float32 only
};

// Gradients reaching batch_mean, batch_variance and the reserve spaces are ignored (TF); none
// flows to the mean and variance inputs.
PF_GRAD(FusedBatchNormGradFn) {
  auto r = ops::FusedBatchNormGrad(s, g[0], n.input(0), n.input(1), Out(n, 3), Out(n, 4),
                                   n.attr<float>("epsilon"), n.attr<bool>("is_training"),
                                   n.attr<std::string>("data_format"));
  *dx = {r.x_backprop, r.scale_backprop, r.offset_backprop, Output(), Output()};
  return Status::OK();
}

Shape ChannelVector(const BatchNormGeometry& g) { return Shape{g.channels}; }

Status FusedBatchNormShape(ShapeContext& c) {
  BatchNormGeometry g;
  PF_RETURN_IF_ERROR(ValidateFusedBatchNorm(
      c.input(0), c.input(1), c.input(2), c.input(3), c.input(4), c.attr<bool>("is_training"),
      c.attr<float>("exponential_avg_factor"), c.attr<std::string>("data_format"), &g));
  c.set_output(0, c.input(0).unknown_rank() ? Shape{-1, -1, -1, -1} : c.input(0));
  for (int i = 1; i < 5; ++i) c.set_output(i, ChannelVector(g));
  return Status::OK();
}

Status FusedBatchNormGradShape(ShapeContext& c) {
  BatchNormGeometry g;
  PF_RETURN_IF_ERROR(ValidateFusedBatchNormGrad(c.input(0), c.input(1), c.input(2), c.input(3),
                                                c.input(4), c.attr<std::string>("data_format"),
                                                &g));
  Shape x = c.input(1).MergeWith(c.input(0));
  c.set_output(0, x.unknown_rank() ? Shape{-1, -1, -1, -1} : x);
  c.set_output(1, ChannelVector(g));
  c.set_output(2, ChannelVector(g));
  c.set_output(3, Shape{0});
  c.set_output(4, Shape{0});
  return Status::OK();
}

Status CheckActivation(ShapeContext& c) {
  BnActivation act;
  return ParseActivation(c.attr<std::string>("activation_mode"), c.attr<std::string>("data_format"),
                         &act);
}

// x, scale, offset, mean, variance -> y, batch_mean, batch_variance, reserve_space_1 and 2.
OpDef BatchNormDef(const std::string& name) {
  return OpDef(name)
      .Input("x", "T")
      .Input("scale", "U")
      .Input("offset", "U")
      .Input("mean", "U")
      .Input("variance", "U")
      .Output("y", "T")
      .Output("batch_mean", "U")
      .Output("batch_variance", "U")
      .Output("reserve_space_1", "U")
      .Output("reserve_space_2", "U")
      .TypeAttr("T", kFloatingTypes)
      .TypeAttr("U", kRealTypes)  // the statistics' type (TF's FusedBatchNormV3)
      .Attr("epsilon", 1e-3f)
      .Attr("exponential_avg_factor", 1.f)
      .Attr("data_format", std::string("NHWC"))
      .Attr("is_training", true);
}

// y_backprop, x, scale, reserve_space_1 and 2 -> x, scale and offset backprops and TensorFlow's
// two empty outputs.
OpDef BatchNormGradDef(const std::string& name) {
  return OpDef(name)
      .Input("y_backprop", "T")
      .Input("x", "T")
      .Input("scale", "U")
      .Input("reserve_space_1", "U")
      .Input("reserve_space_2", "U")
      .Output("x_backprop", "T")
      .Output("scale_backprop", "U")
      .Output("offset_backprop", "U")
      .Output("reserve_space_3", "U")
      .Output("reserve_space_4", "U")
      .TypeAttr("T", kFloatingTypes)
      .TypeAttr("U", kRealTypes)
      .Attr("epsilon", 1e-3f)
      .Attr("data_format", std::string("NHWC"))
      .Attr("is_training", true);
}

PF_REGISTER_OP(BatchNormDef("FusedBatchNorm")
                   .SetGradient(FusedBatchNormGradFn)
                   .SetShapeFn(FusedBatchNormShape));
// Second-order gradients through batch norm are not needed by any model here; differentiating
// the gradient is an error rather than a silent zero.
PF_REGISTER_OP(
    BatchNormGradDef("FusedBatchNormGrad").SetNoGradient().SetShapeFn(FusedBatchNormGradShape));
// The remapper's fusions (executor/remapper.cc), never built by users: FusedBatchNorm ->
// Relu/Relu6 (y is the activation's output), and ReluGrad/Relu6Grad -> FusedBatchNormGrad
// (y_backprop is the activation's incoming gradient, masked where the activation's gradient is
// 0 at the pre-activation, recomputed from x and the forward pass's scale, offset and reserve
// spaces: the remapper fuses it only behind a _FusedBatchNormEx of the same x, which computed
// those very bits).
PF_REGISTER_OP(BatchNormDef("_FusedBatchNormEx")
                   .Attr("activation_mode", std::string("Identity"))
                   .SetNoGradient()
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(CheckActivation(c));
                     return FusedBatchNormShape(c);
                   }));
PF_REGISTER_OP(BatchNormGradDef("_FusedBatchNormGradEx")
                   .Input("offset", "U")
                   .Attr("activation_mode", std::string("Identity"))
                   .SetNoGradient()
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(CheckActivation(c));
                     BatchNormGeometry g;
                     PF_RETURN_IF_ERROR(
                         Geometry(c.input(1), c.attr<std::string>("data_format"), &g));
                     PF_RETURN_IF_ERROR(CheckVector("offset", c.input(5), g.channels, true));
                     return FusedBatchNormGradShape(c);
                   }));
PF_REGISTER_KERNEL(KernelDef("FusedBatchNorm", kDeviceCpu)
                       .TypeConstraint("T", {DT_FLOAT})
                       .TypeConstraint("U", {DT_FLOAT}),
                   FusedBatchNormOp<float>);
PF_REGISTER_KERNEL(KernelDef("FusedBatchNorm", kDeviceCpu)
                       .TypeConstraint("T", {DT_DOUBLE})
                       .TypeConstraint("U", {DT_DOUBLE}),
                   FusedBatchNormOp<double>);
PF_REGISTER_KERNEL(KernelDef("FusedBatchNormGrad", kDeviceCpu)
                       .TypeConstraint("T", {DT_FLOAT})
                       .TypeConstraint("U", {DT_FLOAT}),
                   FusedBatchNormGradOp<float>);
PF_REGISTER_KERNEL(KernelDef("FusedBatchNormGrad", kDeviceCpu)
                       .TypeConstraint("T", {DT_DOUBLE})
                       .TypeConstraint("U", {DT_DOUBLE}),
                   FusedBatchNormGradOp<double>);
PF_REGISTER_KERNEL(KernelDef("_FusedBatchNormEx", kDeviceCpu)
                       .TypeConstraint("T", {DT_FLOAT})
                       .TypeConstraint("U", {DT_FLOAT}),
                   FusedBatchNormOp<float>);
PF_REGISTER_KERNEL(KernelDef("_FusedBatchNormGradEx", kDeviceCpu)
                       .TypeConstraint("T", {DT_FLOAT})
                       .TypeConstraint("U", {DT_FLOAT}),
                   FusedBatchNormGradOp<float>);

}  // namespace

namespace ops {

FusedBatchNormOutputs FusedBatchNorm(const Scope& s, Output x, Output scale, Output offset,
                                     Output mean, Output variance, float epsilon, bool is_training,
                                     const std::string& data_format, float exponential_avg_factor) {
  Node* n = NodeBuilder(s, "FusedBatchNorm")
                .Input(x)
                .Input(scale)
                .Input(offset)
                .Input(mean)
                .Input(variance)
                .Attr("epsilon", epsilon)
                .Attr("is_training", is_training)
                .Attr("data_format", data_format)
                .Attr("exponential_avg_factor", exponential_avg_factor)
                .Finalize();
  return {Output(n, 0), Output(n, 1), Output(n, 2), Output(n, 3), Output(n, 4)};
}

FusedBatchNormGradOutputs FusedBatchNormGrad(const Scope& s, Output y_backprop, Output x,
                                             Output scale, Output reserve_space_1,
                                             Output reserve_space_2, float epsilon,
                                             bool is_training, const std::string& data_format) {
  Node* n = NodeBuilder(s, "FusedBatchNormGrad")
                .Input(y_backprop)
                .Input(x)
                .Input(scale)
                .Input(reserve_space_1)
                .Input(reserve_space_2)
                .Attr("epsilon", epsilon)
                .Attr("is_training", is_training)
                .Attr("data_format", data_format)
                .Finalize();
  return {Output(n, 0), Output(n, 1), Output(n, 2)};
}

}  // namespace ops
}  // namespace pf
