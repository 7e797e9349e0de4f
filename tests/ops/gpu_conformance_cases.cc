// The conformance cases tests/ops/gpu_conformance_test.cc runs, one function per op family;
// OpCases() lists them in a fixed order (the harness draws each case's inputs from a seed that
// counts up over the list).
#include "tests/ops/gpu_conformance_cases.h"

#include <fmt/ranges.h>

namespace pf::conformance {
namespace {

// Short dtype names: the lists below read as tables.
constexpr DType f = DT_FLOAT, d = DT_DOUBLE, i32 = DT_INT32, i64 = DT_INT64;
using In = const std::vector<Output>&;

// Elementwise binary ops, broadcasting and not, real and integer.
void BinaryCases(std::vector<Case>* cases) {
  auto binary = [&](const char* name, Output (*fn)(const Scope&, Output, Output), DType t,
                    double lo, double hi) {
    // Broadcasting [4,1,5] against [3,1], and same shapes (the vectorised path).
    cases->push_back(
        {fmt::format("{} broadcast {}", name, DTypeName(t)),
         {{t, {4, 1, 5}, lo, hi}, {t, {3, 1}, lo, hi}},
         [fn](const Scope& s, In in) { return std::vector<Output>{fn(s, in[0], in[1])}; }});
    cases->push_back(
        {fmt::format("{} same shape {}", name, DTypeName(t)),
         {{t, {8, 64}, lo, hi}, {t, {8, 64}, lo, hi}},
         [fn](const Scope& s, In in) { return std::vector<Output>{fn(s, in[0], in[1])}; }});
  };
  for (DType t : {f, d}) {
    binary("Add", ops::Add, t, -1, 1);
    binary("Sub", ops::Sub, t, -1, 1);
    binary("Mul", ops::Mul, t, -1, 1);
    binary("Div", ops::Div, t, 0.5, 2);
    binary("Maximum", ops::Maximum, t, -1, 1);
    binary("Minimum", ops::Minimum, t, -1, 1);
    binary("Pow", ops::Pow, t, 0.5, 2);
  }
  for (DType t : {i32, i64}) {
    binary("Add", ops::Add, t, -50, 50);
    binary("Mul", ops::Mul, t, -50, 50);
    binary("Maximum", ops::Maximum, t, -50, 50);
    binary("Equal", ops::Equal, t, 0, 3);  // small range: equal pairs occur
    binary("Less", ops::Less, t, 0, 3);
    binary("Greater", ops::Greater, t, 0, 3);
    binary("NotEqual", ops::NotEqual, t, 0, 3);
    binary("LessEqual", ops::LessEqual, t, 0, 3);
    binary("GreaterEqual", ops::GreaterEqual, t, 0, 3);
  }
  binary("Sub", ops::Sub, i64, -50, 50);
  binary("Minimum", ops::Minimum, i32, -50, 50);
  binary("Equal", ops::Equal, f, -1, 1);
  binary("Less", ops::Less, f, -1, 1);
  binary("Greater", ops::Greater, d, -1, 1);
  binary("GreaterEqual", ops::GreaterEqual, f, -1, 1);
}

// Elementwise unary ops, Cast, BiasAdd and AddN.
void UnaryCases(std::vector<Case>* cases) {
  auto unary = [&](const char* name, Output (*fn)(const Scope&, Output), double lo, double hi,
                   DType t = DT_FLOAT) {
    cases->push_back({fmt::format("{} {}", name, DTypeName(t)),
                      {{t, {7, 33}, lo, hi}},
                      [fn](const Scope& s, In in) { return std::vector<Output>{fn(s, in[0])}; },
                      IsReal(t)});
  };
  for (DType t : {f, d}) {
    unary("Neg", ops::Neg, -2, 2, t);
    unary("Square", ops::Square, -2, 2, t);
    unary("Sqrt", ops::Sqrt, 0.1, 4, t);
    unary("Rsqrt", ops::Rsqrt, 0.1, 4, t);
    unary("Exp", ops::Exp, -3, 3, t);
    unary("Log", ops::Log, 0.1, 4, t);
    unary("Relu", ops::Relu, -2, 2, t);
    unary("Sigmoid", ops::Sigmoid, -4, 4, t);
    unary("Tanh", ops::Tanh, -3, 3, t);
  }
  unary("Neg", ops::Neg, -100, 100, i32);
  unary("Square", ops::Square, -100, 100, i64);
  cases->push_back({"Floor",
                    {{f, {5, 9}, -3, 3}},
                    [](const Scope& s, In in) { return std::vector<Output>{ops::Floor(s, in[0])}; },
                    false});
  for (auto [from, to_binding] : std::vector<std::pair<DType, DType>>{
           {f, i32}, {i32, f}, {f, d}, {i64, d}, {DT_BOOL, f}, {f, DT_BOOL}}) {
    const DType to = to_binding;  // clang 14 (sanitizer builds) cannot capture a binding
    cases->push_back(
        {fmt::format("Cast {} to {}", DTypeName(from), DTypeName(to)),
         {{from, {6, 7}, -5, 5}},
         [to](const Scope& s, In in) { return std::vector<Output>{ops::Cast(s, in[0], to)}; },
         false});
  }
  cases->push_back({"BiasAdd", {{f, {16, 24}}, {f, {24}}}, [](const Scope& s, In in) {
                      return std::vector<Output>{ops::BiasAdd(s, in[0], in[1])};
                    }});
  cases->push_back({"AddN of 10", std::vector<InputSpec>(10, {f, {5, 40}}),
                    [](const Scope& s, In in) { return std::vector<Output>{ops::AddN(s, in)}; }});
}

// Reductions over every axis set, ArgMax and MatMul.
void ReductionAndMatMulCases(std::vector<Case>* cases) {
  const std::vector<std::vector<int32_t>> axes_list = {{}, {0}, {1}, {2}, {0, 2}, {-1}};
  for (const auto& axes : axes_list) {
    for (bool keep : {false, true}) {
      const std::string tag = fmt::format("axes [{}] keep_dims {}", fmt::join(axes, ","), keep);
      cases->push_back({"Sum " + tag, {{f, {6, 50, 7}}}, [axes, keep](const Scope& s, In in) {
                          return std::vector<Output>{ops::Sum(s, in[0], axes, keep)};
                        }});
      cases->push_back({"Mean " + tag, {{d, {6, 50, 7}}}, [axes, keep](const Scope& s, In in) {
                          return std::vector<Output>{ops::Mean(s, in[0], axes, keep)};
                        }});
      cases->push_back({"Max " + tag, {{f, {6, 50, 7}}}, [axes, keep](const Scope& s, In in) {
                          return std::vector<Output>{ops::Max(s, in[0], axes, keep)};
                        }});
      cases->push_back({"Min " + tag,
                        {{i32, {6, 50, 7}, -1000, 1000}},
                        [axes, keep](const Scope& s, In in) {
                          return std::vector<Output>{ops::Min(s, in[0], axes, keep)};
                        },
                        false});
    }
  }
  cases->push_back(
      {"Mean int64 (integer division)",
       {{i64, {3, 7}, -100, 100}},
       [](const Scope& s, In in) { return std::vector<Output>{ops::Mean(s, in[0], {1})}; },
       false});
  cases->push_back(
      {"Sum of a large row",
       {{f, {2, 100000}}},
       [](const Scope& s, In in) { return std::vector<Output>{ops::Sum(s, in[0], {1})}; },
       true,
       1e-4});
  for (int axis : {0, 1, -1}) {
    cases->push_back({fmt::format("ArgMax axis {}", axis),
                      {{f, {9, 13}}},
                      [axis](const Scope& s, In in) {
                        return std::vector<Output>{ops::ArgMax(s, in[0], axis, DT_INT64),
                                                   ops::ArgMax(s, in[0], axis, DT_INT32)};
                      },
                      false});
  }
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (DType t : {f, d}) {
        const Shape a = ta ? Shape{37, 19} : Shape{19, 37};
        const Shape b = tb ? Shape{23, 37} : Shape{37, 23};
        cases->push_back({fmt::format("MatMul ta={} tb={} {}", ta, tb, DTypeName(t)),
                          {{t, a}, {t, b}},
                          [ta, tb](const Scope& s, In in) {
                            return std::vector<Output>{ops::MatMul(s, in[0], in[1], ta, tb)};
                          }});
      }
    }
  }
  cases->push_back(
      {"MatMul 512x600x2000 (seed 000's first layer)",
       {{f, {2000, 600}}, {f, {600, 512}}},
       [](const Scope& s, In in) { return std::vector<Output>{ops::MatMul(s, in[0], in[1])}; },
       true,
       1e-4});
}

