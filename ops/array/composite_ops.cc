// Builders made of existing ops, as TensorFlow's Python makes them: Group (tf.group), XwPlusB
// (tf.compat.v1.nn.xw_plus_b) and OneHot with an axis and a dtype (OneHot, then a Transpose that
// moves the new axis into place).
#include <numeric>

#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/ops.h"

namespace pf::ops {

Operation Group(const Scope& s, const std::vector<Operation>& inputs) {
  NodeBuilder b(s, "NoOp", "group_deps");
  for (const Operation& op : inputs) {
    if (op.node == nullptr) throw Error(errors::InvalidArgument("Group: an input is null"));
    b.ControlInput(op.node);
  }
  return b.Finalize();
}

Output XwPlusB(const Scope& s, Output x, Output weights, Output biases) {
  // The sum takes the scope's op name (default "xw_plus_b", TensorFlow's), the product does not.
  Output mm = MatMul(s.NewSubScope(""), x, weights);
  return NodeBuilder(s, "BiasAdd", "xw_plus_b").Input(mm).Input(biases).Finalize();
}

Output OneHot(const Scope& s, Output indices, int64_t depth, const OneHotAttrs& attrs) {
  const pf::Shape& in = indices.shape();
  const int rank = in.rank();
  const bool last = attrs.axis == -1 || (rank >= 0 && attrs.axis == rank);
  if (!last && (rank < 0 || attrs.axis < -1 || attrs.axis > rank)) {
    throw Error(errors::InvalidArgument(
        "OneHot (", s.Qualify("one_hot"), "): Expected axis to be -1 or between [0, ",
        rank < 0 ? std::string("rank of indices, which is unknown") : std::to_string(rank),
        "].  But received: ", attrs.axis, " (indices shape ", in.ToString(), ")"));
  }
  Scope at = last ? s : s.NewSubScope("one_hot");
  Output out = NodeBuilder(at, "OneHot", "one_hot")
                   .Input(indices)
                   .Attr("depth", depth)
                   .Attr("on_value", static_cast<float>(attrs.on_value))
                   .Attr("off_value", static_cast<float>(attrs.off_value))
                   .Attr("T", attrs.dtype)
                   .Finalize();
  if (last) return out;
  // [indices dims..., depth] -> depth at `axis`.
  std::vector<int32_t> perm(rank + 1);
  std::iota(perm.begin(), perm.begin() + attrs.axis, 0);
  perm[attrs.axis] = rank;
  std::iota(perm.begin() + attrs.axis + 1, perm.end(), attrs.axis);
  return Transpose(s, out, perm);
}

}  // namespace pf::ops
