// Convolutions with TensorFlow's semantics: Conv2D, DepthwiseConv2dNative and their backprop
// ops (schemas, checks, shape functions, gradients, builders). The CPU kernels are in
// conv_kernels.cc. Each backprop op is differentiable in terms of the other two ops of its
// family, so Conv2DTranspose (a Conv2DBackpropInput) trains and second derivatives exist.
#include "placeflow/ops/nn/conv_ops.h"

#include <algorithm>
#include <span>
#include <vector>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {

namespace {

const std::vector<int64_t>& IntsAttr(const AttrMap& attrs, std::string_view name) {
  static const std::vector<int64_t> kEmpty;
  auto it = attrs.find(name);
  if (it == attrs.end()) return kEmpty;
  const auto* v = std::get_if<std::vector<int64_t>>(&it->second);
  return v != nullptr ? *v : kEmpty;
}

std::string StrAttr(const AttrMap& attrs, std::string_view name, std::string dflt) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return dflt;
  const auto* v = std::get_if<std::string>(&it->second);
  return v != nullptr ? *v : dflt;
}

// TensorFlow's GetWindowedOutputSizeVerbose (including its truncating division).
Status WindowedOutputSize(const ConvSpec& spec, int64_t in, int64_t k, int64_t dilation,
                          int64_t stride, int64_t explicit_before, int64_t explicit_after,
                          int64_t* out, int64_t* before, int64_t* after) {
  if (in < 0 || k < 0) {
    *out = *before = *after = -1;
    return Status::OK();
  }
  const int64_t ek = (k - 1) * dilation + 1;
  switch (spec.padding) {
    case ConvPadding::kValid:
      *out = (in - ek + stride) / stride;
      *before = *after = 0;
      break;
    case ConvPadding::kExplicit:
      *out = (in + explicit_before + explicit_after - ek + stride) / stride;
      *before = explicit_before;
      *after = explicit_after;
      break;
    case ConvPadding::kSame: {
      *out = (in + stride - 1) / stride;
      const int64_t total = std::max<int64_t>((*out - 1) * stride + ek - in, 0);
      *before = total / 2;
      *after = total - *before;
      break;
    }
  }
  if (*out < 0) {
    return errors::InvalidArgument(spec.op, ": computed output size would be negative: ", *out,
                                   " [input_size: ", in, ", effective_filter_size: ", ek,
                                   ", stride: ", stride, "]");
  }
  return Status::OK();
}

// The strides attr: 1 in the batch and depth dimensions, positive rows and columns.
Status ParseStrides(std::string_view op, const AttrMap& attrs, ConvKind kind, int h, int w, int c,
                    ConvSpec* spec) {
  const std::vector<int64_t>& strides = IntsAttr(attrs, "strides");
  if (strides.size() != 4) {
    return errors::InvalidArgument(op,
                                   ": sliding window strides field must specify 4 dimensions, "
                                   "got ",
                                   strides.size());
  }
  if (strides[0] != 1 || strides[c] != 1) {
    return errors::InvalidArgument(
        op,
        ": current implementation does not yet support strides in the batch and depth "
        "dimensions (strides must be 1 there)");
  }
  if (strides[h] < 1 || strides[w] < 1) {
    return errors::InvalidArgument(op, ": strides must be positive, got [", strides[h], ",",
                                   strides[w], "] for rows and columns");
  }
  if (kind == ConvKind::kDepthwise && strides[h] != strides[w]) {
    return errors::InvalidArgument(op,
                                   ": current implementation only supports equal length strides "
                                   "in the row and column dimensions");
  }
  spec->stride_rows = strides[h];
  spec->stride_cols = strides[w];
  return Status::OK();
}

