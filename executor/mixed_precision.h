// Automatic mixed precision (TensorFlow's grappler pass AutoMixedPrecision, which
// enable_mixed_precision_graph_rewrite turns on): a prepare-time rewrite of each partition, after
// placement and before the remapper, that runs the ops that gain from 16-bit math in float16 or
// bfloat16 and keeps the rest in float32, with Casts only where the two meet.
//
//   pf::MixedPrecisionReport r = pf::AutoMixedPrecision(&part, pf::DT_BFLOAT16, fetched);
//
// Ops are sorted as TensorFlow sorts them (docs/mixed_precision.md lists them):
//   allow  matmuls and convolutions (and their gradients): always 16-bit;
//   deny   softmax, cross-entropies, exp, log, pow, sums and means: always float32;
//   infer  bias, add, mul, batch norm, sigmoid, tanh, ...: 16-bit between two 16-bit ops, and
//          with bfloat16 also after one; float32 after a deny op, through clear and infer ops;
//   clear  relu, pooling, reshapes, identity, ...: take the type of the 16-bit ops they touch.
// Only nodes whose type attr T is float32, with a 16-bit kernel on their device, no variable
// reference input and no fetched output are converted. Variables and optimizer updates stay in
// float32: a converted op reads a variable through a Cast (the float32 master copy) and its
// gradient reaches the update through another. Casts are named as TensorFlow names them
// ("<node>-<output>-CastToFp16-AutoMixedPrecision"), so they show in traces.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "placeflow/placer/partition.h"

namespace pf {

struct MixedPrecisionReport {
  std::vector<std::string> converted;  // nodes now in 16-bit, in the partition's order
  std::vector<std::string> casts;      // Casts inserted
};

// Rewrites `part` in place; `target` is DT_HALF or DT_BFLOAT16. `fetched`: outputs returned to
// the caller, whose nodes stay in float32.
MixedPrecisionReport AutoMixedPrecision(Partitions::Part* part, DType target,
                                        const std::set<Output>& fetched);

// The 16-bit type a session's option asks for: "" or "off" -> DT_INVALID (no rewrite),
// "float16" (or "half") -> DT_HALF, "bfloat16" -> DT_BFLOAT16. PF_AUTO_MIXED_PRECISION, when set,
// overrides the option for the whole process (TF_ENABLE_AUTO_MIXED_PRECISION's role; "0" is
// "off"). Anything else is InvalidArgument.
StatusOr<DType> MixedPrecisionType(const std::string& option);

// "AutoMixedPrecision: 12 nodes in bfloat16, 5 Casts on <device>"
std::string MixedPrecisionLogLine(const MixedPrecisionReport& r, DType target,
                                  const std::string& device);

}  // namespace pf
