// The op-conformance harness: every op with a GPU kernel, and its gradient, runs on /gpu:0 and
// on the CPU with the same fresh random inputs; results must agree within each case's stated
// tolerance (relative to the largest CPU magnitude). Ops without a GPU kernel are listed as
// skipped. The coverage checks run in every build, with or without CUDA or a GPU: every
// registered op has a case or a listed exemption, and every GPU kernel (found in the kernel
// registry and, so CPU-only builds check it too, in the ops/*/*_gpu.cc sources) has a case.
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/testing/test_util.h"

namespace pf {
namespace {

struct InputSpec {
  DType dtype;
  Shape shape;
  double lo = -1, hi = 1;  // integers: [lo, hi)
};
using BuildFn = std::function<std::vector<Output>(const Scope&, const std::vector<Output>&)>;
struct Case {
  std::string name;
  std::vector<InputSpec> inputs;
  BuildFn build;
  bool grad = true;   // also compare d(weighted sum of float outputs)/d(float inputs)
  double tol = 1e-5;  // float32; double cases use the same bound
};

Tensor RandomInput(const InputSpec& s, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t(s.dtype, s.shape);
  std::uniform_real_distribution<double> real(s.lo, s.hi);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const double v = real(rng);
    switch (s.dtype) {
      case DT_FLOAT:
        t.data<float>()[i] = static_cast<float>(v);
        break;
      case DT_DOUBLE:
        t.data<double>()[i] = v;
        break;
      case DT_INT32:
        t.data<int32_t>()[i] = static_cast<int32_t>(std::floor(v));
        break;
      case DT_INT64:
        t.data<int64_t>()[i] = static_cast<int64_t>(std::floor(v));
        break;
      case DT_BOOL:
        t.data<bool>()[i] = v > (s.lo + s.hi) / 2;
        break;
      default:
        break;
    }
  }
  return t;
}

bool IsReal(DType t) { return t == DT_FLOAT || t == DT_DOUBLE; }

constexpr char kGpu[] = "/gpu:0";

// The case's graph: placeholders on the CPU, the op (and its gradient) under /gpu:0.
struct Built {
  Graph g;
  std::vector<Output> inputs;
  std::vector<Output> fetches;
  std::vector<std::string> checked_nodes;  // must land on the GPU
};

void Build(const Case& c, Built* b, const char* target = kGpu) {
  Scope root = Scope::Root(&b->g);
  Scope cpu = root.WithDevice("/cpu:0");
  Scope gpu = root.WithDevice(target);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    b->inputs.push_back(ops::Placeholder(cpu.WithOpName(fmt::format("in{}", i)), c.inputs[i].dtype,
                                         c.inputs[i].shape));
  }
  std::vector<Output> outs = c.build(gpu.NewSubScope("op"), b->inputs);
  for (const Output& o : outs) b->checked_nodes.push_back(o.node->name());
  b->fetches = outs;
  if (!c.grad) return;
  std::vector<Output> terms, wrt;
  Scope gs = gpu.NewSubScope("grad");
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!IsReal(outs[i].dtype()) || !outs[i].shape().IsFullyDefined()) continue;
    // A fixed random weight per output element makes every element's gradient distinct.
    Tensor w =
        RandomInput({outs[i].dtype(), outs[i].shape(), 0.5, 1.5}, 100 + static_cast<uint32_t>(i));
    terms.push_back(ops::Sum(gs, ops::Mul(gs, outs[i], ops::Const(gs, w))));
  }
  for (const Output& in : b->inputs) {
    if (IsReal(in.dtype())) wrt.push_back(in);
  }
  if (terms.empty() || wrt.empty()) return;
  Output loss = terms.size() == 1 ? terms[0] : ops::AddN(gs, terms);
  for (const Output& d : Gradients(gs, {loss}, wrt)) {
    if (d.node != nullptr) b->fetches.push_back(d);
  }
}

double MaxAbs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    m = std::max(m, std::abs(t.dtype() == DT_DOUBLE ? t.data<double>()[i] : t.data<float>()[i]));
  }
  return m;
}

// Empty when `got` matches `want` within `tol` (relative to the largest reference magnitude;
// bitwise for integers and bools), else what differs.
std::string Mismatch(const Tensor& want, const Tensor& got, double tol) {
  if (want.dtype() != got.dtype() || want.shape() != got.shape()) {
    return fmt::format("{} {} vs {} {}", DTypeName(want.dtype()), want.shape().ToString(),
                       DTypeName(got.dtype()), got.shape().ToString());
  }
  if (IsReal(want.dtype())) {
    const double diff = testing::MaxAbsDiff(want, got), bound = tol * (1.0 + MaxAbs(want));
    if (diff <= bound) return "";
    return fmt::format("max |diff| {:.3g} > {:.3g}: want {} got {}", diff, bound,
                       want.DebugString(6), got.DebugString(6));
  }
  if (want.BitwiseEqual(got)) return "";
  return fmt::format("not bitwise equal: want {} got {}", want.DebugString(6), got.DebugString(6));
}

