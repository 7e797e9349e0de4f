#include "placeflow/train/layers.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "placeflow/ops/ops.h"
#include "placeflow/train/variables.h"

namespace pf::layers {
namespace {

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

std::string Padding(const std::string& layer, const std::string& padding) {
  std::string p = Upper(padding);
  if (p != "SAME" && p != "VALID")
    ThrowError(
        errors::InvalidArgument(layer, ": padding must be 'same' or 'valid', got '", padding, "'"));
  return p;
}

// A pair attribute (kernel_size, strides, pool_size) as TensorFlow's 4-entry NHWC form.
std::vector<int32_t> Nhwc(const std::string& layer, const char* what,
                          const std::vector<int32_t>& hw) {
  if (hw.size() != 2 || hw[0] <= 0 || hw[1] <= 0)
    ThrowError(errors::InvalidArgument(layer, ": ", what, " must be two positive values, got ",
                                       hw.size(), " values"));
  return {1, hw[0], hw[1], 1};
}

// The channel count of an NHWC input, which must be known to shape the variables.
int64_t Channels(const std::string& layer, const Output& x) {
  const Shape& s = x.shape();
  if (s.unknown_rank() || s.rank() != 4 || s.dim(3) < 0)
    ThrowError(errors::InvalidArgument(layer, ": expected a [N, H, W, C] input with known C, got ",
                                       s.ToString()));
  return s.dim(3);
}

// x in the layer's compute dtype t: floating tensors of another type are cast (Keras's
// autocasting of inputs and of AutoCastVariable reads).
Output AutoCast(const Scope& vs, Output x, DType t) {
  if (x.dtype() == t || !DTypeIsFloating(x.dtype())) return x;
  return ops::Cast(vs, x, t);
}

Output WithBias(const Scope& vs, Output y, int64_t units, bool use_bias) {
  if (!use_bias) return y;
  Variable b = GetVariable(vs, "bias", {units}, init::Zeros());
  return ops::BiasAdd(vs, y, AutoCast(vs, b.value(), y.dtype()));
}

}  // namespace

Output Activation(const Scope& s, Output x, const std::string& activation) {
  if (activation.empty() || activation == "linear") return x;
  if (activation == "relu") return ops::Relu(s, x);
  if (activation == "relu6") return ops::Relu6(s, x);
  if (activation == "leaky_relu") return ops::LeakyRelu(s, x);
  if (activation == "sigmoid") return ops::Sigmoid(s, x);
  if (activation == "tanh") return ops::Tanh(s, x);
  if (activation == "softplus") return ops::Softplus(s, x);
  ThrowError(errors::InvalidArgument("Unknown activation '", activation,
                                     "': use relu, relu6, leaky_relu, sigmoid, tanh or softplus"));
}

namespace {
std::mutex global_policy_mu;
std::string& GlobalPolicyRef() {
  static std::string policy = "float32";
  return policy;
}
}  // namespace

void SetGlobalPolicy(const std::string& policy) {
  PolicyComputeDType("SetGlobalPolicy", policy.empty() ? "float32" : policy);  // throws if unknown
  std::lock_guard<std::mutex> lock(global_policy_mu);
  GlobalPolicyRef() = policy.empty() ? "float32" : policy;
}

std::string GlobalPolicy() {
  std::lock_guard<std::mutex> lock(global_policy_mu);
  return GlobalPolicyRef();
}

DType PolicyComputeDType(const std::string& layer, const std::string& policy) {
  if (policy.empty()) return PolicyComputeDType(layer, GlobalPolicy());
  if (policy == "float32") return DT_FLOAT;
  if (policy == "mixed_float16") return DT_HALF;
  if (policy == "mixed_bfloat16") return DT_BFLOAT16;
  ThrowError(errors::InvalidArgument(layer, ": unknown dtype_policy '", policy,
                                     "': use float32, mixed_float16 or mixed_bfloat16"));
}

Output Conv2D(const Scope& s, const std::string& name, Output x, const Conv2DOptions& o) {
  if (o.filters <= 0) ThrowError(errors::InvalidArgument(name, ": filters must be positive"));
  const int64_t in_c = Channels(name, x);
  const DType t = PolicyComputeDType(name, o.dtype_policy);
  const std::vector<int32_t> k = Nhwc(name, "kernel_size", o.kernel_size);
  Scope vs = s.WithVariableScope(name);
  Variable w =
      GetVariable(vs, "kernel", {k[1], k[2], in_c, o.filters},
                  o.kernel_initializer ? o.kernel_initializer : init::GlorotUniform(o.seed));
  ops::ConvAttrs attrs;
  attrs.dilations = Nhwc(name, "dilation_rate", o.dilation_rate);
  Output y = ops::Conv2D(vs, AutoCast(vs, x, t), AutoCast(vs, w.value(), t),
                         Nhwc(name, "strides", o.strides), Padding(name, o.padding), attrs);
  return Activation(vs, WithBias(vs, y, o.filters, o.use_bias), o.activation);
}

Output DepthwiseConv2D(const Scope& s, const std::string& name, Output x,
                       const DepthwiseConv2DOptions& o) {
  if (o.depth_multiplier <= 0)
    ThrowError(errors::InvalidArgument(name, ": depth_multiplier must be positive"));
  const int64_t in_c = Channels(name, x);
  const DType t = PolicyComputeDType(name, o.dtype_policy);
  const std::vector<int32_t> k = Nhwc(name, "kernel_size", o.kernel_size);
  Scope vs = s.WithVariableScope(name);
  Variable w =
      GetVariable(vs, "depthwise_kernel", {k[1], k[2], in_c, o.depth_multiplier},
                  o.depthwise_initializer ? o.depthwise_initializer : init::GlorotUniform(o.seed));
  Output y = ops::DepthwiseConv2dNative(vs, AutoCast(vs, x, t), AutoCast(vs, w.value(), t),
                                        Nhwc(name, "strides", o.strides), Padding(name, o.padding));
  return Activation(vs, WithBias(vs, y, in_c * o.depth_multiplier, o.use_bias), o.activation);
}

Output Dense(const Scope& s, const std::string& name, Output x, const DenseOptions& o) {
  const Shape& xs = x.shape();
  if (o.units <= 0) ThrowError(errors::InvalidArgument(name, ": units must be positive"));
  if (xs.unknown_rank() || xs.rank() != 2 || xs.dim(1) < 0)
    ThrowError(errors::InvalidArgument(
        name, ": expected a [N, features] input with known features, got ", xs.ToString()));
  const DType t = PolicyComputeDType(name, o.dtype_policy);
  Scope vs = s.WithVariableScope(name);
  Variable w =
      GetVariable(vs, "kernel", {xs.dim(1), o.units},
                  o.kernel_initializer ? o.kernel_initializer : init::GlorotUniform(o.seed));
  Output y = ops::MatMul(vs, AutoCast(vs, x, t), AutoCast(vs, w.value(), t));
  return Activation(vs, WithBias(vs, y, o.units, o.use_bias), o.activation);
}

// train/batch_norm_check.cc: `mean` and `variance` read through BatchNormMovingStatsCheck.
void CheckedMovingStatistics(const Scope& s, const std::string& layer, float momentum, Output* mean,
                             Output* variance);

Output BatchNormalization(const Scope& s, const std::string& name, Output x, bool training,
                          const BatchNormOptions& o) {
  const int64_t c = Channels(name, x);
  if (!(o.momentum >= 0 && o.momentum < 1))
    ThrowError(errors::InvalidArgument(name, ": momentum must be in [0, 1), got ", o.momentum));
  Scope vs = s.WithVariableScope(name);
  x = AutoCast(vs, x, PolicyComputeDType(name, o.dtype_policy));
  auto param = [&](const char* var, bool on, Initializer init) {
    if (on) return GetVariable(vs, var, {c}, std::move(init)).value();
    return ops::Const(vs, std::vector<float>(c, var[0] == 'g' ? 1.f : 0.f), {c});
  };
  Output gamma = param("gamma", o.scale, init::Ones());
  Output beta = param("beta", o.center, init::Zeros());
  Variable mean = GetVariable(vs, "moving_mean", {c}, init::Zeros(), DT_FLOAT, false);
  Variable var = GetVariable(vs, "moving_variance", {c}, init::Ones(), DT_FLOAT, false);
  if (!training) {
    // Read through a check that warns once when they have barely moved (batch_norm_check.cc).
    Output moving_mean = mean.value(), moving_variance = var.value();
    CheckedMovingStatistics(vs, name, o.momentum, &moving_mean, &moving_variance);
    return ops::FusedBatchNorm(vs, x, gamma, beta, moving_mean, moving_variance, o.epsilon, false)
        .y;
  }
  // Training ignores the mean and variance inputs: empty ones keep the moving statistics (on
  // tower 0's device when mirrored) out of every tower's step.
  Output none = ops::Const(vs, Tensor(DT_FLOAT, {0}));
  ops::FusedBatchNormOutputs bn =
      ops::FusedBatchNorm(vs, x, gamma, beta, none, none, o.epsilon, true);
  Output momentum = ops::Const(vs, o.momentum);
  Graph* g = s.graph();
  // moving -= (1 - momentum) * (moving - batch), Keras's update (its Sub, Mul and AssignSub) as
  // one fused ApplyMovingAverage per statistic: one kernel launch instead of three on a GPU.
  for (auto [v, batch] : {std::pair{mean, bn.batch_mean}, std::pair{var, bn.batch_variance}}) {
    Scope us = vs.NewSubScope("AssignMovingAvg");
    Node* update = NodeBuilder(us.WithOpName("ApplyMovingAverage"), "ApplyMovingAverage")
                       .Input(v.ref())
                       .Input(momentum)
                       .Input(batch)
                       .Finalize();
    g->AddToCollection(kUpdateOps, Output(update, 0));
  }
  return bn.y;
}

Output Flatten(const Scope& s, Output x) {
  const Shape& xs = x.shape();
  int64_t features = 1;
  for (int d = 1; !xs.unknown_rank() && d < xs.rank(); ++d) {
    if (xs.dim(d) < 0) features = -1;
    if (features >= 0) features *= xs.dim(d);
  }
  if (xs.unknown_rank() || xs.rank() < 2 || features < 0)
    ThrowError(errors::InvalidArgument(
        "Flatten: expected [N, ...] with known non-batch dimensions, got ", xs.ToString()));
  return ops::Reshape(s, x, {-1, static_cast<int32_t>(features)});
}

Output MaxPooling2D(const Scope& s, Output x, std::vector<int32_t> pool_size,
                    std::vector<int32_t> strides, const std::string& padding) {
  return ops::MaxPool(s, x, Nhwc("MaxPooling2D", "pool_size", pool_size),
                      Nhwc("MaxPooling2D", "strides", strides), Padding("MaxPooling2D", padding));
}

Output AveragePooling2D(const Scope& s, Output x, std::vector<int32_t> pool_size,
                        std::vector<int32_t> strides, const std::string& padding) {
  return ops::AvgPool(s, x, Nhwc("AveragePooling2D", "pool_size", pool_size),
                      Nhwc("AveragePooling2D", "strides", strides),
                      Padding("AveragePooling2D", padding));
}

Output GlobalAveragePooling2D(const Scope& s, Output x) { return ops::GlobalAvgPool(s, x); }

Output Dropout(const Scope& s, Output x, float rate, bool training, int64_t seed) {
  if (!training || rate == 0.f) return x;
  return ops::Dropout(s, x, rate, seed);
}

}  // namespace pf::layers