// Softmax and the losses.
void LossCases(std::vector<Case>* cases) {
  for (DType t : {f, d}) {
    cases->push_back(
        {fmt::format("Softmax {}", DTypeName(t)),
         {{t, {11, 10}, -5, 5}},
         [](const Scope& s, In in) { return std::vector<Output>{ops::Softmax(s, in[0])}; }});
    cases->push_back(
        {fmt::format("LogSoftmax {}", DTypeName(t)),
         {{t, {11, 300}, -5, 5}},
         [](const Scope& s, In in) { return std::vector<Output>{ops::LogSoftmax(s, in[0])}; }});
    cases->push_back({fmt::format("SoftmaxCrossEntropyWithLogits {}", DTypeName(t)),
                      {{t, {12, 10}, -5, 5}, {t, {12, 10}, 0, 1}},
                      [](const Scope& s, In in) {
                        auto [loss, backprop] = ops::SoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
                        return std::vector<Output>{loss, backprop};
                      }});
    for (DType it : {i32, i64}) {
      cases->push_back(
          {fmt::format("SparseSoftmaxCrossEntropyWithLogits {} {}", DTypeName(t), DTypeName(it)),
           {{t, {50, 10}, -5, 5}, {it, {50}, 0, 10}},
           [](const Scope& s, In in) {
             auto [loss, backprop] = ops::SparseSoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
             return std::vector<Output>{loss, backprop};
           }});
    }
    cases->push_back({fmt::format("SigmoidCrossEntropyWithLogits {}", DTypeName(t)),
                      {{t, {9, 8}, -30, 30}, {t, {9, 8}, 0, 1}},
                      [](const Scope& s, In in) {
                        return std::vector<Output>{
                            ops::SigmoidCrossEntropyWithLogits(s, in[0], in[1])};
                      }});
    cases->push_back({fmt::format("MeanSquaredError same shape {}", DTypeName(t)),
                      {{t, {30, 4}}, {t, {30, 4}}},
                      [](const Scope& s, In in) {
                        return std::vector<Output>{ops::MeanSquaredError(s, in[0], in[1])};
                      }});
    cases->push_back({fmt::format("MeanSquaredError [N,1] vs [N,C] {}", DTypeName(t)),
                      {{t, {40, 1}}, {t, {40, 60}}},
                      [](const Scope& s, In in) {
                        return std::vector<Output>{ops::MeanSquaredError(s, in[0], in[1])};
                      }});
    cases->push_back(
        {fmt::format("L2Loss {}", DTypeName(t)), {{t, {17, 3}}}, [](const Scope& s, In in) {
           return std::vector<Output>{ops::L2Loss(s, in[0])};
         }});
  }
}