// The dilations attr (default all 1): 1 in the batch and depth dimensions.
Status ParseDilations(std::string_view op, const AttrMap& attrs, int h, int w, int c,
                      ConvSpec* spec) {
  std::vector<int64_t> dilations = IntsAttr(attrs, "dilations");
  if (dilations.empty()) dilations = {1, 1, 1, 1};
  if (dilations.size() != 4) {
    return errors::InvalidArgument(
        op, ": sliding window dilations field must specify 4 dimensions, got ", dilations.size());
  }
  if (dilations[0] != 1 || dilations[c] != 1) {
    return errors::InvalidArgument(op,
                                   ": current implementation does not yet support dilations in "
                                   "the batch and depth dimensions");
  }
  if (dilations[h] < 1 || dilations[w] < 1) {
    return errors::InvalidArgument(op, ": dilated rates should be larger than 0");
  }
  spec->dilation_rows = dilations[h];
  spec->dilation_cols = dilations[w];
  return Status::OK();
}

// The padding attr, and explicit_paddings (8 values) with EXPLICIT only.
Status ParsePadding(std::string_view op, const AttrMap& attrs, int h, int w, int c,
                    ConvSpec* spec) {
  const std::string padding = StrAttr(attrs, "padding", "");
  const std::vector<int64_t>& explicit_paddings = IntsAttr(attrs, "explicit_paddings");
  if (padding == "SAME") {
    spec->padding = ConvPadding::kSame;
  } else if (padding == "VALID") {
    spec->padding = ConvPadding::kValid;
  } else if (padding == "EXPLICIT") {
    spec->padding = ConvPadding::kExplicit;
  } else {
    return errors::InvalidArgument(op, ": padding must be SAME, VALID or EXPLICIT, got '", padding,
                                   "'");
  }
  if (spec->padding != ConvPadding::kExplicit && !explicit_paddings.empty()) {
    return errors::InvalidArgument(
        op, ": explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT");
  }
  if (spec->padding == ConvPadding::kExplicit) {
    if (explicit_paddings.size() != 8) {
      return errors::InvalidArgument(op,
                                     ": explicit_paddings attribute must contain 8 values, "
                                     "but got: ",
                                     explicit_paddings.size());
    }
    for (int64_t v : explicit_paddings) {
      if (v < 0) {
        return errors::InvalidArgument(op,
                                       ": all elements of explicit_paddings must be nonnegative");
      }
    }
    if (explicit_paddings[0] != 0 || explicit_paddings[1] != 0 || explicit_paddings[2 * c] != 0 ||
        explicit_paddings[2 * c + 1] != 0) {
      return errors::InvalidArgument(
          op, ": nonzero explicit padding in the batch or depth dimensions is not supported");
    }
    spec->explicit_top = explicit_paddings[2 * h];
    spec->explicit_bottom = explicit_paddings[2 * h + 1];
    spec->explicit_left = explicit_paddings[2 * w];
    spec->explicit_right = explicit_paddings[2 * w + 1];
  }
  return Status::OK();
}

}  // namespace

StatusOr<ConvSpec> ParseConvSpec(std::string_view op, const AttrMap& attrs, ConvKind kind) {
  ConvSpec spec;
  spec.op = std::string(op);
  spec.kind = kind;
  const std::string format = StrAttr(attrs, "data_format", "NHWC");
  if (format != "NHWC" && format != "NCHW") {
    return errors::InvalidArgument(op, ": invalid data_format '", format,
                                   "': expected NHWC or NCHW");
  }
  spec.nchw = format == "NCHW";
  const int h = spec.nchw ? 2 : 1, w = h + 1, c = spec.nchw ? 1 : 3;
  PF_RETURN_IF_ERROR(ParseStrides(op, attrs, kind, h, w, c, &spec));
  PF_RETURN_IF_ERROR(ParseDilations(op, attrs, h, w, c, &spec));
  PF_RETURN_IF_ERROR(ParsePadding(op, attrs, h, w, c, &spec));
  return spec;
}

bool ConvParams::IsFullyDefined() const {
  for (int64_t v : {batch, in_rows, in_cols, in_depth, filter_rows, filter_cols, out_rows, out_cols,
                    out_depth, groups, out_per_group}) {
    if (v < 0) return false;
  }
  return true;
}

