// The everyday ops a TensorFlow 1.x program reaches for (issue 33): clipping, grouping,
// selection, Where, Abs and Sign, XwPlusB, OneHot with an axis, ArgMin, TopK and InTopK, Gather
// with an axis, Tile, Range and Cumsum. Builders as in ops.h: each adds nodes through
// NodeBuilder (schema-checked, shape-inferred, build-time errors thrown as pf::Error). Their
// kernels are CPU kernels; under soft placement a GPU request runs them on the CPU.
//
//   pf::Output idx = pf::ops::Where(root, pf::ops::Greater(root, x, zero));  // int64 [N, rank]
//   auto [clipped, norm] = pf::ops::ClipByGlobalNorm(root, grads, pf::ops::Const(root, 5.f));
#pragma once

#include <utility>
#include <vector>

#include "placeflow/graph/scope.h"

namespace pf::ops {

// --- logical (ops/math/cwise_ops.cc) ---
// tf.logical_and, tf.logical_or (bool, broadcasting) and tf.logical_not.
Output LogicalAnd(const Scope& s, Output a, Output b);
Output LogicalOr(const Scope& s, Output a, Output b);
Output LogicalNot(const Scope& s, Output x);

// --- clipping (ops/math/clip_ops.cc) ---
// tf.clip_by_value: max(min(t, clip_value_max), clip_value_min) (TensorFlow's order: the lower
// bound wins where it exceeds the upper one; NaN stays NaN). Bounds of t's dtype: scalars or t's
// shape (the ClipByValue op), or shapes that broadcast to t's (then Minimum and Maximum, as
// TensorFlow's Python builds it); other shapes are InvalidArgument. The gradient flows
// to t where it was not clipped and to the bound that clipped it elsewhere.
Output ClipByValue(const Scope& s, Output t, Output clip_value_min, Output clip_value_max);
// tf.clip_by_norm: t * clip_norm / max(l2norm(t), clip_norm), the norm over `axes` (empty: all
// axes, kept for broadcasting). A zero t stays zero (its gradient is finite too).
Output ClipByNorm(const Scope& s, Output t, Output clip_norm,
                  const std::vector<int32_t>& axes = {});
// tf.linalg.global_norm: sqrt(sum of every t's squares). Null entries are skipped; at least one
// must be set (InvalidArgument otherwise).
Output GlobalNorm(const Scope& s, const std::vector<Output>& t_list);
// tf.clip_by_global_norm: every t scaled by clip_norm / max(global_norm, clip_norm); returns the
// clipped list (null entries stay null) and the global norm. As in TensorFlow, a global norm of
// inf or NaN makes every clipped value NaN, to signal the error. `use_norm` (optional) replaces
// the computed norm.
std::pair<std::vector<Output>, Output> ClipByGlobalNorm(const Scope& s,
                                                        const std::vector<Output>& t_list,
                                                        Output clip_norm, Output use_norm = {});

// --- grouping and composites (ops/array/composite_ops.cc) ---
// tf.group: a NoOp that runs after every input (control inputs).
Operation Group(const Scope& s, const std::vector<Operation>& inputs);
// tf.compat.v1.nn.xw_plus_b: MatMul(x, weights) + biases (BiasAdd).
Output XwPlusB(const Scope& s, Output x, Output weights, Output biases);
// tf.one_hot with every argument: on_value where indices[...] == j, off_value elsewhere, the new
// axis of size depth at `axis` (-1: last). dtype: float, double, int32 or int64.
struct OneHotAttrs {
  double on_value = 1;
  double off_value = 0;
  int axis = -1;
  DType dtype = DT_FLOAT;
};
Output OneHot(const Scope& s, Output indices, int64_t depth, const OneHotAttrs& attrs);

// --- selection (ops/array/select_ops.cc) ---
// tf.where(condition) (one argument): the coordinates of the true (non-zero) elements, int64
// [N, rank], in row-major order.
Output Where(const Scope& s, Output condition);
// tf.compat.v1.where(c, t, e) (Select): t and e of one shape; c of that shape, a scalar, or a
// vector picking whole rows of t (its length t's first dimension).
Output Select(const Scope& s, Output condition, Output t, Output e);
// tf.where(c, t, e) in TensorFlow 2 (SelectV2): c, t and e broadcast together.
Output SelectV2(const Scope& s, Output condition, Output t, Output e);

// --- elementwise (ops/math/sign_ops.cc) ---
Output Abs(const Scope& s, Output x);
Output Sign(const Scope& s, Output x);  // -1, 0 or 1 (0 for NaN's sign is NaN, as TF)
// The index of the smallest value along `axis` (ties: the lowest index).
Output ArgMin(const Scope& s, Output x, int axis, DType output_type = DT_INT64);

// --- top-k (ops/nn/topk_ops.cc) ---
// tf.math.top_k (TopKV2): the k largest entries of each last-dimension row, in descending order
// (sorted = false keeps that order too), ties to the lower index; indices int32.
struct TopKOutputs {
  Output values, indices;
};
TopKOutputs TopK(const Scope& s, Output input, Output k, bool sorted = true);
TopKOutputs TopK(const Scope& s, Output input, int k, bool sorted = true);
// tf.math.in_top_k (InTopKV2): predictions float [batch, classes], targets int32/int64 [batch];
// true where the target's prediction is among the k largest (ties count for the target). A
// non-finite prediction or an out-of-range target gives false.
Output InTopK(const Scope& s, Output predictions, Output targets, int k);

// --- gathering and tiling (ops/array/gather_ops.cc) ---
// tf.gather(params, indices, axis) (GatherV2, batch_dims = 0): out = params[:axis] +
// indices.shape + params[axis+1:]. An index out of range is InvalidArgument.
Output GatherV2(const Scope& s, Output params, Output indices, Output axis);
Output GatherV2(const Scope& s, Output params, Output indices, int axis);
// tf.tile: dimension i repeated multiples[i] times (multiples int32/int64 [rank]).
Output Tile(const Scope& s, Output input, Output multiples);
Output Tile(const Scope& s, Output input, const std::vector<int32_t>& multiples);

// --- sequences (ops/math/scan_ops.cc) ---
// tf.range(start, limit, delta): scalars of one dtype (float, double, int32, int64).
Output Range(const Scope& s, Output start, Output limit, Output delta);
// int32 where the three fit, int64 otherwise.
Output Range(const Scope& s, int64_t start, int64_t limit, int64_t delta = 1);
// tf.math.cumsum along `axis` (exclusive: the sum of the elements before; reverse: from the end).
Output Cumsum(const Scope& s, Output x, Output axis, bool exclusive = false, bool reverse = false);
Output Cumsum(const Scope& s, Output x, int axis, bool exclusive = false, bool reverse = false);

}  // namespace pf::ops