// Fills, reshapes, transposes, Concat, Split and Slice.
void ShapeCases(std::vector<Case>* cases) {
  cases->push_back({"Fill, ZerosLike, OnesLike",
                    {{f, {}}, {i64, {3, 4}, -9, 9}},
                    [](const Scope& s, In in) {
                      return std::vector<Output>{ops::Fill(s, ops::ConstInt(s, {2, 5}), in[0]),
                                                 ops::ZerosLike(s, in[1]), ops::OnesLike(s, in[1])};
                    },
                    false});
  cases->push_back({"Identity, StopGradient, Reshape, ExpandDims, Squeeze, Shape, Const",
                    {{f, {4, 1, 6}}},
                    [](const Scope& s, In in) {
                      Output x = ops::Identity(s, in[0]);
                      Output r = ops::Reshape(s, ops::StopGradient(s, x), {6, 4});
                      Output e = ops::ExpandDims(s, ops::Squeeze(s, x, {1}), 0);
                      Output shape = ops::Shape(s, e);
                      Output shaped = ops::Reshape(s, ops::Add(s, r, ops::Const(s, 1.5f)),
                                                   shape);  // a shape made on the GPU
                      return std::vector<Output>{r, e, shape, ops::Shape(s, x, DT_INT64), shaped};
                    },
                    false});
  cases->push_back({"Transpose [2,3,4] perm 2,0,1", {{f, {2, 3, 4}}}, [](const Scope& s, In in) {
                      return std::vector<Output>{ops::Transpose(s, in[0], {2, 0, 1})};
                    }});
  cases->push_back({"Transpose int64 [5,7]",
                    {{i64, {5, 7}, -9, 9}},
                    [](const Scope& s, In in) {
                      return std::vector<Output>{ops::Transpose(s, in[0], {1, 0})};
                    },
                    false});
  for (int axis : {0, 1, -1}) {
    cases->push_back(
        {fmt::format("Concat axis {}", axis),
         {{f, {3, 4, 5}}, {f, {3, 4, 5}}, {f, {3, 4, 5}}},
         [axis](const Scope& s, In in) { return std::vector<Output>{ops::Concat(s, in, axis)}; }});
    cases->push_back({fmt::format("Split axis {}", axis),
                      {{d, {6, 6, 6}}},
                      [axis](const Scope& s, In in) { return ops::Split(s, in[0], axis, 3); }});
  }
  cases->push_back(
      {"Concat of uneven pieces", {{f, {4, 2}}, {f, {4, 7}}}, [](const Scope& s, In in) {
         return std::vector<Output>{ops::Concat(s, in, 1)};
       }});
  cases->push_back({"Slice", {{f, {6, 7, 8}}}, [](const Scope& s, In in) {
                      return std::vector<Output>{ops::Slice(s, in[0], {1, 2, 3}, {4, -1, 2})};
                    }});
  cases->push_back({"Slice int32",
                    {{i32, {9, 4}, -9, 9}},
                    [](const Scope& s, In in) {
                      return std::vector<Output>{ops::Slice(s, in[0], {2, 1}, {3, 3})};
                    },
                    false});
}