namespace {
Shape DataShape(bool nchw, int64_t n, int64_t h, int64_t w, int64_t c) {
  return nchw ? Shape{n, c, h, w} : Shape{n, h, w, c};
}
}  // namespace

Shape ConvParams::InputShape() const { return DataShape(nchw, batch, in_rows, in_cols, in_depth); }
Shape ConvParams::OutputShape() const {
  return DataShape(nchw, batch, out_rows, out_cols, out_depth);
}
Shape ConvParams::FilterShape() const {
  return Shape{filter_rows, filter_cols, in_depth, out_per_group};
}

Status ValidateConv2D(const ConvSpec& spec, const Shape& input, const Shape& filter,
                      ConvParams* p) {
  *p = ConvParams();
  p->nchw = spec.nchw;
  p->stride_rows = spec.stride_rows;
  p->stride_cols = spec.stride_cols;
  p->dilation_rows = spec.dilation_rows;
  p->dilation_cols = spec.dilation_cols;
  if (!input.unknown_rank() && input.rank() != 4) {
    return errors::InvalidArgument(spec.op, ": input must be 4-dimensional, got shape ",
                                   input.ToString());
  }
  if (!filter.unknown_rank() && filter.rank() != 4) {
    return errors::InvalidArgument(spec.op, ": filter must be 4-dimensional, got shape ",
                                   filter.ToString());
  }
  if (!input.unknown_rank()) {
    p->batch = input.dim(0);
    p->in_rows = input.dim(spec.nchw ? 2 : 1);
    p->in_cols = input.dim(spec.nchw ? 3 : 2);
    p->in_depth = input.dim(spec.nchw ? 1 : 3);
  }
  int64_t filter_depth = -1, filter_out = -1;
  if (!filter.unknown_rank()) {
    p->filter_rows = filter.dim(0);
    p->filter_cols = filter.dim(1);
    filter_depth = filter.dim(2);
    filter_out = filter.dim(3);
    if (p->filter_rows == 0 || p->filter_cols == 0) {
      return errors::InvalidArgument(spec.op,
                                     ": filter height and width must be positive, got "
                                     "filter shape ",
                                     filter.ToString());
    }
  }
  if (p->in_depth >= 0 && filter_depth >= 0 && p->in_depth != filter_depth) {
    return errors::InvalidArgument(
        spec.op, ": input and filter must have the same depth: ", p->in_depth, " vs ", filter_depth,
        " (input ", input.ToString(), ", filter ", filter.ToString(), ")");
  }
  if (p->in_depth < 0) p->in_depth = filter_depth;
  if (spec.kind == ConvKind::kConv2D) {
    p->groups = 1;
    p->out_per_group = filter_out;
    p->out_depth = filter_out;
  } else {
    p->groups = p->in_depth;
    p->out_per_group = filter_out;
    p->out_depth = p->in_depth >= 0 && filter_out >= 0 ? p->in_depth * filter_out : -1;
  }
  PF_RETURN_IF_ERROR(WindowedOutputSize(spec, p->in_rows, p->filter_rows, spec.dilation_rows,
                                        spec.stride_rows, spec.explicit_top, spec.explicit_bottom,
                                        &p->out_rows, &p->pad_top, &p->pad_bottom));
  PF_RETURN_IF_ERROR(WindowedOutputSize(spec, p->in_cols, p->filter_cols, spec.dilation_cols,
                                        spec.stride_cols, spec.explicit_left, spec.explicit_right,
                                        &p->out_cols, &p->pad_left, &p->pad_right));
  return Status::OK();
}

