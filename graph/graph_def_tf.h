// What importing a TensorFlow-written GraphDef rewrites before its nodes are added (internal to
// graph/graph_def.cc): TensorFlow 2.x's and resource variables' ops onto placeflow's.
//
//   AddV2 -> Add, RealDiv -> Div
//   VariableV2, VarHandleOp -> Variable (dtype, shape)
//   ReadVariableOp -> Identity; AssignVariableOp / AssignAddVariableOp / AssignSubVariableOp
//     -> Assign / AssignAdd / AssignSub (a resource handle is the variable itself here)
//   RefEnter, RefSwitch, RefMerge, RefExit, RefNextIteration -> Enter, Switch, Merge, Exit,
//     NextIteration (a while loop's or a cond's ops on a reference variable)
//   VarIsInitializedOp: dropped when nothing uses it, an error otherwise
//   a reduction (any op with an "axes" attr: Sum, Mean, Max, Min, ...) with its axes as a
//     second input from a Const -> the op with that "axes" attr (an empty axes list, which
//     reduces nothing in TensorFlow, becomes an Identity)
//   ConcatV2 with its axis as the last input from a Const -> Concat with that "axis" attr
//   IdentityN "n" with k inputs -> k Identity nodes: "n" (output 0) and "n/output_<i>" (output
//     i); every input naming "n:i" is rewritten, and a control input "^n" names all of them
#pragma once

#include "placeflow/core/status.h"

namespace tensorflow {
class GraphDef;
}  // namespace tensorflow

namespace pf::internal {

// Rewrites `def` in place; errors name the node and the op.
Status RewriteTensorFlowNodes(tensorflow::GraphDef* def);

}  // namespace pf::internal
