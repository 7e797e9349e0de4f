// Parsing ops (CPU only: their inputs are DT_STRING, which lives in host memory).
//
//   pf::Output bytes = pf::ops::Placeholder(root, pf::DT_STRING, {-1});
//   pf::Output pixels = pf::ops::DecodeRaw(root, image_raw, pf::DT_UINT8);   // [batch, 784]
//   pf::ops::ParsedExampleOutputs p = pf::ops::ParseExample(root, bytes, spec);  // protobuf only
//   p.dense[0];           // [batch] + spec.fixed[0].shape
//   p.sparse_values[0];   // with p.sparse_indices[0] [n, 2] and p.sparse_shapes[0] [2]
#pragma once

#include <vector>

#include "placeflow/graph/scope.h"
#include "placeflow/io/example.h"

namespace pf::ops {

// tf.io.decode_raw: each string's bytes reinterpreted as `out_type` values (uint8, int32, int64,
// float, double, half, bfloat16), little-endian unless `little_endian` is false. Output shape:
// the input's shape + [bytes / sizeof(out_type)]; every string must have the same length, a
// multiple of the type's size (InvalidArgument naming the element otherwise).
Output DecodeRaw(const Scope& s, Output bytes, DType out_type, bool little_endian = true);

#if defined(PF_WITH_PROTOBUF)
// TensorFlow's ParseExample outputs, one entry per feature of the spec.
struct ParsedExampleOutputs {
  std::vector<Output> dense;           // spec.fixed: [batch] + shape
  std::vector<Output> sparse_indices;  // spec.var_len: int64 [n, 2]
  std::vector<Output> sparse_values;   // spec.var_len: dtype [n]
  std::vector<Output> sparse_shapes;   // spec.var_len: int64 [2] (batch, longest)
};
// tf.io.parse_example on a 1-D string tensor of serialized tf.train.Example (or a scalar:
// tf.io.parse_single_example, no batch dimension and [n, 1] / [1] sparse parts). Adds one
// node per feature (ParseExampleDense / ParseExampleVarLen): placeflow's op registry has no
// list(type) attrs, so TensorFlow's single node with Tdense/sparse_types becomes one node per
// feature, each parsing the batch (docs/data.md). Throws pf::Error for a bad spec.
ParsedExampleOutputs ParseExample(const Scope& s, Output serialized, const io::ExampleSpec& spec);
#endif

}  // namespace pf::ops