Status ValidateConv2DBackprop(const ConvSpec& spec, const Shape& input, const Shape& filter,
                              const Shape& out_backprop, ConvParams* p) {
  PF_RETURN_IF_ERROR(ValidateConv2D(spec, input, filter, p));
  if (!out_backprop.unknown_rank() && out_backprop.rank() != 4) {
    return errors::InvalidArgument(spec.op, ": out_backprop must be 4-dimensional, got shape ",
                                   out_backprop.ToString());
  }
  const Shape expected = p->OutputShape();
  if (!out_backprop.IsCompatibleWith(expected)) {
    return errors::InvalidArgument(spec.op, ": out_backprop ", out_backprop.ToString(),
                                   " does not match the computed output shape ",
                                   expected.ToString(), " of input ", input.ToString(),
                                   " and filter ", filter.ToString());
  }
  // Fill in what only out_backprop knew (shape functions with partly known shapes).
  if (!out_backprop.unknown_rank()) {
    const int h = spec.nchw ? 2 : 1, c = spec.nchw ? 1 : 3;
    if (p->batch < 0) p->batch = out_backprop.dim(0);
    if (p->out_rows < 0) p->out_rows = out_backprop.dim(h);
    if (p->out_cols < 0) p->out_cols = out_backprop.dim(h + 1);
    if (p->out_depth < 0) p->out_depth = out_backprop.dim(c);
  }
  return Status::OK();
}

Status ValidateConvSizesArg(const ConvSpec& spec, std::string_view arg, const Shape& sizes) {
  if (!sizes.unknown_rank() && (sizes.rank() != 1 || (sizes.dim(0) >= 0 && sizes.dim(0) != 4))) {
    return errors::InvalidArgument(spec.op, ": ", arg, " must be a vector of 4 values, got shape ",
                                   sizes.ToString());
  }
  return Status::OK();
}

StatusOr<Shape> ConvSizesShape(const ConvSpec& spec, std::string_view arg, const Tensor& sizes) {
  PF_RETURN_IF_ERROR(ValidateConvSizesArg(spec, arg, sizes.shape()));
  const std::vector<int64_t> dims = sizes.AsInt64Vector();
  for (int64_t d : dims) {
    if (d < 0) {
      return errors::InvalidArgument(spec.op, ": ", arg, " must be nonnegative, got ",
                                     Shape(std::span<const int64_t>(dims)).ToString());
    }
  }
  return Shape(std::span<const int64_t>(dims));
}

namespace {

// ---- shape functions ----

template <ConvKind kKind>
Status ConvShape(ShapeContext& c, const std::string& op) {
  PF_ASSIGN_OR_RETURN(ConvSpec spec, ParseConvSpec(op, c.attrs(), kKind));
  ConvParams p;
  PF_RETURN_IF_ERROR(ValidateConv2D(spec, c.input(0), c.input(1), &p));
  c.set_output(0, p.OutputShape());
  return Status::OK();
}

// The shape given by a sizes input: its value when known, else 4 unknown dims.
StatusOr<Shape> SizesShape(ShapeContext& c, const ConvSpec& spec, int i, std::string_view arg) {
  PF_RETURN_IF_ERROR(ValidateConvSizesArg(spec, arg, c.input(i)));
  if (c.input_tensor(i) == nullptr) return Shape{-1, -1, -1, -1};
  return c.ShapeFromInputTensor(i);
}

template <ConvKind kKind>
Status BackpropInputShape(ShapeContext& c, const std::string& op) {
  PF_ASSIGN_OR_RETURN(ConvSpec spec, ParseConvSpec(op, c.attrs(), kKind));
  PF_ASSIGN_OR_RETURN(Shape input, SizesShape(c, spec, 0, "input_sizes"));
  ConvParams p;
  PF_RETURN_IF_ERROR(ValidateConv2DBackprop(spec, input, c.input(1), c.input(2), &p));
  c.set_output(0, p.InputShape());
  return Status::OK();
}

template <ConvKind kKind>
Status BackpropFilterShape(ShapeContext& c, const std::string& op) {
  PF_ASSIGN_OR_RETURN(ConvSpec spec, ParseConvSpec(op, c.attrs(), kKind));
  PF_ASSIGN_OR_RETURN(Shape filter, SizesShape(c, spec, 1, "filter_sizes"));
  ConvParams p;
  PF_RETURN_IF_ERROR(ValidateConv2DBackprop(spec, c.input(0), filter, c.input(2), &p));
  c.set_output(0, filter);
  return Status::OK();
}

// ---- gradients ----

struct ConvOpNames {
  const char* forward;
  const char* backprop_input;
  const char* backprop_filter;
};
constexpr ConvOpNames kConv2DNames = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};
constexpr ConvOpNames kDepthwiseNames = {"DepthwiseConv2dNative",
                                         "DepthwiseConv2dNativeBackpropInput",
                                         "DepthwiseConv2dNativeBackpropFilter"};

