// Op builders: one function per op; each adds a node through NodeBuilder (schema-checked,
// shape-inferred, errors thrown as pf::Error at build time).
//
//   pf::Output x = pf::ops::Placeholder(root.WithOpName("x"), pf::DT_FLOAT, {-1, 600});
//   pf::Output w = pf::ops::Const(root, pf::Tensor(pf::DT_FLOAT, {600, 10}));
//   pf::Output y = pf::ops::Softmax(root, pf::ops::MatMul(root, x, w));
//   pf::Output s = pf::ops::Sum(root, y, {1}, /*keep_dims=*/true);
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "placeflow/core/tensor.h"
#include "placeflow/graph/scope.h"

namespace pf::ops {

// --- array ---
Output Const(const Scope& s, const Tensor& value);
Output Const(const Scope& s, float value);
Output Const(const Scope& s, const std::vector<float>& values, const pf::Shape& shape);
// Any dtype and shape: Const(s, std::vector<int64_t>{1, 2, 3, 4}, {2, 2}). The values must fill
// the shape exactly (pf::Error otherwise). Scalars of any dtype: Const(s, Tensor::Scalar(0.5)).
template <typename T>
Output Const(const Scope& s, const std::vector<T>& values, const pf::Shape& shape) {
  return Const(s, Tensor::FromVector<T>(values, shape));
}
Output ConstInt(const Scope& s, const std::vector<int32_t>& values);  // 1-D int32 (shapes, axes)
Output ConstInt(const Scope& s, int32_t value);                       // int32 scalar
Output Placeholder(const Scope& s, DType dtype, const pf::Shape& shape = pf::Shape::Unknown());
Output Identity(const Scope& s, Output x);
Operation NoOp(const Scope& s);
Output StopGradient(const Scope& s, Output x);
Output Reshape(const Scope& s, Output x, Output shape);
Output Reshape(const Scope& s, Output x, const std::vector<int32_t>& shape);
Output ExpandDims(const Scope& s, Output x, int axis);
Output Squeeze(const Scope& s, Output x, const std::vector<int64_t>& axes = {});
Output Transpose(const Scope& s, Output x, const std::vector<int32_t>& perm);
Output Concat(const Scope& s, const std::vector<Output>& values, int axis);
std::vector<Output> Split(const Scope& s, Output value, int axis, int num_split);
// Dimension 0 in `num_split` parts as even as possible (sizes differ by at most one; a batch
// smaller than num_split is an error at run time). The parts share the input's buffer.
std::vector<Output> BatchSplit(const Scope& s, Output value, int num_split);
Output Slice(const Scope& s, Output x, const std::vector<int32_t>& begin,
             const std::vector<int32_t>& size);
Output Gather(const Scope& s, Output params, Output indices);  // along axis 0
Output Cast(const Scope& s, Output x, DType dtype);
Output Fill(const Scope& s, Output dims, Output value);
Output ZerosLike(const Scope& s, Output x);
Output OnesLike(const Scope& s, Output x);
Output Shape(const Scope& s, Output x, DType out_type = DT_INT32);  // x's shape, as a tensor
Output OneHot(const Scope& s, Output indices, int depth, float on_value = 1.f,
              float off_value = 0.f);

// --- math ---
Output Add(const Scope& s, Output a, Output b);
Output Sub(const Scope& s, Output a, Output b);
Output Mul(const Scope& s, Output a, Output b);
Output Div(const Scope& s, Output a, Output b);
Output Maximum(const Scope& s, Output a, Output b);
Output Minimum(const Scope& s, Output a, Output b);
Output Pow(const Scope& s, Output a, Output b);
Output Neg(const Scope& s, Output x);
Output Square(const Scope& s, Output x);
Output Sqrt(const Scope& s, Output x);
Output Rsqrt(const Scope& s, Output x);
Output Exp(const Scope& s, Output x);
Output Log(const Scope& s, Output x);
Output Erf(const Scope& s, Output x);  // the error function (tf.math.erf)
Output Floor(const Scope& s, Output x);
Output Equal(const Scope& s, Output a, Output b);
Output Less(const Scope& s, Output a, Output b);
Output Greater(const Scope& s, Output a, Output b);
Output NotEqual(const Scope& s, Output a, Output b);
Output LessEqual(const Scope& s, Output a, Output b);
Output GreaterEqual(const Scope& s, Output a, Output b);
Output MatMul(const Scope& s, Output a, Output b, bool transpose_a = false,
              bool transpose_b = false);
Output AddN(const Scope& s, const std::vector<Output>& inputs);
// Reductions over `axes` (empty: all axes); negative axes count from the end.
Output Sum(const Scope& s, Output x, const std::vector<int32_t>& axes = {}, bool keep_dims = false);
Output Mean(const Scope& s, Output x, const std::vector<int32_t>& axes = {},
            bool keep_dims = false);
Output Prod(const Scope& s, Output x, const std::vector<int32_t>& axes = {},
            bool keep_dims = false);
Output Max(const Scope& s, Output x, const std::vector<int32_t>& axes = {}, bool keep_dims = false);
Output Min(const Scope& s, Output x, const std::vector<int32_t>& axes = {}, bool keep_dims = false);
Output ArgMax(const Scope& s, Output x, int axis, DType output_type = DT_INT64);

// --- combining towers (ops/comm/aggregate_ops.cc): sum_i w_i * x_i / sum_i w_i, elementwise ---
// weights: float tensors of one element (tower replication passes example counts).
Output WeightedMean(const Scope& s, const std::vector<Output>& values,
                    const std::vector<Output>& weights);
// One participant (rank in [0, group_size)) of an all-reduce over the nodes sharing group_key:
// each gets the weighted mean over all participants of each of its inputs. Asynchronous.
std::vector<Output> CollectiveAllReduce(const Scope& s, const std::vector<Output>& inputs,
                                        Output weight, const std::string& group_key, int group_size,
                                        int rank);

// --- nn ---
Output BiasAdd(const Scope& s, Output value, Output bias);
Output Relu(const Scope& s, Output x);
Output Sigmoid(const Scope& s, Output x);
Output Tanh(const Scope& s, Output x);
Output Softmax(const Scope& s, Output logits);
Output LogSoftmax(const Scope& s, Output logits);
// TensorFlow's BlockLSTM (tf.raw_ops.BlockLSTM, LSTMBlockFusedCell's op): an LSTM over all
// steps of x [T, B, D] in one kernel, from the state (cs_prev, h_prev) [B, H], weights w
// [D + H, 4H] (gates i, ci, f, o as LSTMCell's), peepholes wci, wcf, wco [H] (read only with
// use_peephole) and bias b [4H]. seq_len_max: int64 scalar; steps from it on are zeros. Every
// output is [T, B, H]: gates i, f, o, ci (the candidate), cs (the cell state), co = tanh(cs) and
// h (the output). Only cs and h carry gradients. CPU kernels, float and double
// (ops/nn/lstm_ops.cc).
struct BlockLstmAttrs {
  float forget_bias = 1.f;
  float cell_clip = -1.f;  // > 0: cs is clipped to [-cell_clip, cell_clip]
  bool use_peephole = false;
};
struct BlockLstmOutputs {
  Output i, cs, f, o, ci, co, h;
};
BlockLstmOutputs BlockLSTM(const Scope& s, Output seq_len_max, Output x, Output cs_prev,
                           Output h_prev, Output w, Output wci, Output wcf, Output wco, Output b,
                           const BlockLstmAttrs& attrs = {});
// Losses: fused and stable. The softmax ones return (per-example loss, d loss / d logits).
std::pair<Output, Output> SoftmaxCrossEntropyWithLogits(const Scope& s, Output logits,
                                                        Output labels);
std::pair<Output, Output> SparseSoftmaxCrossEntropyWithLogits(const Scope& s, Output logits,
                                                              Output labels);
Output SigmoidCrossEntropyWithLogits(const Scope& s, Output logits, Output labels);  // elementwise
Output MeanSquaredError(const Scope& s, Output predictions, Output labels);  // scalar, broadcasting
Output L2Loss(const Scope& s, Output t);                                     // sum(t^2) / 2

// --- image ops (ops/nn/conv_ops.cc, pooling_ops.cc, batch_norm_ops.cc): TensorFlow's attrs ---
// Layout: data_format "NHWC" (default) or "NCHW"; strides, dilations and ksize have 4 entries in
// that layout (batch and channel entries 1). padding: "SAME", "VALID" or "EXPLICIT" (then
// explicit_paddings holds 8 values, (before, after) per dimension in data_format order, with
// zeros for batch and channels). Filters are [height, width, in_channels, out_channels]
// (depthwise: [height, width, in_channels, channel_multiplier]) whatever the data_format.
struct ConvAttrs {
  std::string data_format = "NHWC";
  std::vector<int32_t> dilations = {1, 1, 1, 1};
  std::vector<int32_t> explicit_paddings;
};
Output Conv2D(const Scope& s, Output input, Output filter, const std::vector<int32_t>& strides,
              const std::string& padding, const ConvAttrs& attrs = {});
// The gradients of Conv2D, each its own op. input_sizes / filter_sizes: int32 [4] tensors.
Output Conv2DBackpropInput(const Scope& s, Output input_sizes, Output filter, Output out_backprop,
                           const std::vector<int32_t>& strides, const std::string& padding,
                           const ConvAttrs& attrs = {});
Output Conv2DBackpropFilter(const Scope& s, Output input, Output filter_sizes, Output out_backprop,
                            const std::vector<int32_t>& strides, const std::string& padding,
                            const ConvAttrs& attrs = {});
// tf.nn.conv2d_transpose: filter [height, width, output_channels, in_channels]; output_shape is
// the full 4-D output shape (Conv2DBackpropInput with input_sizes = output_shape).
Output Conv2DTranspose(const Scope& s, Output value, Output filter,
                       const std::vector<int32_t>& output_shape,
                       const std::vector<int32_t>& strides, const std::string& padding,
                       const ConvAttrs& attrs = {});
Output DepthwiseConv2dNative(const Scope& s, Output input, Output filter,
                             const std::vector<int32_t>& strides, const std::string& padding,
                             const ConvAttrs& attrs = {});
Output DepthwiseConv2dNativeBackpropInput(const Scope& s, Output input_sizes, Output filter,
                                          Output out_backprop, const std::vector<int32_t>& strides,
                                          const std::string& padding, const ConvAttrs& attrs = {});
Output DepthwiseConv2dNativeBackpropFilter(const Scope& s, Output input, Output filter_sizes,
                                           Output out_backprop, const std::vector<int32_t>& strides,
                                           const std::string& padding, const ConvAttrs& attrs = {});
// Pooling ("SAME" or "VALID"). AvgPool divides by the number of in-bounds elements (TF).
Output MaxPool(const Scope& s, Output input, const std::vector<int32_t>& ksize,
               const std::vector<int32_t>& strides, const std::string& padding,
               const std::string& data_format = "NHWC");
Output AvgPool(const Scope& s, Output input, const std::vector<int32_t>& ksize,
               const std::vector<int32_t>& strides, const std::string& padding,
               const std::string& data_format = "NHWC");
Output MaxPoolGrad(const Scope& s, Output orig_input, Output orig_output, Output grad,
                   const std::vector<int32_t>& ksize, const std::vector<int32_t>& strides,
                   const std::string& padding, const std::string& data_format = "NHWC");
// orig_input_shape: int32 [4].
Output AvgPoolGrad(const Scope& s, Output orig_input_shape, Output grad,
                   const std::vector<int32_t>& ksize, const std::vector<int32_t>& strides,
                   const std::string& padding, const std::string& data_format = "NHWC");
// Global average pooling: the mean over H and W (keep_dims false: [N, C]).
Output GlobalAvgPool(const Scope& s, Output input, const std::string& data_format = "NHWC");
// tf.compat.v1.nn.fused_batch_norm. Training: normalises with the batch's statistics and returns
// them (batch_variance unbiased, n/(n-1), as TF's moving-variance update wants); mean/variance
// inputs are ignored unless exponential_avg_factor != 1 (then the outputs are the running
// averages (1-f)*mean + f*batch). Inference: uses mean and variance. Reserve spaces carry
// the saved mean and inverse standard deviation to FusedBatchNormGrad.
struct FusedBatchNormOutputs {
  Output y, batch_mean, batch_variance, reserve_space_1, reserve_space_2;
};
FusedBatchNormOutputs FusedBatchNorm(const Scope& s, Output x, Output scale, Output offset,
                                     Output mean, Output variance, float epsilon = 1e-3f,
                                     bool is_training = true,
                                     const std::string& data_format = "NHWC",
                                     float exponential_avg_factor = 1.f);
struct FusedBatchNormGradOutputs {
  Output x_backprop, scale_backprop, offset_backprop;
};
FusedBatchNormGradOutputs FusedBatchNormGrad(const Scope& s, Output y_backprop, Output x,
                                             Output scale, Output reserve_space_1,
                                             Output reserve_space_2, float epsilon = 1e-3f,
                                             bool is_training = true,
                                             const std::string& data_format = "NHWC");
// Pads with zeros: paddings is an int32 [rank, 2] tensor of (before, after) per dimension.
Output Pad(const Scope& s, Output x, Output paddings);
Output Pad(const Scope& s, Output x, const std::vector<std::pair<int32_t, int32_t>>& paddings);
Output Relu6(const Scope& s, Output x);
Output LeakyRelu(const Scope& s, Output x, float alpha = 0.2f);
Output Softplus(const Scope& s, Output x);
// tf.nn.dropout: keeps each element with probability 1 - rate and scales kept ones by
// 1 / (1 - rate). The mask comes from Philox (element i of the node's call c uses counter
// (i, c)), so CPU and GPU draw the same mask for the same seeds.
Output Dropout(const Scope& s, Output x, float rate, int64_t seed = 0);

// --- random (seed = seed2 = 0: seeded from the graph seed if set, else nondeterministic) ---
Output RandomUniform(const Scope& s, const pf::Shape& shape, DType dtype = DT_FLOAT,
                     int64_t seed = 0);
Output RandomNormal(const Scope& s, const pf::Shape& shape, DType dtype = DT_FLOAT,
                    int64_t seed = 0);
Output TruncatedNormal(const Scope& s, const pf::Shape& shape, DType dtype = DT_FLOAT,
                       int64_t seed = 0);

// --- state (prefer pf::GetVariable, which builds these) ---
Output Variable(const Scope& s, const pf::Shape& shape, DType dtype);
Output Assign(const Scope& s, Output ref, Output value, bool validate_shape = true);
Output AssignAdd(const Scope& s, Output ref, Output value);
Output AssignSub(const Scope& s, Output ref, Output value);

// --- shared queues and gradient accumulators (ops/state/data_flow_ops.cc; CPU) ---
// Found by name in their device's resource manager, so every session on that device (every
// worker of a cluster) shares them: colocate all ops of one resource. Dequeue and TakeGradient
// wait without holding a thread; RunOptions.timeout_in_ms or a failing step wakes them.
struct SharedResource {
  std::string shared_name;
  DType dtype = DT_FLOAT;
  pf::Shape shape;  // of one queue element, or of the accumulated gradient
};
// Appends every row of `values` ([n] + shape); the queue has no capacity limit.
Operation QueueEnqueueMany(const Scope& s, const SharedResource& queue, Output values);
Output QueueDequeue(const Scope& s, const SharedResource& queue);  // waits for an element
Output QueueSize(const Scope& s, const SharedResource& queue);     // int32
// TensorFlow's ConditionalAccumulator: a gradient whose int64 local_step is older than the
// accumulator's global step is dropped (and counted); TakeGradient waits for num_required
// (int32) gradients, returns their mean and advances the accumulator's global step.
Operation AccumulatorApplyGradient(const Scope& s, const SharedResource& acc, Output local_step,
                                   Output gradient);
Output AccumulatorTakeGradient(const Scope& s, const SharedResource& acc, Output num_required);
Operation AccumulatorSetGlobalStep(const Scope& s, const SharedResource& acc,
                                   Output new_global_step);
Output AccumulatorNumAccumulated(const Scope& s, const SharedResource& acc);  // int32
Output AccumulatorNumDropped(const Scope& s, const SharedResource& acc);      // int64, stale ones

// --- debugging (ops/debug/debug_ops.cc; CPU kernels only: under soft placement a GPU request
// runs them on the CPU, the tensor copied there) ---
// tf.debugging.check_numerics: passes `tensor` (a float type) through, or fails the step with
// InvalidArgument "<message> : Tensor had NaN values" ("Inf", "Inf and NaN") naming the node.
// Its gradient is checked the same way.
Output CheckNumerics(const Scope& s, Output tensor, const std::string& message);
// tf.add_check_numerics_ops: a CheckNumerics (message "<node>:<output>") on every float output
// of the graph built so far, grouped into one NoOp to run with the train op. Variables and ops
// that update them are skipped. Non-empty `only_for`: only the nodes a Run of those ops
// executes (the graph-wide form needs every placeholder fed, as in TensorFlow).
Operation AddCheckNumericsOps(const Scope& s, const std::vector<Operation>& only_for = {});
// tf.Print: passes `input` through and writes one line to stderr as the step runs it:
// message, then per data tensor "<name> Tensor<dtype [shape]> <first summarize values>", "; "
// between tensors. data (default: {input}) must share one dtype. first_n >= 0: only the first
// first_n runs of this node print.
struct PrintOptions {
  std::string message;
  int64_t first_n = -1;
  int64_t summarize = 3;
};
Output Print(const Scope& s, Output input, std::vector<Output> data = {},
             const PrintOptions& options = {});

}  // namespace pf::ops