// Gather, OneHot, the seeded random ops and the multi-device helpers.
void GatherAndRandomCases(std::vector<Case>* cases) {
  for (DType it : {i32, i64}) {
    cases->push_back(
        {fmt::format("Gather {}", DTypeName(it)),
         {{f, {10, 6}}, {it, {15}, 0, 10}},
         [](const Scope& s, In in) { return std::vector<Output>{ops::Gather(s, in[0], in[1])}; }});
    cases->push_back({fmt::format("OneHot {}", DTypeName(it)),
                      {{it, {12}, -1, 11}},
                      [](const Scope& s, In in) {
                        return std::vector<Output>{ops::OneHot(s, in[0], 10, 2.f, -1.f)};
                      },
                      false});
  }
  cases->push_back(
      {"RandomUniform, RandomNormal, TruncatedNormal (seeded: the same numbers as the CPU)",
       {},
       [](const Scope& s, In) {
         return std::vector<Output>{ops::RandomUniform(s, {100, 30}, DT_FLOAT, 3),
                                    ops::RandomNormal(s, {1000}, DT_DOUBLE, 4),
                                    ops::TruncatedNormal(s, {77, 13}, DT_FLOAT, 5)};
       },
       false,
       1e-5});
  cases->push_back(
      {"WeightedMean of 3",
       {{f, {6, 5}}, {f, {6, 5}}, {f, {6, 5}}},
       [](const Scope& s, In in) {
         std::vector<Output> w = {ops::Const(s, 2.f), ops::Const(s, 1.f), ops::Const(s, 5.f)};
         return std::vector<Output>{ops::WeightedMean(s, in, w)};
       },
       false});
  cases->push_back({"CollectiveAllReduce, a group of one",
                    {{d, {4, 3}}, {d, {7}}},
                    [](const Scope& s, In in) {
                      return ops::CollectiveAllReduce(s, in, ops::Const(s, 3.f), "solo", 1, 0);
                    },
                    false});
  cases->push_back({"BatchSplit", {{f, {7, 3}}}, [](const Scope& s, In in) {
                      return ops::BatchSplit(s, in[0], 3);
                    }});
}

