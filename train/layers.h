// Keras-style layers (tf.compat.v1.layers) over GetVariable, for image models in NHWC.
//
//   pf::Output x = pf::ops::Placeholder(root, pf::DT_FLOAT, {-1, 28, 28, 1});
//   pf::Output h = pf::layers::Conv2D(root, "conv1", x, {.filters = 32, .kernel_size = {5, 5},
//                                                        .activation = "relu"});
//   h = pf::layers::MaxPooling2D(root, h);                              // 2x2, stride 2
//   h = pf::layers::BatchNormalization(root, "bn1", h, /*training=*/true);
//   pf::Output logits = pf::layers::Dense(root, "logits", pf::layers::Flatten(root, h), {.units =
//   10});
//   // Train with the "update_ops" collection (the moving averages) as control dependencies.
//
// dtype_policy (Keras's mixed precision policies): "" (the global policy, SetGlobalPolicy),
// "float32", "mixed_float16" or "mixed_bfloat16": the layer's variables stay float32 and it
// computes in float16 (bfloat16): floating inputs and the variables' values are cast to that
// type, and the output has it
// (batch norm keeps its statistics and its scale and offset in float32, as Keras's fused layer
// does). Give the last layer "float32" (Keras's advice for the logits) or cast its output, and
// pair mixed_float16 with train::LossScaleOptimizer. Anything else is a pf::Error.
//
// A layer named "conv1" keeps its variables in variable scope "conv1" ("conv1/kernel",
// "conv1/bias"; batch norm: "gamma", "beta", "moving_mean", "moving_variance", the last two
// not trainable) and builds its ops under name scope "conv1". Calling a layer again with the
// same name under a reusing variable scope (Reuse::kReuse, or tower replication) shares the
// variables: that is how an inference-mode copy of a network is built beside the training one.
#pragma once

#include <string>
#include <vector>

#include "placeflow/graph/scope.h"
#include "placeflow/graph/variable.h"

namespace pf::layers {

// activation: "" (linear), "relu", "relu6", "leaky_relu" (alpha 0.2), "sigmoid", "tanh",
// "softplus"; anything else is a pf::Error.
Output Activation(const Scope& s, Output x, const std::string& activation);

// The compute dtype of a dtype_policy ("": the global policy's): DT_FLOAT, DT_HALF or
// DT_BFLOAT16. `layer` names the layer in the error for an unknown policy.
DType PolicyComputeDType(const std::string& layer, const std::string& policy);

// Keras's tf.keras.mixed_precision.set_global_policy / global_policy: the policy of every layer
// built afterwards whose dtype_policy is "" (process-wide; "float32" at start, and "" sets it
// back). An unknown name is a pf::Error and leaves the policy as it was.
void SetGlobalPolicy(const std::string& policy);
std::string GlobalPolicy();

struct Conv2DOptions {
  int64_t filters = 0;
  std::vector<int32_t> kernel_size = {3, 3};
  std::vector<int32_t> strides = {1, 1};
  std::string padding = "SAME";  // "SAME" or "VALID" (either case)
  std::vector<int32_t> dilation_rate = {1, 1};
  std::string activation;
  bool use_bias = true;
  Initializer kernel_initializer;  // default GlorotUniform(seed)
  int64_t seed = 0;
  std::string dtype_policy;  // see above
};
Output Conv2D(const Scope& s, const std::string& name, Output x, const Conv2DOptions& o);

struct DepthwiseConv2DOptions {
  std::vector<int32_t> kernel_size = {3, 3};
  std::vector<int32_t> strides = {1, 1};
  std::string padding = "SAME";
  int64_t depth_multiplier = 1;
  std::string activation;
  bool use_bias = true;
  Initializer depthwise_initializer;  // default GlorotUniform(seed)
  int64_t seed = 0;
  std::string dtype_policy;  // see above
};
Output DepthwiseConv2D(const Scope& s, const std::string& name, Output x,
                       const DepthwiseConv2DOptions& o);

struct DenseOptions {
  int64_t units = 0;
  std::string activation;
  bool use_bias = true;
  Initializer kernel_initializer;  // default GlorotUniform(seed)
  int64_t seed = 0;
  std::string dtype_policy;  // see above
};
Output Dense(const Scope& s, const std::string& name, Output x, const DenseOptions& o);

// Fused batch normalization over the channels (last dimension). training: normalises with the
// batch's statistics and adds the two moving-average updates
// (moving = momentum * moving + (1 - momentum) * batch, the variance Bessel-corrected) to the
// graph's "update_ops" collection; inference: normalises with the moving statistics.
struct BatchNormOptions {
  float momentum = 0.99f;
  float epsilon = 1e-3f;
  bool center = true;        // beta
  bool scale = true;         // gamma
  std::string dtype_policy;  // see above
};
Output BatchNormalization(const Scope& s, const std::string& name, Output x, bool training,
                          const BatchNormOptions& o = {});

// [N, ...] -> [N, product of the rest]; the rest must be statically known.
Output Flatten(const Scope& s, Output x);
Output MaxPooling2D(const Scope& s, Output x, std::vector<int32_t> pool_size = {2, 2},
                    std::vector<int32_t> strides = {2, 2}, const std::string& padding = "VALID");
Output AveragePooling2D(const Scope& s, Output x, std::vector<int32_t> pool_size = {2, 2},
                        std::vector<int32_t> strides = {2, 2},
                        const std::string& padding = "VALID");
Output GlobalAveragePooling2D(const Scope& s, Output x);  // [N, H, W, C] -> [N, C]
// Dropout in training (tf.nn.dropout), the identity in inference.
Output Dropout(const Scope& s, Output x, float rate, bool training, int64_t seed = 0);

}  // namespace pf::layers
