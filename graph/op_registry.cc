#include "placeflow/graph/op_registry.h"

#include <cassert>

namespace pf {

OpDef& OpDef::Input(std::string name, std::string type) {
  inputs_.push_back({std::move(name), std::move(type), "", false});
  return *this;
}
OpDef& OpDef::RefInput(std::string name, std::string type) {
  inputs_.push_back({std::move(name), std::move(type), "", true});
  return *this;
}
OpDef& OpDef::InputList(std::string name, std::string type, std::string number_attr) {
  inputs_.push_back({std::move(name), std::move(type), std::move(number_attr), false});
  return *this;
}
OpDef& OpDef::Output(std::string name, std::string type) {
  outputs_.push_back({std::move(name), std::move(type), "", false});
  return *this;
}
OpDef& OpDef::OutputList(std::string name, std::string type, std::string number_attr) {
  outputs_.push_back({std::move(name), std::move(type), std::move(number_attr), false});
  return *this;
}
OpDef& OpDef::Attr(std::string name, AttrValue default_value) {
  attrs_[std::move(name)] = std::move(default_value);
  return *this;
}
OpDef& OpDef::RequiredAttr(std::string name) {
  attrs_[std::move(name)] = std::nullopt;
  return *this;
}
OpDef& OpDef::TypeAttr(std::string name, std::vector<DType> allowed,
                       std::optional<DType> default_value) {
  if (allowed.empty()) allowed = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL};
  if (default_value) {
    attrs_[name] = *default_value;
  } else {
    attrs_[name] = std::nullopt;
  }
  type_attrs_[std::move(name)] = std::move(allowed);
  return *this;
}

OpRegistry* OpRegistry::Global() {
  static OpRegistry* r = new OpRegistry();
  return r;
}

void OpRegistry::Register(OpDef def) {
  std::string name = def.name();
  assert(ops_.count(name) == 0 && "op registered twice");
  ops_[name] = std::make_unique<OpDef>(std::move(def));
}

const OpDef* OpRegistry::Find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<std::string> OpRegistry::ListOps() const {
  std::vector<std::string> out;
  for (const auto& [name, def] : ops_) out.push_back(name);
  return out;
}

ShapeContext::ShapeContext(const OpDef& op, const AttrMap& attrs, std::vector<Shape> input_shapes,
                           std::vector<DType> input_dtypes,
                           std::vector<const Tensor*> input_tensors, int num_outputs)
    : op_(op),
      attrs_(attrs),
      input_shapes_(std::move(input_shapes)),
      input_dtypes_(std::move(input_dtypes)),
      input_tensors_(std::move(input_tensors)),
      output_shapes_(num_outputs, Shape::Unknown()) {}

Status ShapeContext::WithRank(int i, int rank) const {
  const Shape& s = input_shapes_[i];
  if (!s.unknown_rank() && s.rank() != rank) {
    return errors::InvalidArgument("Shape must be rank ", rank, " but is rank ", s.rank(),
                                   " (input ", i, " has shape ", s.ToString(), ")");
  }
  return Status::OK();
}

Status ShapeContext::WithRankAtLeast(int i, int rank) const {
  const Shape& s = input_shapes_[i];
  if (!s.unknown_rank() && s.rank() < rank) {
    return errors::InvalidArgument("Shape must be at least rank ", rank, " but is rank ", s.rank(),
                                   " (input ", i, " has shape ", s.ToString(), ")");
  }
  return Status::OK();
}

StatusOr<Shape> ShapeContext::ShapeFromInputTensor(int i, int rank_if_unknown) const {
  const Tensor* t = input_tensors_[i];
  if (t == nullptr) {
    const Shape& s = input_shapes_[i];
    int64_t rank = s.rank() == 1 ? s.dim(0) : rank_if_unknown;
    if (rank < 0) return Shape::Unknown();
    Shape out;
    for (int64_t d = 0; d < rank; ++d) out.AddDim(-1);
    return out;
  }
  if (t->rank() > 1)
    return errors::InvalidArgument("Shape tensor must be rank 0 or 1, got ", t->shape().ToString());
  std::vector<int64_t> dims = t->AsInt64Vector();
  return Shape::FromDims(dims);
}

StatusOr<int> ShapeContext::CanonicalAxis(int64_t axis, int rank) const {
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument("axis ", axis, " is out of range for a tensor of rank ", rank,
                                   "; expected in [", -rank, ", ", rank, ")");
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Status UnchangedShape(ShapeContext& c) { return ShapeOfInput(c, 0); }

Status ShapeOfInput(ShapeContext& c, int input) {
  c.set_output(0, c.input(input));
  return Status::OK();
}

Status NoOutputsShape(ShapeContext&) { return Status::OK(); }

Status ScalarShape(ShapeContext& c) {
  c.set_output(0, Shape{});
  return Status::OK();
}

StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return Shape::Unknown();
  int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) {
    int ai = i - (rank - a.rank());
    int bi = i - (rank - b.rank());
    int64_t da = ai >= 0 ? a.dim(ai) : 1;
    int64_t db = bi >= 0 ? b.dim(bi) : 1;
    int64_t d;
    if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (da == -1 || db == -1)
      d = da == -1 ? db : da;
    else if (da == db)
      d = da;
    else {
      return errors::InvalidArgument("Incompatible shapes: ", a.ToString(), " vs. ", b.ToString());
    }
    out.AddDim(d);
  }
  return out;
}

Status BroadcastBinaryShape(ShapeContext& c) {
  PF_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(c.input(0), c.input(1)));
  c.set_output(0, s);
  return Status::OK();
}

}  // namespace pf
