// The remapper (TensorFlow's grappler pass of that name): a prepare-time rewrite of each
// partition that replaces patterns of ops by one fused op, after placement and partitioning, so
// the placer, the gradient builder and the user's graph never see fused ops.
//
//   std::vector<Fusion> done = pf::Remap(&part, fetched, &copy_of);
//
// Patterns (on one device, whose type has the fused kernel):
//   MatMul -> BiasAdd -> Relu   becomes   _FusedMatMul(fused_ops = [BiasAdd, Relu])
//   MatMul -> BiasAdd           becomes   _FusedMatMul(fused_ops = [BiasAdd])
//   [Mul(w, scalar) ->] AddN -> Apply<Opt> (its gradient input)
//                               becomes   _FusedApply<Opt>(fused_ops = [Mul, AddN] or [AddN]),
//                                         the sum made inside the update (ops/train/apply_kernel.h)
//   FusedBatchNorm -> Relu | Relu6 (float32, NHWC)
//                               becomes   _FusedBatchNormEx(activation_mode = Relu | Relu6); the
//                                         batch norm's output may also feed the activation's
//                                         gradient (as its features), which then reads the
//                                         fused output: the same mask
//   ReluGrad | Relu6Grad -> FusedBatchNormGrad (its y_backprop; float32, NHWC), the
//   activation's features being the output of a _FusedBatchNormEx that the gradient
//   differentiates
//                               becomes   _FusedBatchNormGradEx(activation_mode = Relu | Relu6),
//                                         which recomputes the pre-activation for its mask
// only when each intermediate output has no consumer but the next node of the pattern (a _Send
// to another device is a consumer), no control edge leaves it, and it is not fetched. The fused
// node takes the name of the pattern's last node, as in TensorFlow, so traces and errors name
// what the user built.
#pragma once

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "placeflow/placer/partition.h"

namespace pf {

struct Fusion {
  std::string op;                      // "_FusedMatMul", "_FusedApplyGradientDescent", ...
  std::vector<std::string> fused;      // the replaced nodes, first to last ("MatMul", ...)
  std::vector<std::string> fused_ops;  // the fused node's fused_ops attr
};

// Rewrites `part` in place. `fetched`: outputs of part's nodes returned to the caller (never
// absorbed; the last node of a pattern may be fetched, the fused node answers). `copy_of` (user
// node -> its copy) is updated: a replaced last node maps to the fused node, absorbed nodes are
// dropped.
std::vector<Fusion> Remap(Partitions::Part* part, const std::set<Output>& fetched,
                          std::unordered_map<const Node*, Node*>* copy_of);

// Whether a session remaps: its option, unless PF_FUSE=0 turns it off for the process.
bool RemappingEnabled(bool option);

// "Remapper: fused MatMul, BiasAdd, Relu into Relu (_FusedMatMul [BiasAdd, Relu]) on <device>"
std::string FusionLogLine(const Fusion& f, const std::string& device);

}  // namespace pf