// Builds one op of the family with the attrs of `like`.
Output ConvLike(const Scope& s, const char* op, const Node& like, std::vector<Output> inputs) {
  NodeBuilder b(s, op);
  for (const Output& in : inputs) b.Input(in);
  for (const char* a : {"strides", "padding", "explicit_paddings", "data_format", "dilations"}) {
    b.Attr(a, like.attrs().at(a));
  }
  return b.Finalize();
}

template <const ConvOpNames& kNames>
PF_GRAD(ConvForwardGrad) {
  const Output input = n.input(0), filter = n.input(1);
  *dx = {ConvLike(s, kNames.backprop_input, n, {ops::Shape(s, input), filter, g[0]}),
         ConvLike(s, kNames.backprop_filter, n, {input, ops::Shape(s, filter), g[0]})};
  return Status::OK();
}

template <const ConvOpNames& kNames>
PF_GRAD(ConvBackpropInputGrad) {
  const Output filter = n.input(1), dy = n.input(2);
  *dx = {Output(), ConvLike(s, kNames.backprop_filter, n, {g[0], ops::Shape(s, filter), dy}),
         ConvLike(s, kNames.forward, n, {g[0], filter})};
  return Status::OK();
}

template <const ConvOpNames& kNames>
PF_GRAD(ConvBackpropFilterGrad) {
  const Output input = n.input(0), dy = n.input(2);
  *dx = {ConvLike(s, kNames.backprop_input, n, {ops::Shape(s, input), g[0], dy}), Output(),
         ConvLike(s, kNames.forward, n, {input, g[0]})};
  return Status::OK();
}

OpDef WithConvAttrs(OpDef def) {
  return def.Attr("strides", std::vector<int64_t>{1, 1, 1, 1})
      .RequiredAttr("padding")
      .Attr("explicit_paddings", std::vector<int64_t>{})
      .Attr("data_format", std::string("NHWC"))
      .Attr("dilations", std::vector<int64_t>{1, 1, 1, 1})
      .TypeAttr("T", kFloatingTypes);
}

template <ConvKind kKind, const ConvOpNames& kNames>
void RegisterFamily() {
  OpRegistry* r = OpRegistry::Global();
  r->Register(
      WithConvAttrs(
          OpDef(kNames.forward).Input("input", "T").Input("filter", "T").Output("output", "T"))
          .SetGradient(ConvForwardGrad<kNames>)
          .SetShapeFn([](ShapeContext& c) { return ConvShape<kKind>(c, kNames.forward); }));
  r->Register(WithConvAttrs(OpDef(kNames.backprop_input)
                                .Input("input_sizes", "int32")
                                .Input("filter", "T")
                                .Input("out_backprop", "T")
                                .Output("output", "T"))
                  .SetGradient(ConvBackpropInputGrad<kNames>)
                  .SetShapeFn([](ShapeContext& c) {
                    return BackpropInputShape<kKind>(c, kNames.backprop_input);
                  }));
  r->Register(WithConvAttrs(OpDef(kNames.backprop_filter)
                                .Input("input", "T")
                                .Input("filter_sizes", "int32")
                                .Input("out_backprop", "T")
                                .Output("output", "T"))
                  .SetGradient(ConvBackpropFilterGrad<kNames>)
                  .SetShapeFn([](ShapeContext& c) {
                    return BackpropFilterShape<kKind>(c, kNames.backprop_filter);
                  }));
}