// A shape as the int32 sizes input of a convolution gradient.
std::vector<int32_t> Sizes(const Shape& s) {
  return std::vector<int32_t>(s.dims().begin(), s.dims().end());
}

// Depthwise: filter [3, 3, 4, 2] (channel multiplier 2), so 8 output channels.
void DepthwiseCases(DType t, std::vector<Case>* cases) {
  const Shape dx{2, 7, 6, 4}, df{3, 3, 4, 2}, dy{2, 4, 3, 8};
  const std::vector<int32_t> ds = {1, 2, 2, 1};
  cases->push_back({fmt::format("DepthwiseConv2dNative {}", DTypeName(t)),
                    {{t, dx}, {t, df}},
                    [ds](const Scope& s, In in) {
                      return std::vector<Output>{
                          ops::DepthwiseConv2dNative(s, in[0], in[1], ds, "SAME")};
                    }});
  cases->push_back({fmt::format("DepthwiseConv2dNativeBackpropInput {}", DTypeName(t)),
                    {{t, df}, {t, dy}},
                    [ds, dx](const Scope& s, In in) {
                      return std::vector<Output>{ops::DepthwiseConv2dNativeBackpropInput(
                          s, ops::ConstInt(s, Sizes(dx)), in[0], in[1], ds, "SAME")};
                    }});
  cases->push_back({fmt::format("DepthwiseConv2dNativeBackpropFilter {}", DTypeName(t)),
                    {{t, dx}, {t, dy}},
                    [ds, df](const Scope& s, In in) {
                      return std::vector<Output>{ops::DepthwiseConv2dNativeBackpropFilter(
                          s, in[0], ops::ConstInt(s, Sizes(df)), in[1], ds, "SAME")};
                    }});
  cases->push_back({fmt::format("DepthwiseConv2dNative VALID dilation 2 NCHW {}", DTypeName(t)),
                    {{t, {1, 3, 9, 8}}, {t, {2, 2, 3, 1}}},
                    [](const Scope& s, In in) {
                      return std::vector<Output>{ops::DepthwiseConv2dNative(
                          s, in[0], in[1], {1, 1, 1, 1}, "VALID", {"NCHW", {1, 1, 2, 2}, {}})};
                    }});
}

