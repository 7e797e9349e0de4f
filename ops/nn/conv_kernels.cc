// CPU kernels of the convolution ops (conv_ops.cc). float32 runs oneDNN's convolution
// primitives (conv_onednn.h), and bfloat16 too where the CPU has bfloat16 math (else it computes
// in float32: ops/half_via_float.h); float64 runs the direct loops below, which exist for the
// finite-difference gradient checker.
#include <algorithm>
#include <cstring>

#include "placeflow/ops/half_via_float.h"
#include "placeflow/ops/nn/conv_onednn.h"
#include "placeflow/ops/nn/conv_ops.h"
#include "placeflow/ops/op_util.h"

namespace pf {
namespace {

// Element offset of (n, c, h, w) in an NHWC or NCHW tensor of `rows` x `cols` x `depth`.
inline int64_t DataIndex(bool nchw, int64_t n, int64_t c, int64_t h, int64_t w, int64_t rows,
                         int64_t cols, int64_t depth) {
  return nchw ? ((n * depth + c) * rows + h) * cols + w : ((n * rows + h) * cols + w) * depth + c;
}

// One loop nest for the three directions: visits every (output element, filter tap) pair whose
// input element lies inside the (unpadded) input, and calls fn(input index, filter index,
// output index). `n_begin..n_end` restricts the batch, `o_begin..o_end` the output channels.
template <typename Fn>
void ForEachTap(const ConvParams& p, int64_t n_begin, int64_t n_end, int64_t o_begin, int64_t o_end,
                Fn&& fn) {
  const int64_t in_per_group = p.in_depth / p.groups;
  for (int64_t n = n_begin; n < n_end; ++n) {
    for (int64_t oy = 0; oy < p.out_rows; ++oy) {
      for (int64_t ox = 0; ox < p.out_cols; ++ox) {
        for (int64_t o = o_begin; o < o_end; ++o) {
          const int64_t g = o / p.out_per_group, o_in_group = o % p.out_per_group;
          const int64_t out_idx =
              DataIndex(p.nchw, n, o, oy, ox, p.out_rows, p.out_cols, p.out_depth);
          for (int64_t ky = 0; ky < p.filter_rows; ++ky) {
            const int64_t iy = oy * p.stride_rows - p.pad_top + ky * p.dilation_rows;
            if (iy < 0 || iy >= p.in_rows) continue;
            for (int64_t kx = 0; kx < p.filter_cols; ++kx) {
              const int64_t ix = ox * p.stride_cols - p.pad_left + kx * p.dilation_cols;
              if (ix < 0 || ix >= p.in_cols) continue;
              for (int64_t j = 0; j < in_per_group; ++j) {
                const int64_t i = g * in_per_group + j;
                const int64_t in_idx =
                    DataIndex(p.nchw, n, i, iy, ix, p.in_rows, p.in_cols, p.in_depth);
                const int64_t f_idx =
                    ((ky * p.filter_cols + kx) * p.in_depth + i) * p.out_per_group + o_in_group;
                fn(in_idx, f_idx, out_idx);
              }
            }
          }
        }
      }
    }
  }
}

template <typename T>
void DirectConv(OpKernelContext* ctx, ConvDirection dir, const ConvParams& p, const T* input,
                const T* filter, const T* output, T* result, int64_t result_size) {
  std::fill(result, result + result_size, T(0));
  const int64_t per_image =
      p.out_rows * p.out_cols * p.out_depth * p.filter_rows * p.filter_cols * 2;
  switch (dir) {
    case ConvDirection::kForward:
      ParallelFor(ctx, p.batch, per_image, [&](int64_t b, int64_t e) {
        ForEachTap(p, b, e, 0, p.out_depth,
                   [&](int64_t i, int64_t f, int64_t o) { result[o] += input[i] * filter[f]; });
      });
      break;
    case ConvDirection::kBackwardData:  // images write disjoint parts of d input
      ParallelFor(ctx, p.batch, per_image, [&](int64_t b, int64_t e) {
        ForEachTap(p, b, e, 0, p.out_depth,
                   [&](int64_t i, int64_t f, int64_t o) { result[i] += filter[f] * output[o]; });
      });
      break;
    case ConvDirection::kBackwardFilter:  // output channels write disjoint filter entries
      ParallelFor(ctx, p.out_depth, per_image * p.batch / std::max<int64_t>(p.out_depth, 1),
                  [&](int64_t b, int64_t e) {
                    ForEachTap(p, 0, p.batch, b, e, [&](int64_t i, int64_t f, int64_t o) {
                      result[f] += input[i] * output[o];
                    });
                  });
      break;
  }
}

template <typename T>
class ConvOp : public OpKernel {
 public:
  ConvOp(const Node& n, ConvKind kind, ConvDirection dir)
      : OpKernel(n), dir_(dir), spec_(ParseConvSpec(n.op(), n.attrs(), kind)) {}