const bool kConvGradsRegistered = [] {
  RegisterFamily<ConvKind::kConv2D, kConv2DNames>();
  RegisterFamily<ConvKind::kDepthwise, kDepthwiseNames>();
  return true;
}();

NodeBuilder ConvBuilder(const Scope& s, const char* op, const std::vector<int32_t>& strides,
                        const std::string& padding, const ops::ConvAttrs& attrs) {
  NodeBuilder b(s, op);
  b.Attr("strides", std::vector<int64_t>(strides.begin(), strides.end()))
      .Attr("padding", padding)
      .Attr("explicit_paddings",
            std::vector<int64_t>(attrs.explicit_paddings.begin(), attrs.explicit_paddings.end()))
      .Attr("data_format", attrs.data_format)
      .Attr("dilations", std::vector<int64_t>(attrs.dilations.begin(), attrs.dilations.end()));
  return b;
}

}  // namespace

namespace ops {

Output Conv2D(const Scope& s, Output input, Output filter, const std::vector<int32_t>& strides,
              const std::string& padding, const ConvAttrs& attrs) {
  return ConvBuilder(s, "Conv2D", strides, padding, attrs).Input(input).Input(filter).Finalize();
}
Output Conv2DBackpropInput(const Scope& s, Output input_sizes, Output filter, Output out_backprop,
                           const std::vector<int32_t>& strides, const std::string& padding,
                           const ConvAttrs& attrs) {
  return ConvBuilder(s, "Conv2DBackpropInput", strides, padding, attrs)
      .Input(input_sizes)
      .Input(filter)
      .Input(out_backprop)
      .Finalize();
}
Output Conv2DBackpropFilter(const Scope& s, Output input, Output filter_sizes, Output out_backprop,
                            const std::vector<int32_t>& strides, const std::string& padding,
                            const ConvAttrs& attrs) {
  return ConvBuilder(s, "Conv2DBackpropFilter", strides, padding, attrs)
      .Input(input)
      .Input(filter_sizes)
      .Input(out_backprop)
      .Finalize();
}
Output Conv2DTranspose(const Scope& s, Output value, Output filter,
                       const std::vector<int32_t>& output_shape,
                       const std::vector<int32_t>& strides, const std::string& padding,
                       const ConvAttrs& attrs) {
  return Conv2DBackpropInput(s, ConstInt(s, output_shape), filter, value, strides, padding, attrs);
}
Output DepthwiseConv2dNative(const Scope& s, Output input, Output filter,
                             const std::vector<int32_t>& strides, const std::string& padding,
                             const ConvAttrs& attrs) {
  return ConvBuilder(s, "DepthwiseConv2dNative", strides, padding, attrs)
      .Input(input)
      .Input(filter)
      .Finalize();
}
Output DepthwiseConv2dNativeBackpropInput(const Scope& s, Output input_sizes, Output filter,
                                          Output out_backprop, const std::vector<int32_t>& strides,
                                          const std::string& padding, const ConvAttrs& attrs) {
  return ConvBuilder(s, "DepthwiseConv2dNativeBackpropInput", strides, padding, attrs)
      .Input(input_sizes)
      .Input(filter)
      .Input(out_backprop)
      .Finalize();
}
Output DepthwiseConv2dNativeBackpropFilter(const Scope& s, Output input, Output filter_sizes,
                                           Output out_backprop, const std::vector<int32_t>& strides,
                                           const std::string& padding, const ConvAttrs& attrs) {
  return ConvBuilder(s, "DepthwiseConv2dNativeBackpropFilter", strides, padding, attrs)
      .Input(input)
      .Input(filter_sizes)
      .Input(out_backprop)
      .Finalize();
}

}  // namespace ops
}  // namespace pf