// Convolutions (ops/nn/conv_ops.cc): each op and its gradient (which builds the other ops of its
// family), float and double, over SAME / VALID / EXPLICIT, strides, dilations and both layouts.
// input_sizes / filter_sizes are int32 constants the GPU kernels read on the host (HostMemory).
void ConvCases(std::vector<Case>* cases) {
  struct ConvConf {
    const char* what;
    Shape x, f, y;  // input (in data_format), filter, output (in data_format)
    std::vector<int32_t> strides;
    const char* padding;
    ops::ConvAttrs attrs;
  };
  const std::vector<ConvConf> conv_confs = {
      {"SAME stride 2", {3, 9, 8, 5}, {3, 3, 5, 6}, {3, 5, 4, 6}, {1, 2, 2, 1}, "SAME", {}},
      {"VALID dilation 2",
       {2, 9, 10, 3},
       {3, 2, 3, 4},
       {2, 5, 8, 4},
       {1, 1, 1, 1},
       "VALID",
       {"NHWC", {1, 2, 2, 1}, {}}},
      {"EXPLICIT NCHW",
       {2, 3, 7, 6},
       {2, 3, 3, 4},
       {2, 4, 5, 3},
       {1, 1, 2, 2},
       "EXPLICIT",
       {"NCHW", {1, 1, 1, 1}, {0, 0, 0, 0, 1, 2, 0, 1}}},
  };
  for (DType t : {f, d}) {
    for (const ConvConf& c : conv_confs) {
      const std::string tag = fmt::format("{} {}", c.what, DTypeName(t));
      cases->push_back({"Conv2D " + tag, {{t, c.x}, {t, c.f}}, [c](const Scope& s, In in) {
                          return std::vector<Output>{
                              ops::Conv2D(s, in[0], in[1], c.strides, c.padding, c.attrs)};
                        }});
      cases->push_back(
          {"Conv2DBackpropInput " + tag, {{t, c.f}, {t, c.y}}, [c](const Scope& s, In in) {
             return std::vector<Output>{ops::Conv2DBackpropInput(
                 s, ops::ConstInt(s, Sizes(c.x)), in[0], in[1], c.strides, c.padding, c.attrs)};
           }});
      cases->push_back(
          {"Conv2DBackpropFilter " + tag, {{t, c.x}, {t, c.y}}, [c](const Scope& s, In in) {
             return std::vector<Output>{ops::Conv2DBackpropFilter(
                 s, in[0], ops::ConstInt(s, Sizes(c.f)), in[1], c.strides, c.padding, c.attrs)};
           }});
    }
    DepthwiseCases(t, cases);
  }
}