  Status Compute(OpKernelContext* ctx) override {
    if (!spec_.ok()) return spec_.status();
    const ConvSpec& spec = *spec_;
    ConvParams p;
    const Tensor *input = nullptr, *filter = nullptr, *dy = nullptr;
    switch (dir_) {
      case ConvDirection::kForward:
        input = &ctx->input(0);
        filter = &ctx->input(1);
        PF_RETURN_IF_ERROR(ValidateConv2D(spec, input->shape(), filter->shape(), &p));
        break;
      case ConvDirection::kBackwardData: {
        PF_ASSIGN_OR_RETURN(Shape sizes, ConvSizesShape(spec, "input_sizes", ctx->input(0)));
        filter = &ctx->input(1);
        dy = &ctx->input(2);
        PF_RETURN_IF_ERROR(ValidateConv2DBackprop(spec, sizes, filter->shape(), dy->shape(), &p));
        break;
      }
      case ConvDirection::kBackwardFilter: {
        input = &ctx->input(0);
        PF_ASSIGN_OR_RETURN(Shape sizes, ConvSizesShape(spec, "filter_sizes", ctx->input(1)));
        dy = &ctx->input(2);
        PF_RETURN_IF_ERROR(ValidateConv2DBackprop(spec, input->shape(), sizes, dy->shape(), &p));
        break;
      }
    }
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t out_size = out->num_elements();
    if (out_size == 0) return Status::OK();
    T* result = out->data<T>();
    // A sum over nothing (no channels, an empty batch, no output positions) is zero.
    for (const Tensor* t : {input, filter, dy}) {
      if (t != nullptr && t->num_elements() == 0) {
        std::fill(result, result + out_size, T{});
        return Status::OK();
      }
    }
    const T* x = input ? input->data<T>() : nullptr;
    const T* w = filter ? filter->data<T>() : nullptr;
    const T* y = dy ? dy->data<T>() : nullptr;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
      if (std::is_same_v<T, BFloat16> && ctx->tracing())
        ctx->SetTraceLabel("oneDNN bfloat16 convolution");
      return dnnl_.Run(ctx, dir_, p, x, w, y, result);
    } else {
      DirectConv<T>(ctx, dir_, p, x, w, y, result, out_size);
      return Status::OK();
    }
  }

 private:
  ConvDirection dir_;
  StatusOr<ConvSpec> spec_;
  DnnlConv dnnl_;
};

template <typename T, ConvKind kKind, ConvDirection kDir>
class ConvOpFor : public ConvOp<T> {
 public:
  explicit ConvOpFor(const Node& n) : ConvOp<T>(n, kKind, kDir) {}
};

// bfloat16 on oneDNN where the CPU has bfloat16 math, else through float32.
template <ConvKind kKind, ConvDirection kDir>
std::unique_ptr<OpKernel> NewBf16Conv(const Node& n) {
  if (DnnlNativeBf16()) return std::make_unique<ConvOpFor<BFloat16, kKind, kDir>>(n);
  return NewHalfViaFloatKernel(n);
}

#define PF_CONV_KERNELS(op, kind, dir)                                           \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),  \
                     ConvOpFor<float, ConvKind::kind, ConvDirection::dir>);      \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), \
                     ConvOpFor<double, ConvKind::kind, ConvDirection::dir>);     \
  static const KernelRegistrar PF_CONCAT(pf_bf16_conv_, __COUNTER__)(            \
      KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_BFLOAT16}),              \
      NewBf16Conv<ConvKind::kind, ConvDirection::dir>)

PF_CONV_KERNELS("Conv2D", kConv2D, kForward);
PF_CONV_KERNELS("Conv2DBackpropInput", kConv2D, kBackwardData);
PF_CONV_KERNELS("Conv2DBackpropFilter", kConv2D, kBackwardFilter);
PF_CONV_KERNELS("DepthwiseConv2dNative", kDepthwise, kForward);
PF_CONV_KERNELS("DepthwiseConv2dNativeBackpropInput", kDepthwise, kBackwardData);
PF_CONV_KERNELS("DepthwiseConv2dNativeBackpropFilter", kDepthwise, kBackwardFilter);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_CONV_KERNELS