std::vector<Case> OpCases() {
  const DType f = DT_FLOAT, d = DT_DOUBLE, i32 = DT_INT32, i64 = DT_INT64;
  std::vector<Case> cases;
  using In = const std::vector<Output>&;
  auto binary = [&](const char* name, Output (*fn)(const Scope&, Output, Output), DType t,
                    double lo, double hi) {
    // Broadcasting [4,1,5] against [3,1], and same shapes (the vectorised path).
    cases.push_back(
        {fmt::format("{} broadcast {}", name, DTypeName(t)),
         {{t, {4, 1, 5}, lo, hi}, {t, {3, 1}, lo, hi}},
         [fn](const Scope& s, In in) { return std::vector<Output>{fn(s, in[0], in[1])}; }});
    cases.push_back(
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
  }
  binary("Sub", ops::Sub, i64, -50, 50);
  binary("Minimum", ops::Minimum, i32, -50, 50);
  binary("Equal", ops::Equal, f, -1, 1);
  binary("Less", ops::Less, f, -1, 1);
  binary("Greater", ops::Greater, d, -1, 1);
  auto unary = [&](const char* name, Output (*fn)(const Scope&, Output), double lo, double hi,
                   DType t = DT_FLOAT) {
    cases.push_back({fmt::format("{} {}", name, DTypeName(t)),
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
  cases.push_back({"Floor",
                   {{f, {5, 9}, -3, 3}},
                   [](const Scope& s, In in) { return std::vector<Output>{ops::Floor(s, in[0])}; },
                   false});
  for (auto [from, to_binding] : std::vector<std::pair<DType, DType>>{
           {f, i32}, {i32, f}, {f, d}, {i64, d}, {DT_BOOL, f}, {f, DT_BOOL}}) {
    const DType to = to_binding;  // clang 14 (sanitizer builds) cannot capture a binding
    cases.push_back(
        {fmt::format("Cast {} to {}", DTypeName(from), DTypeName(to)),
         {{from, {6, 7}, -5, 5}},
         [to](const Scope& s, In in) { return std::vector<Output>{ops::Cast(s, in[0], to)}; },
         false});
  }
  cases.push_back({"BiasAdd", {{f, {16, 24}}, {f, {24}}}, [](const Scope& s, In in) {
                     return std::vector<Output>{ops::BiasAdd(s, in[0], in[1])};
                   }});
  cases.push_back({"AddN of 10", std::vector<InputSpec>(10, {f, {5, 40}}),
                   [](const Scope& s, In in) { return std::vector<Output>{ops::AddN(s, in)}; }});
  const std::vector<std::vector<int32_t>> axes_list = {{}, {0}, {1}, {2}, {0, 2}, {-1}};
  for (const auto& axes : axes_list) {
    for (bool keep : {false, true}) {
      const std::string tag = fmt::format("axes [{}] keep_dims {}", fmt::join(axes, ","), keep);
      cases.push_back({"Sum " + tag, {{f, {6, 50, 7}}}, [axes, keep](const Scope& s, In in) {
                         return std::vector<Output>{ops::Sum(s, in[0], axes, keep)};
                       }});
      cases.push_back({"Mean " + tag, {{d, {6, 50, 7}}}, [axes, keep](const Scope& s, In in) {
                         return std::vector<Output>{ops::Mean(s, in[0], axes, keep)};
                       }});
      cases.push_back({"Max " + tag, {{f, {6, 50, 7}}}, [axes, keep](const Scope& s, In in) {
                         return std::vector<Output>{ops::Max(s, in[0], axes, keep)};
                       }});
      cases.push_back({"Min " + tag,
                       {{i32, {6, 50, 7}, -1000, 1000}},
                       [axes, keep](const Scope& s, In in) {
                         return std::vector<Output>{ops::Min(s, in[0], axes, keep)};
                       },
                       false});
    }
  }
  cases.push_back(
      {"Mean int64 (integer division)",
       {{i64, {3, 7}, -100, 100}},
       [](const Scope& s, In in) { return std::vector<Output>{ops::Mean(s, in[0], {1})}; },
       false});
  cases.push_back(
      {"Sum of a large row",
       {{f, {2, 100000}}},
       [](const Scope& s, In in) { return std::vector<Output>{ops::Sum(s, in[0], {1})}; },
       true,
       1e-4});
  for (int axis : {0, 1, -1}) {
    cases.push_back({fmt::format("ArgMax axis {}", axis),
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
        cases.push_back({fmt::format("MatMul ta={} tb={} {}", ta, tb, DTypeName(t)),
                         {{t, a}, {t, b}},
                         [ta, tb](const Scope& s, In in) {
                           return std::vector<Output>{ops::MatMul(s, in[0], in[1], ta, tb)};
                         }});
      }
    }
  }
  cases.push_back(
      {"MatMul 512x600x2000 (seed 000's first layer)",
       {{f, {2000, 600}}, {f, {600, 512}}},
       [](const Scope& s, In in) { return std::vector<Output>{ops::MatMul(s, in[0], in[1])}; },
       true,
       1e-4});
  for (DType t : {f, d}) {
    cases.push_back(
        {fmt::format("Softmax {}", DTypeName(t)),
         {{t, {11, 10}, -5, 5}},
         [](const Scope& s, In in) { return std::vector<Output>{ops::Softmax(s, in[0])}; }});
    cases.push_back(
        {fmt::format("LogSoftmax {}", DTypeName(t)),
         {{t, {11, 300}, -5, 5}},
         [](const Scope& s, In in) { return std::vector<Output>{ops::LogSoftmax(s, in[0])}; }});
    cases.push_back({fmt::format("SoftmaxCrossEntropyWithLogits {}", DTypeName(t)),
                     {{t, {12, 10}, -5, 5}, {t, {12, 10}, 0, 1}},
                     [](const Scope& s, In in) {
                       auto [loss, backprop] = ops::SoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
                       return std::vector<Output>{loss, backprop};
                     }});
    for (DType it : {i32, i64}) {
      cases.push_back(
          {fmt::format("SparseSoftmaxCrossEntropyWithLogits {} {}", DTypeName(t), DTypeName(it)),
           {{t, {50, 10}, -5, 5}, {it, {50}, 0, 10}},
           [](const Scope& s, In in) {
             auto [loss, backprop] = ops::SparseSoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
             return std::vector<Output>{loss, backprop};
           }});
    }
    cases.push_back({fmt::format("SigmoidCrossEntropyWithLogits {}", DTypeName(t)),
                     {{t, {9, 8}, -30, 30}, {t, {9, 8}, 0, 1}},
                     [](const Scope& s, In in) {
                       return std::vector<Output>{
                           ops::SigmoidCrossEntropyWithLogits(s, in[0], in[1])};
                     }});
    cases.push_back({fmt::format("MeanSquaredError same shape {}", DTypeName(t)),
                     {{t, {30, 4}}, {t, {30, 4}}},
                     [](const Scope& s, In in) {
                       return std::vector<Output>{ops::MeanSquaredError(s, in[0], in[1])};
                     }});
    cases.push_back({fmt::format("MeanSquaredError [N,1] vs [N,C] {}", DTypeName(t)),
                     {{t, {40, 1}}, {t, {40, 60}}},
                     [](const Scope& s, In in) {
                       return std::vector<Output>{ops::MeanSquaredError(s, in[0], in[1])};
                     }});
    cases.push_back(
        {fmt::format("L2Loss {}", DTypeName(t)), {{t, {17, 3}}}, [](const Scope& s, In in) {
           return std::vector<Output>{ops::L2Loss(s, in[0])};
         }});
  }
  cases.push_back({"Fill, ZerosLike, OnesLike",
                   {{f, {}}, {i64, {3, 4}, -9, 9}},
                   [](const Scope& s, In in) {
                     return std::vector<Output>{ops::Fill(s, ops::ConstInt(s, {2, 5}), in[0]),
                                                ops::ZerosLike(s, in[1]), ops::OnesLike(s, in[1])};
                   },
                   false});
  cases.push_back({"Identity, StopGradient, Reshape, ExpandDims, Squeeze, Shape, Const",
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
  cases.push_back({"Transpose [2,3,4] perm 2,0,1", {{f, {2, 3, 4}}}, [](const Scope& s, In in) {
                     return std::vector<Output>{ops::Transpose(s, in[0], {2, 0, 1})};
                   }});
  cases.push_back({"Transpose int64 [5,7]",
                   {{i64, {5, 7}, -9, 9}},
                   [](const Scope& s, In in) {
                     return std::vector<Output>{ops::Transpose(s, in[0], {1, 0})};
                   },
                   false});
  for (int axis : {0, 1, -1}) {
    cases.push_back(
        {fmt::format("Concat axis {}", axis),
         {{f, {3, 4, 5}}, {f, {3, 4, 5}}, {f, {3, 4, 5}}},
         [axis](const Scope& s, In in) { return std::vector<Output>{ops::Concat(s, in, axis)}; }});
    cases.push_back({fmt::format("Split axis {}", axis),
                     {{d, {6, 6, 6}}},
                     [axis](const Scope& s, In in) { return ops::Split(s, in[0], axis, 3); }});
  }
  cases.push_back(
      {"Concat of uneven pieces", {{f, {4, 2}}, {f, {4, 7}}}, [](const Scope& s, In in) {
         return std::vector<Output>{ops::Concat(s, in, 1)};
       }});
  cases.push_back({"Slice", {{f, {6, 7, 8}}}, [](const Scope& s, In in) {
                     return std::vector<Output>{ops::Slice(s, in[0], {1, 2, 3}, {4, -1, 2})};
                   }});
  cases.push_back({"Slice int32",
                   {{i32, {9, 4}, -9, 9}},
                   [](const Scope& s, In in) {
                     return std::vector<Output>{ops::Slice(s, in[0], {2, 1}, {3, 3})};
                   },
                   false});
  for (DType it : {i32, i64}) {
    cases.push_back(
        {fmt::format("Gather {}", DTypeName(it)),
         {{f, {10, 6}}, {it, {15}, 0, 10}},
         [](const Scope& s, In in) { return std::vector<Output>{ops::Gather(s, in[0], in[1])}; }});
    cases.push_back({fmt::format("OneHot {}", DTypeName(it)),
                     {{it, {12}, -1, 11}},
                     [](const Scope& s, In in) {
                       return std::vector<Output>{ops::OneHot(s, in[0], 10, 2.f, -1.f)};
                     },
                     false});
  }
  cases.push_back(
      {"RandomUniform, RandomNormal, TruncatedNormal (seeded: the same numbers as the CPU)",
       {},
       [](const Scope& s, In) {
         return std::vector<Output>{ops::RandomUniform(s, {100, 30}, DT_FLOAT, 3),
                                    ops::RandomNormal(s, {1000}, DT_DOUBLE, 4),
                                    ops::TruncatedNormal(s, {77, 13}, DT_FLOAT, 5)};
       },
       false,
       1e-5});
  cases.push_back(
      {"WeightedMean of 3",
       {{f, {6, 5}}, {f, {6, 5}}, {f, {6, 5}}},
       [](const Scope& s, In in) {
         std::vector<Output> w = {ops::Const(s, 2.f), ops::Const(s, 1.f), ops::Const(s, 5.f)};
         return std::vector<Output>{ops::WeightedMean(s, in, w)};
       },
       false});
  cases.push_back({"CollectiveAllReduce, a group of one",
                   {{d, {4, 3}}, {d, {7}}},
                   [](const Scope& s, In in) {
                     return ops::CollectiveAllReduce(s, in, ops::Const(s, 3.f), "solo", 1, 0);
                   },
                   false});
  cases.push_back({"BatchSplit", {{f, {7, 3}}}, [](const Scope& s, In in) {
                     return ops::BatchSplit(s, in[0], 3);
                   }});
  // ---- convolutions (ops/nn/conv_ops.cc): each op and its gradient (which builds the other
  // ops of its family), float and double, over SAME / VALID / EXPLICIT, strides, dilations and
  // both layouts. input_sizes / filter_sizes are int32 constants the GPU kernels read on the
  // host (HostMemory). ----
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
  auto sizes = [](const Shape& s) {
    return std::vector<int32_t>(s.dims().begin(), s.dims().end());
  };
  for (DType t : {f, d}) {
    for (const ConvConf& c : conv_confs) {
      const std::string tag = fmt::format("{} {}", c.what, DTypeName(t));
      cases.push_back({"Conv2D " + tag, {{t, c.x}, {t, c.f}}, [c](const Scope& s, In in) {
                         return std::vector<Output>{
                             ops::Conv2D(s, in[0], in[1], c.strides, c.padding, c.attrs)};
                       }});
      cases.push_back(
          {"Conv2DBackpropInput " + tag, {{t, c.f}, {t, c.y}}, [c, sizes](const Scope& s, In in) {
             return std::vector<Output>{ops::Conv2DBackpropInput(
                 s, ops::ConstInt(s, sizes(c.x)), in[0], in[1], c.strides, c.padding, c.attrs)};
           }});
      cases.push_back(
          {"Conv2DBackpropFilter " + tag, {{t, c.x}, {t, c.y}}, [c, sizes](const Scope& s, In in) {
             return std::vector<Output>{ops::Conv2DBackpropFilter(
                 s, in[0], ops::ConstInt(s, sizes(c.f)), in[1], c.strides, c.padding, c.attrs)};
           }});
    }
    // Depthwise: filter [3, 3, 4, 2] (channel multiplier 2), so 8 output channels.
    const Shape dx{2, 7, 6, 4}, df{3, 3, 4, 2}, dy{2, 4, 3, 8};
    const std::vector<int32_t> ds = {1, 2, 2, 1};
    cases.push_back({fmt::format("DepthwiseConv2dNative {}", DTypeName(t)),
                     {{t, dx}, {t, df}},
                     [ds](const Scope& s, In in) {
                       return std::vector<Output>{
                           ops::DepthwiseConv2dNative(s, in[0], in[1], ds, "SAME")};
                     }});
    cases.push_back({fmt::format("DepthwiseConv2dNativeBackpropInput {}", DTypeName(t)),
                     {{t, df}, {t, dy}},
                     [ds, dx, sizes](const Scope& s, In in) {
                       return std::vector<Output>{ops::DepthwiseConv2dNativeBackpropInput(
                           s, ops::ConstInt(s, sizes(dx)), in[0], in[1], ds, "SAME")};
                     }});
    cases.push_back({fmt::format("DepthwiseConv2dNativeBackpropFilter {}", DTypeName(t)),
                     {{t, dx}, {t, dy}},
                     [ds, df, sizes](const Scope& s, In in) {
                       return std::vector<Output>{ops::DepthwiseConv2dNativeBackpropFilter(
                           s, in[0], ops::ConstInt(s, sizes(df)), in[1], ds, "SAME")};
                     }});
    cases.push_back({fmt::format("DepthwiseConv2dNative VALID dilation 2 NCHW {}", DTypeName(t)),
                     {{t, {1, 3, 9, 8}}, {t, {2, 2, 3, 1}}},
                     [](const Scope& s, In in) {
                       return std::vector<Output>{ops::DepthwiseConv2dNative(
                           s, in[0], in[1], {1, 1, 1, 1}, "VALID", {"NCHW", {1, 1, 2, 2}, {}})};
                     }});
  }
  // ---- end of convolutions ----
  // ---- pooling and fused batch norm (ops/nn/pooling_ops.cc, batch_norm_ops.cc) ----
  // Random inputs have no ties, so MaxPoolGrad's first-maximum rule is not what is compared
  // here (tests/ops/pooling_ops_test.cc pins it). The gradients cover MaxPoolGrad, AvgPoolGrad
  // (orig_input_shape in host memory) and FusedBatchNormGrad, whose reserve spaces are the
  // mean used and 1/sqrt(variance used + epsilon) in both modes (ops/nn/batch_norm_ops.h).
  for (DType t : {f, d}) {
    for (bool max : {true, false}) {
      const char* op = max ? "MaxPool" : "AvgPool";
      auto pool = [max](const Scope& s, Output x, const std::vector<int32_t>& k,
                        const std::vector<int32_t>& st, const char* pad, const char* df) {
        return max ? ops::MaxPool(s, x, k, st, pad, df) : ops::AvgPool(s, x, k, st, pad, df);
      };
      cases.push_back(
          {fmt::format("{} 3x3 stride 2 SAME NHWC {}", op, DTypeName(t)),
           {{t, {2, 7, 9, 3}}},
           [pool](const Scope& s, In in) {
             return std::vector<Output>{pool(s, in[0], {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME", "NHWC")};
           }});
      cases.push_back({fmt::format("{} 2x3 stride 1x2 VALID NCHW {}", op, DTypeName(t)),
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
        cases.push_back(
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
  // ---- issue 14, activations, Pad, Dropout (activation_ops.cc, pad_ops.cc, dropout_ops.cc) ----
  // The gradients run Relu6Grad, LeakyReluGrad, SoftplusGrad and PadGrad on the GPU. Dropout's
  // gradient is on too: it multiplies by the mask, which the GPU must draw exactly as the CPU
  // does (same Philox counters and key for the same seeds and call count).
  for (DType t : {f, d}) {
    const std::string tn(DTypeName(t));
    cases.push_back({"Relu6 " + tn, {{t, {7, 33}, -2, 8}}, [](const Scope& s, In in) {
                       return std::vector<Output>{ops::Relu6(s, in[0])};
                     }});
    cases.push_back({"LeakyRelu alpha 0.1 " + tn, {{t, {7, 33}, -2, 2}}, [](const Scope& s, In in) {
                       return std::vector<Output>{ops::LeakyRelu(s, in[0], 0.1f)};
                     }});
    cases.push_back({"Softplus " + tn, {{t, {7, 33}, -30, 30}}, [](const Scope& s, In in) {
                       return std::vector<Output>{ops::Softplus(s, in[0])};
                     }});
    cases.push_back(
        {"Pad NHWC spatial " + tn, {{t, {2, 5, 4, 3}}}, [](const Scope& s, In in) {
           return std::vector<Output>{ops::Pad(s, in[0], {{0, 0}, {1, 2}, {2, 1}, {0, 0}})};
         }});
    cases.push_back({"Pad rank 1 " + tn, {{t, {9}}}, [](const Scope& s, In in) {
                       return std::vector<Output>{ops::Pad(s, in[0], {{3, 0}})};
                     }});
    cases.push_back(
        {"Dropout rate 0.3 (output and mask) " + tn, {{t, {40, 50}}}, [](const Scope& s, In in) {
           Output y = ops::Dropout(s, in[0], 0.3f, 17);
           return std::vector<Output>{y, Output(y.node, 1)};
         }});
  }
  cases.push_back(
      {"Pad int32, int64 paddings",
       {{i32, {3, 4, 5}, -9, 9}},
       [](const Scope& s, In in) {
         Output p = ops::Const(s, Tensor::FromVector<int64_t>({1, 0, 0, 2, 3, 1}, {3, 2}));
         return std::vector<Output>{ops::Pad(s, in[0], p)};
       },
       false});
  return cases;
}

// Optimizers and variables: a few updates of a [40, 30] variable towards a target.
struct TrainCase {
  std::string name;
  std::function<std::unique_ptr<train::Optimizer>()> make;
};
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

// Builds variable + loss + update under `dev`; returns {variable value, loss}, the step and init.
struct BuiltTrain {
  Graph g;
  Output var, loss, average;
  Operation step, init, add_one;
};
void BuildTrain(const TrainCase& c, const char* dev, BuiltTrain* b) {
  Scope root = Scope::Root(&b->g);
  Scope s = root.WithDevice(dev);
  Variable w = GetVariable(s, "w", {40, 30}, init::Constant(0.25));
  Output target = ops::Const(s, testing::RandomTensor({40, 30}, 7));
  b->loss = ops::Mean(s, ops::Square(s, ops::Sub(s, w.value(), target)));
  // A moving average of the variable after each update (ApplyMovingAverage).
  Operation minimize = c.make()->Minimize(s, b->loss);
  train::ExponentialMovingAverage ema(0.9);
  Operation average = ema.Apply(s.WithControlDependencies({minimize}), {w});
  b->step = ops::NoOp(s.WithControlDependencies({minimize, average}));
  b->average = ema.Average(w).value();
  b->var = w.value();
  b->init = GlobalVariablesInitializer(root);
  // AssignAdd and AssignSub round trip: +1 then -1 leaves the variable as it was.
  Output one = ops::OnesLike(s, w.value());
  b->add_one = Operation(ops::AssignSub(s, ops::AssignAdd(s, w.ref(), one), one).node);
}

SessionOptions CpuOnly() {
  SessionOptions o;
  o.allow_soft_placement = true;
  o.device_count["GPU"] = 0;
  return o;
}

// Where the cases run, against the CPU's results: /gpu:0, or /cpu:1 to run the harness itself
// (and every op across a device boundary) in CPU-only builds.
struct Target {
  const char* device;  // what the cases request
  const char* placed;  // what their nodes' assigned device names must contain
  SessionOptions options;
};
Target GpuTarget() {
  SessionOptions o;
  o.allow_soft_placement = true;
  return {kGpu, "GPU:0", o};
}
Target SecondCpuTarget() {
  SessionOptions o = CpuOnly();
  o.device_count["CPU"] = 2;
  return {"/cpu:1", "CPU:1", o};
}

// The outcome of the cases: each runs on its own; a failure (a mismatch, a misplaced node, or
// an error from either session) is recorded and the next case runs.
struct Report {
  int cases = 0, compared = 0;
  std::vector<std::string> failures;   // "<case>: <what went wrong>", one per problem
  std::vector<std::string> fell_back;  // nodes that asked for the target and ran elsewhere
  std::set<std::string> failing_cases;
  void Fail(const std::string& name, const std::string& what) {
    failures.push_back(name + ": " + what);
    failing_cases.insert(name);
  }
  // One line per failing case on stdout (a GPU run's log shows every defect at once), then
  // the test's verdict.
  void Check(const char* what) const {
    for (const std::string& f : failures) fmt::print("conformance FAILED: {}\n", f);
    INFO(what << ": " << failing_cases.size() << " of " << cases << " cases failed:\n"
              << fmt::format("{}", fmt::join(failures, "\n")));
    CHECK(failures.empty());
    WARN(what << ": " << cases << " cases, " << compared << " tensors compared; nodes that ran "
              << "on another device than the one asked for: "
              << (fell_back.empty() ? std::string("none")
                                    : fmt::format("{}", fmt::join(fell_back, "; "))));
  }
};

// Runs `body`, turning any exception into a recorded failure of case `name`.
template <typename Fn>
void Isolated(Report* r, const std::string& name, Fn&& body) {
  ++r->cases;
  try {
    body();
  } catch (const std::exception& e) {
    r->Fail(name, e.what());
  }
}

void RunOpCase(const Case& c, const Target& t, uint32_t* seed, Report* r) {
  Built b;
  Build(c, &b, t.device);
  FeedDict feeds;
  for (size_t i = 0; i < b.inputs.size(); ++i)
    feeds.emplace_back(b.inputs[i], RandomInput(c.inputs[i], (*seed)++));
  Session cpu(b.g, CpuOnly());
  Session target(b.g, t.options);
  std::vector<Tensor> want = cpu.Run(feeds, b.fetches);
  std::vector<Tensor> got = target.Run(feeds, b.fetches);
  auto where = target.DevicePlacement();
  for (const std::string& n : b.checked_nodes) {
    if (where.at(n).find(t.placed) == std::string::npos)
      r->Fail(c.name, fmt::format("node {} ran on {}, not {}", n, where.at(n), t.device));
  }
  const std::string asked = DeviceName::ParseOrError(t.device).ValueOrThrow().ToString();
  for (const auto& [node, dev] : where) {
    const Node* n = b.g.FindNode(node);
    if (n && !n->requested_device().empty() &&
        DeviceName::ParseOrError(n->requested_device()).ValueOrThrow().ToString() == asked &&
        dev.find(t.placed) == std::string::npos) {
      r->fell_back.push_back(fmt::format("{} ({})", n->op(), c.name));
    }
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string m = Mismatch(want[i], got[i], c.tol);
    if (!m.empty()) r->Fail(c.name, fmt::format("fetch {} ({}): {}", i, b.fetches[i].name(), m));
    ++r->compared;
  }
}

// Five optimizer steps, a moving average, then an AssignAdd/AssignSub chain, on the CPU and on
// the target.
void RunTrainCase(const TrainCase& c, const Target& t, Report* r) {
  const std::string name = "optimizer " + c.name;
  std::vector<Tensor> result[2];
  for (int k = 0; k < 2; ++k) {
    BuiltTrain b;
    BuildTrain(c, t.device, &b);
    Session sess(b.g, k == 0 ? CpuOnly() : t.options);
    sess.Run({}, {}, {b.init});
    for (int step = 0; step < 5; ++step) sess.Run({}, {}, {b.step});
    sess.Run({}, {}, {b.add_one});
    result[k] = sess.Run({b.var, b.loss, b.average});
    const std::string w = sess.DevicePlacement().at("w");
    if (k == 1 && w.find(t.placed) == std::string::npos)
      r->Fail(name, fmt::format("variable w ran on {}, not {}", w, t.device));
  }
  const char* what[] = {"variable", "loss", "moving average"};
  for (int i = 0; i < 3; ++i) {
    const std::string m = Mismatch(result[0][i], result[1][i], 1e-5);
    if (!m.empty()) r->Fail(name, fmt::format("{}: {}", what[i], m));
    ++r->compared;
  }
}

Report RunOpCases(const Target& t) {
  Report r;
  uint32_t seed = 1;
  for (const Case& c : OpCases()) Isolated(&r, c.name, [&] { RunOpCase(c, t, &seed, &r); });
  return r;
}
Report RunTrainCases(const Target& t) {
  Report r;
  for (const TrainCase& c : TrainCases())
    Isolated(&r, "optimizer " + c.name, [&] { RunTrainCase(c, t, &r); });
  return r;
}

// Ops with no conformance case, each with the reason. Everything else registered must have a
// case, with or without CUDA: a new op fails the coverage test until it gets one (and, when it
// has a GPU kernel, until that kernel is compared against the CPU) or is listed here. Ops whose
// name starts with "Test" are registered by the executor and placer tests themselves.
const std::map<std::string, std::string>& ExemptOps() {
  static const char kCpuFusion[] =
      "CPU only: the remapper fuses on CPU partitions only (executor/remapper.h)";
  static const auto* exempt = [] {
    auto* m = new std::map<std::string, std::string>{
        {"_Send", "inserted by the partitioner on every cross-device edge of every GPU case"},
        {"_Recv", "inserted by the partitioner on every cross-device edge of every GPU case"},
        {"_Arg", "carries each case's fed inputs into the GPU partition"},
        {"Placeholder", "the cases' inputs; its kernel only reports a missing feed"},
        // Debugging ops read their tensors on the host; soft placement runs them on the CPU.
        {"CheckNumerics", "CPU only: a debugging check (ops/debug/debug_ops.cc, docs/api.md)"},
        {"Print", "CPU only: writes to stderr (ops/debug/debug_ops.cc, docs/api.md)"},
        {"_FusedMatMul", kCpuFusion},
        {"_FusedApplyGradientDescent", kCpuFusion},
        {"_FusedApplyMomentum", kCpuFusion},
        {"_FusedApplyAdam", kCpuFusion},
        {"_FusedApplyRMSProp", kCpuFusion},
        {"_FusedApplyAdagrad", kCpuFusion},
        // The input pipeline's ops: host-side iterator state (data/iterator_ops.h).
        {"MakeIterator", "CPU only: (re)starts a host-side input pipeline (data/iterator_ops.h)"},
        {"IteratorGetNext",
         "CPU only: the input pipeline's elements are host tensors (data/iterator_ops.h)"},
        // String inputs live in host memory (DT_STRING): parsing ops are CPU kernels.
        {"DecodeRaw", "CPU only: its input is DT_STRING (ops/parse/decode_ops.cc)"},
    };
#ifdef PF_WITH_PROTOBUF  // these ops exist only in builds with protobuf
    m->insert({
        {"ParseExampleDense", "CPU only: parses DT_STRING tf.Examples (ops/parse/)"},
        {"ParseExampleVarLen", "CPU only: parses DT_STRING tf.Examples (ops/parse/)"},
        // Summaries serialize protos into DT_STRING scalars, host memory (ops/summary/).
        {"ScalarSummary", "CPU only: its output is a DT_STRING Summary proto"},
        {"HistogramSummary", "CPU only: its output is a DT_STRING Summary proto"},
        {"ImageSummary", "CPU only: encodes PNGs into a DT_STRING Summary proto"},
        {"MergeSummary", "CPU only: joins DT_STRING Summary protos"},
    });
#endif
    // Shared queues and accumulators: host-side state of sync replicas on the ps tasks' CPUs
    // (docs/distributed.md); they have no GPU kernel.
    for (const char* op :
         {"QueueEnqueueMany", "QueueDequeue", "QueueSize", "AccumulatorApplyGradient",
          "AccumulatorTakeGradient", "AccumulatorSetGlobalStep", "AccumulatorNumAccumulated",
          "AccumulatorNumDropped"}) {
      (*m)[op] = "CPU only: shared host state of sync replicas (ops/state/data_flow_ops.cc)";
    }
    return m;
  }();
  return *exempt;
}
bool IsExempt(const std::string& op) {
  return ExemptOps().count(op) > 0 || op.rfind("Test", 0) == 0;
}

// The ops the cases build under /gpu:0 (the op graphs, their gradients, the optimizer graphs).
std::set<std::string> CoveredOps() {
  std::set<std::string> covered;
  auto collect = [&](const Graph& g) {
    for (const Node* n : g.nodes()) {
      if (n->requested_device().find("GPU") != std::string::npos ||
          n->requested_device().find("gpu") != std::string::npos) {
        covered.insert(n->op());
      }
    }
  };
  for (const Case& c : OpCases()) {
    Built b;
    Build(c, &b);
    collect(b.g);
  }
  for (const TrainCase& c : TrainCases()) {
    BuiltTrain b;
    BuildTrain(c, kGpu, &b);
    collect(b.g);
  }
  return covered;
}

std::set<std::string> OpsWithGpuKernels() {
  std::set<std::string> out;
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    for (const KernelDef* k : KernelRegistry::Global()->KernelsForOp(op)) {
      if (k->device_type() == kDeviceGpu) out.insert(op);
    }
  }
  return out;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The ops the source tree registers GPU kernels for, read from the files rather than from the
// kernel registry so that a CPU-only build checks them too: every registered op named by a
// string literal in an ops/<family>/*_gpu.cc, and every KernelDef("Op", kDeviceGpu) elsewhere
// under ops/ (the GPU kernels that reuse a CPU kernel class).
std::set<std::string> OpsWithGpuKernelsInSources() {
  const std::vector<std::string> ops = OpRegistry::Global()->ListOps();
  const std::set<std::string> registered(ops.begin(), ops.end());
  const std::regex literal("\"(\\w+)\"");
  const std::regex gpu_kernel_def("KernelDef\\(\\s*\"(\\w+)\"\\s*,\\s*kDeviceGpu");
  std::set<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::filesystem::path(PF_SOURCE_DIR) / "ops")) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || !name.ends_with(".cc")) continue;
    const std::string text = ReadFile(entry.path());
    const bool gpu_file = name.ends_with("_gpu.cc");
    for (std::sregex_iterator it(text.begin(), text.end(), gpu_file ? literal : gpu_kernel_def),
         end;
         it != end; ++it) {
      if (registered.count((*it)[1].str())) out.insert((*it)[1].str());
    }
  }
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  return v.empty() ? "none" : fmt::format("{}", fmt::join(v, ", "));
}

TEST_CASE("Every op has a GPU conformance case or a listed exemption", "[ops][conformance]") {
  const std::set<std::string> covered = CoveredOps();
  std::vector<std::string> missing, stale;
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    if (!covered.count(op) && !IsExempt(op)) missing.push_back(op);
  }
  for (const auto& [op, why] : ExemptOps()) {
    if (OpRegistry::Global()->Find(op) == nullptr || covered.count(op)) stale.push_back(op);
  }
  INFO(
      "Ops without a conformance case (add one to OpCases() or TrainCases(), or an exemption "
      "with its reason to ExemptOps()): "
      << Join(missing));
  CHECK(missing.empty());
  INFO("Exemptions for ops that are not registered or now have a case: " << Join(stale));
  CHECK(stale.empty());
  WARN(OpCases().size() << " op cases, " << TrainCases().size() << " optimizer cases cover "
                        << covered.size() << " ops");
}

TEST_CASE("Every GPU kernel has a conformance case", "[ops][conformance][backend_kernels]") {
  const std::set<std::string> covered = CoveredOps();
  const std::set<std::string> in_sources = OpsWithGpuKernelsInSources();
  // The scan must see the tree: PF_SOURCE_DIR is this checkout, with GPU kernels for most ops.
  REQUIRE(in_sources.size() >= 50);
  std::set<std::string> gpu_ops = in_sources;
  // The registry holds GPU kernels where the CUDA backend is loaded: with a driver, or forced
  // (ctest gpu_kernels_match_sources sets PF_CUDA_BACKEND=1 in every CUDA build).
  const GpuBackendLoad::State backend = LoadGpuBackend().state;
  if (backend == GpuBackendLoad::State::kLoaded || backend == GpuBackendLoad::State::kLinked) {
    // The tests' own Test* ops (a GPU fault kernel) are registered by tests, not the sources.
    std::set<std::string> registered;
    for (const std::string& op : OpsWithGpuKernels()) {
      if (op.rfind("Test", 0) != 0) registered.insert(op);
    }
    // The scan and the registry agree where both exist, so the scan is trusted without CUDA.
    std::vector<std::string> only_registered, only_scanned;
    std::set_difference(registered.begin(), registered.end(), in_sources.begin(), in_sources.end(),
                        std::back_inserter(only_registered));
    std::set_difference(in_sources.begin(), in_sources.end(), registered.begin(), registered.end(),
                        std::back_inserter(only_scanned));
    INFO("GPU kernels the source scan missed: " << Join(only_registered));
    CHECK(only_registered.empty());
    INFO("Ops the source scan found that have no GPU kernel: " << Join(only_scanned));
    CHECK(only_scanned.empty());
    gpu_ops.insert(registered.begin(), registered.end());
  }
  std::vector<std::string> missing, without_gpu;
  for (const std::string& op : gpu_ops) {
    if (!covered.count(op) && !IsExempt(op)) missing.push_back(op);
  }
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    if (!gpu_ops.count(op) && !IsExempt(op)) without_gpu.push_back(op);
  }
  INFO("GPU kernels without a conformance case: " << Join(missing));
  CHECK(missing.empty());
  // Reported, not failed: these run on the CPU (soft placement) when asked for a GPU.
  WARN(gpu_ops.size() << " ops with GPU kernels; ops without one: " << Join(without_gpu));
}

TEST_CASE("GPU conformance: every op and its gradient match the CPU", "[gpu][conformance]") {
  PF_REQUIRE_GPU();
  RunOpCases(GpuTarget()).Check("GPU op cases");
}

TEST_CASE("GPU conformance: optimizers and variable updates match the CPU", "[gpu][conformance]") {
  PF_REQUIRE_GPU();
  RunTrainCases(GpuTarget()).Check("GPU optimizer cases");
}

// The same harness with /cpu:1 as the target, in every build: it runs here what the GPU run
// runs (each op behind a Send/Recv pair, the optimizers and the chained variable updates), so
// the harness and the cases are known to work before a GPU is lent.
TEST_CASE("Conformance harness: every case on a second CPU device matches /cpu:0",
          "[ops][conformance][harness]") {
  RunOpCases(SecondCpuTarget()).Check("op cases on /cpu:1");
  RunTrainCases(SecondCpuTarget()).Check("optimizer cases on /cpu:1");
}

// A failing case does not stop the others: an op case whose graph fails at run time is
// recorded with its error, and the cases after it still run and pass.
TEST_CASE("Conformance harness: a failing case is recorded and the next cases still run",
          "[ops][conformance][harness]") {
  const Target t = SecondCpuTarget();
  Report r;
  uint32_t seed = 1;
  Case bad{"MatMul mismatched inner dimensions",
           {{DT_FLOAT, {2, 3}}, {DT_FLOAT, {-1, 2}}},
           [](const Scope& s, const std::vector<Output>& in) {
             return std::vector<Output>{ops::MatMul(s, in[0], in[1])};
           },
           false};
  bad.inputs[1].shape = Shape({4, 2});  // fed as [4,2]: fails in both sessions at run time
  std::vector<Case> cases = {bad, OpCases()[0], bad, OpCases()[1]};
  for (const Case& c : cases) Isolated(&r, c.name, [&] { RunOpCase(c, t, &seed, &r); });
  CHECK(r.cases == 4);
  CHECK(r.failing_cases == std::set<std::string>{bad.name});
  REQUIRE(r.failures.size() == 2);
  CHECK_THAT(r.failures[0], Catch::Contains("MatMul"));
  CHECK(r.compared >= 2);  // both good cases compared their fetches
  // A wrong result is caught too: the mismatch names the fetch and the difference.
  Tensor a = Tensor::FromVector<float>({1, 2, 3}), b = Tensor::FromVector<float>({1, 2, 3.5f});
  CHECK(Mismatch(a, a, 1e-5).empty());
  CHECK_THAT(Mismatch(a, b, 1e-5), Catch::Contains("max |diff| 0.5"));
  CHECK_THAT(Mismatch(a, Tensor::FromVector<float>({1, 2}), 1e-5),
             Catch::Contains("[3] vs float [2]"));
}

}  // namespace
}  // namespace pf