// Pooling and fused batch norm (ops/nn/pooling_ops.cc, batch_norm_ops.cc).
// Random inputs have no ties, so MaxPoolGrad's first-maximum rule is not what is compared
// here (tests/ops/pooling_ops_test.cc pins it). The gradients cover MaxPoolGrad, AvgPoolGrad
// (orig_input_shape in host memory) and FusedBatchNormGrad, whose reserve spaces are the
// mean used and 1/sqrt(variance used + epsilon) in both modes (ops/nn/batch_norm_ops.h).
void PoolingAndBatchNormCases(std::vector<Case>* cases) {
  for (DType t : {f, d}) {
    for (bool max : {true, false}) {
      const char* op = max ? "MaxPool" : "AvgPool";
      auto pool = [max](const Scope& s, Output x, const std::vector<int32_t>& k,
                        const std::vector<int32_t>& st, const char* pad, const char* df) {
        return max ? ops::MaxPool(s, x, k, st, pad, df) : ops::AvgPool(s, x, k, st, pad, df);
      };
      cases->push_back(
          {fmt::format("{} 3x3 stride 2 SAME NHWC {}", op, DTypeName(t)),
           {{t, {2, 7, 9, 3}}},
           [pool](const Scope& s, In in) {
             return std::vector<Output>{pool(s, in[0], {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME", "NHWC")};
           }});
      cases->push_back({fmt::format("{} 2x3 stride 1x2 VALID NCHW {}", op, DTypeName(t)),
                        {{t, {2, 6, 5, 8}}},
                        [pool](const Scope& s, In in) {
                          return std::vector<Output>{
                              pool(s, in[0], {1, 1, 2, 3}, {1, 1, 1, 2}, "VALID", "NCHW")};
                        }});
    }
    for (const char* df : {"NHWC", "NCHW"}) {
      for (bool training : {true, false}) {
        const Shape xs = std::string(df) == "NHWC" ? Shape{4, 5, 5, 8} : Shape{4, 8, 5, 5};
        const float factor = training ? 0.25f : 1.f;
        cases->push_back(
            {fmt::format("FusedBatchNorm {} training {} {}", df, training, DTypeName(t)),
             {{t, xs, -2, 3}, {t, {8}, 0.5, 2}, {t, {8}}, {t, {8}}, {t, {8}, 0.5, 2}},
             [df, training, factor](const Scope& s, In in) {
               auto bn = ops::FusedBatchNorm(s, in[0], in[1], in[2], in[3], in[4], 1e-3f, training,
                                             df, factor);
               return std::vector<Output>{bn.y, bn.batch_mean, bn.batch_variance,
                                          bn.reserve_space_1, bn.reserve_space_2};
             },
             true,
             1e-4});
      }
    }
  }
}

// Issue 14: activations, Pad, Dropout (activation_ops.cc, pad_ops.cc, dropout_ops.cc).
// The gradients run Relu6Grad, LeakyReluGrad, SoftplusGrad and PadGrad on the GPU. Dropout's
// gradient is on too: it multiplies by the mask, which the GPU must draw exactly as the CPU
// does (same Philox counters and key for the same seeds and call count).
void ActivationCases(std::vector<Case>* cases) {
  for (DType t : {f, d}) {
    const std::string tn(DTypeName(t));
    cases->push_back({"Relu6 " + tn, {{t, {7, 33}, -2, 8}}, [](const Scope& s, In in) {
                        return std::vector<Output>{ops::Relu6(s, in[0])};
                      }});
    cases->push_back(
        {"LeakyRelu alpha 0.1 " + tn, {{t, {7, 33}, -2, 2}}, [](const Scope& s, In in) {
           return std::vector<Output>{ops::LeakyRelu(s, in[0], 0.1f)};
         }});
    cases->push_back({"Softplus " + tn, {{t, {7, 33}, -30, 30}}, [](const Scope& s, In in) {
                        return std::vector<Output>{ops::Softplus(s, in[0])};
                      }});
    cases->push_back(
        {"Pad NHWC spatial " + tn, {{t, {2, 5, 4, 3}}}, [](const Scope& s, In in) {
           return std::vector<Output>{ops::Pad(s, in[0], {{0, 0}, {1, 2}, {2, 1}, {0, 0}})};
         }});
    cases->push_back({"Pad rank 1 " + tn, {{t, {9}}}, [](const Scope& s, In in) {
                        return std::vector<Output>{ops::Pad(s, in[0], {{3, 0}})};
                      }});
    cases->push_back(
        {"Dropout rate 0.3 (output and mask) " + tn, {{t, {40, 50}}}, [](const Scope& s, In in) {
           Output y = ops::Dropout(s, in[0], 0.3f, 17);
           return std::vector<Output>{y, Output(y.node, 1)};
         }});
  }
  cases->push_back(
      {"Pad int32, int64 paddings",
       {{i32, {3, 4, 5}, -9, 9}},
       [](const Scope& s, In in) {
         Output p = ops::Const(s, Tensor::FromVector<int64_t>({1, 0, 0, 2, 3, 1}, {3, 2}));
         return std::vector<Output>{ops::Pad(s, in[0], p)};
       },
       false});
}
}  // namespace

std::vector<Case> OpCases() {
  std::vector<Case> cases;
  BinaryCases(&cases);
  UnaryCases(&cases);
  ReductionAndMatMulCases(&cases);
  LossCases(&cases);
  ShapeCases(&cases);
  GatherAndRandomCases(&cases);
  ConvCases(&cases);
  PoolingAndBatchNormCases(&cases);
  ActivationCases(&cases);
  return cases;
}

std::vector<TrainCase> TrainCases() {
  return {
      {"GradientDescent", [] { return std::make_unique<train::GradientDescent>(0.1); }},
      {"Momentum", [] { return std::make_unique<train::Momentum>(0.05, 0.9); }},
      {"Momentum nesterov", [] { return std::make_unique<train::Momentum>(0.05, 0.9, true); }},
      {"Adam", [] { return std::make_unique<train::Adam>(0.01); }},
      {"RMSProp", [] { return std::make_unique<train::RMSProp>(0.01, 0.9, 0.5); }},
      {"AdaGrad", [] { return std::make_unique<train::AdaGrad>(0.1); }},
  };
}

}  // namespace pf::conformance
