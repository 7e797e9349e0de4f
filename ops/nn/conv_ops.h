// Checks and geometry of the convolution ops (conv_ops.cc): Conv2D, DepthwiseConv2dNative and
// their backprop ops. The shape functions, the CPU kernels and the GPU kernels all go through
// ParseConvSpec + ValidateConv*, so every device rejects the same inputs with the same message
// and uses the same padding arithmetic (ConvParams).
//
//   PF_ASSIGN_OR_RETURN(ConvSpec spec, ParseConvSpec("Conv2D", node.attrs(), ConvKind::kConv2D));
//   ConvParams p;
//   PF_RETURN_IF_ERROR(ValidateConv2D(spec, input.shape(), filter.shape(), &p));
//   // p.out_rows, p.pad_top, ... ; oneDNN: padding_l = {pad_top, pad_left}, dilation - 1
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"
#include "placeflow/graph/attr.h"

namespace pf {

enum class ConvKind { kConv2D, kDepthwise };
enum class ConvPadding { kSame, kValid, kExplicit };

// The attrs, checked once (strides, padding, explicit_paddings, data_format, dilations).
struct ConvSpec {
  std::string op;  // for messages
  ConvKind kind = ConvKind::kConv2D;
  bool nchw = false;
  ConvPadding padding = ConvPadding::kValid;
  int64_t stride_rows = 1, stride_cols = 1;
  int64_t dilation_rows = 1, dilation_cols = 1;
  // EXPLICIT only: (before, after) for rows and cols.
  int64_t explicit_top = 0, explicit_bottom = 0, explicit_left = 0, explicit_right = 0;
};
StatusOr<ConvSpec> ParseConvSpec(std::string_view op, const AttrMap& attrs, ConvKind kind);

// The geometry of one convolution, from (input shape, filter shape, spec). Dims that are not
// known (shape functions) are -1, and so is everything computed from them. Channels are split
// into `groups` (1 for Conv2D, in_depth for depthwise): output channel o belongs to group
// o / out_per_group and reads input channels [g * in_per_group, (g + 1) * in_per_group).
// The filter is [filter_rows, filter_cols, in_depth / groups... ] as TensorFlow stores it:
// element ((r * filter_cols + c) * in_depth + i) * out_per_group + o_in_group, where i is the
// input channel (depthwise: the group) -- the same formula for both kinds.
struct ConvParams {
  int64_t batch = -1, in_rows = -1, in_cols = -1, in_depth = -1;
  int64_t filter_rows = -1, filter_cols = -1;
  int64_t out_rows = -1, out_cols = -1, out_depth = -1;
  int64_t groups = -1, out_per_group = -1;  // depthwise: out_per_group is the multiplier
  int64_t stride_rows = 1, stride_cols = 1, dilation_rows = 1, dilation_cols = 1;
  // TensorFlow's padding, all >= 0; SAME puts the odd padding element at the end. Rows past
  // the last window (VALID, EXPLICIT, strides > 1) are never read: see PadBottomExact.
  int64_t pad_top = -1, pad_bottom = -1, pad_left = -1, pad_right = -1;
  bool nchw = false;

  int64_t EffectiveFilterRows() const { return (filter_rows - 1) * dilation_rows + 1; }
  int64_t EffectiveFilterCols() const { return (filter_cols - 1) * dilation_cols + 1; }
  // The end padding that makes (in + begin + end - effective_filter) / stride + 1 == out
  // exactly, as oneDNN checks its descriptors; negative when trailing rows go unread.
  int64_t PadBottomExact() const {
    return (out_rows - 1) * stride_rows + EffectiveFilterRows() - in_rows - pad_top;
  }
  int64_t PadRightExact() const {
    return (out_cols - 1) * stride_cols + EffectiveFilterCols() - in_cols - pad_left;
  }

  bool IsFullyDefined() const;
  Shape InputShape() const;   // in data_format order
  Shape OutputShape() const;  // in data_format order
  Shape FilterShape() const;  // [rows, cols, in_depth, out_per_group] (Conv2D: out_depth)
};

// Forward: input and filter 4-D, channels match, output sizes positive. Fills *p.
Status ValidateConv2D(const ConvSpec& spec, const Shape& input, const Shape& filter, ConvParams* p);
// Backprops: as the forward, plus out_backprop must be the forward's output shape.
// `input` is the shape given by input_sizes (BackpropInput) or the input tensor's shape;
// `filter` likewise.
Status ValidateConv2DBackprop(const ConvSpec& spec, const Shape& input, const Shape& filter,
                              const Shape& out_backprop, ConvParams* p);
// input_sizes / filter_sizes tensors: int32 vectors of 4 entries.
Status ValidateConvSizesArg(const ConvSpec& spec, std::string_view arg, const Shape& sizes);
// The shape an input_sizes / filter_sizes tensor (in host memory) gives: checked as above, and
// every entry nonnegative. Both devices' kernels read it here.
StatusOr<Shape> ConvSizesShape(const ConvSpec& spec, std::string_view arg, const Tensor& sizes);

}  // namespace pf
