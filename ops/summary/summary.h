// Summary ops (TensorFlow's tf.compat.v1.summary): each outputs a serialized `Summary` protocol
// buffer (io/proto/summary.proto) as a DT_STRING scalar, which a SummaryWriter
// (train/summary_writer.h) writes into a TensorBoard event file.
//
//   pf::Output s1 = pf::summary::Scalar(root, "loss", loss);
//   pf::Output s2 = pf::summary::Histogram(root, "layer1/w", w.value());
//   pf::Output all = pf::summary::MergeAll(root);   // every summary of the "summaries" collection
//   auto r = sess.Run({{x, batch}}, {all}, {train_op});
//   writer.AddSummary(r[0], step);
//
// CPU kernels only (they build protobuf messages on the host). Built with protobuf
// (PF_WITH_PROTOBUF) only: without it these ops are not registered.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"
#include "placeflow/graph/scope.h"

namespace pf::summary {

// The graph collection summary builders add to (TensorFlow's GraphKeys.SUMMARIES). Towers
// (train/towers.h) keep only tower 0's summaries in it, as TensorFlow's multi-tower examples do.
inline constexpr char kSummaries[] = "summaries";

// A scalar (any real dtype, a one-element tensor) under `tag` (ScalarSummary). The node is named
// after the tag, under the scope's name scope.
Output Scalar(const Scope& scope, const std::string& tag, Output value);
// A histogram of every element of `values` over TensorFlow's default buckets
// (HistogramSummary). NaN or Inf values are an InvalidArgument error at run time, as in TF.
Output Histogram(const Scope& scope, const std::string& tag, Output values);
// Images [batch, height, width, channels] (channels 1, 3 or 4), float or uint8, the first
// `max_images` of the batch encoded as PNG (ImageSummary): tags "<tag>/image/0", ... Float images
// are scaled as TensorFlow does (all non-negative: the largest becomes 255; else 0.0 maps to 127
// and the larger of |min| and max to the range's end).
Output Image(const Scope& scope, const std::string& tag, Output images, int max_images = 3);
// One summary of the values of all `inputs` (MergeSummary); a tag twice is an error.
Output Merge(const Scope& scope, const std::vector<Output>& inputs);
// Merges every summary in the "summaries" collection whose node name starts with
// `name_scope_prefix` ("" for all: TensorFlow's tf.summary.merge_all(scope=...)). A null Output
// when there is none (TensorFlow's None).
Output MergeAll(const Scope& scope, const std::string& name_scope_prefix = "");

// Helpers the kernels use, exposed for tests.
// TensorFlow's default histogram bucket limits: -DBL_MAX, -1e20.., -1e-12, 0, 1e-12, ... x1.1 ...
// up to 1e20, then DBL_MAX.
const std::vector<double>& DefaultBucketLimits();

}  // namespace pf::summary
