#include "placeflow/graph/proto_codecs.h"

#include <cstring>
#include <vector>

namespace pf {

namespace {

// placeflow's dtypes and TensorFlow's DataType numbers.
const std::vector<std::pair<DType, tensorflow::DataType>>& DTypePairs() {
  static const std::vector<std::pair<DType, tensorflow::DataType>> kPairs = {
      {DT_FLOAT, tensorflow::DT_FLOAT},       {DT_DOUBLE, tensorflow::DT_DOUBLE},
      {DT_INT32, tensorflow::DT_INT32},       {DT_INT64, tensorflow::DT_INT64},
      {DT_BOOL, tensorflow::DT_BOOL},         {DT_HALF, tensorflow::DT_HALF},
      {DT_BFLOAT16, tensorflow::DT_BFLOAT16}, {DT_UINT8, tensorflow::DT_UINT8},
      {DT_STRING, tensorflow::DT_STRING},     {DT_INT8, tensorflow::DT_INT8},
      {DT_INT16, tensorflow::DT_INT16},
  };
  return kPairs;
}

}  // namespace

StatusOr<tensorflow::DataType> DTypeToProto(DType t) {
  for (const auto& [ours, theirs] : DTypePairs())
    if (ours == t) return theirs;
  return errors::InvalidArgument("dtype ", DTypeName(t), " has no GraphDef DataType");
}

StatusOr<DType> DTypeFromProto(int t) {
  // Reference types (a TF 1.x variable's output) are their value types here.
  if (t > 100) t -= 100;
  for (const auto& [ours, theirs] : DTypePairs())
    if (static_cast<int>(theirs) == t) return ours;
  const std::string& name = tensorflow::DataType_Name(static_cast<tensorflow::DataType>(t));
  return errors::Unimplemented("DataType ", name.empty() ? std::to_string(t) : name,
                               " is not supported by placeflow");
}

void ShapeToProto(const Shape& s, tensorflow::TensorShapeProto* p) {
  if (s.unknown_rank()) {
    p->set_unknown_rank(true);
    return;
  }
  for (int64_t d : s.dims()) p->add_dim()->set_size(d);
}

StatusOr<Shape> ShapeFromProto(const tensorflow::TensorShapeProto& p) {
  if (p.unknown_rank()) return Shape::Unknown();
  std::vector<int64_t> dims;
  for (const auto& d : p.dim()) dims.push_back(d.size());
  return Shape::FromDims(dims);
}

Status TensorToProto(const Tensor& t, tensorflow::TensorProto* p) {
  if (!t.IsInitialized()) return errors::InvalidArgument("an uninitialised tensor");
  if (!t.InHostMemory()) return errors::InvalidArgument("a tensor outside host memory");
  PF_ASSIGN_OR_RETURN(tensorflow::DataType dt, DTypeToProto(t.dtype()));
  p->set_dtype(dt);
  ShapeToProto(t.shape(), p->mutable_tensor_shape());
  if (t.dtype() == DT_STRING) {
    for (const std::string& v : t.flat<std::string>()) p->add_string_val(v);
  } else {
    p->set_tensor_content(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }
  return Status();
}

namespace {

// Fills `n` elements of `out` from a typed value list: none (zeros), one (repeated) or n.
template <typename T, typename List>
Status FillFromList(const List& list, Tensor* out) {
  const int64_t n = out->num_elements();
  if (list.size() == 0) return Status();
  if (list.size() != 1 && list.size() != n) {
    return errors::InvalidArgument("TensorProto of shape ", out->shape().ToString(), " has ",
                                   list.size(), " values (expected 1 or ", n, ")");
  }
  T* d = out->data<T>();
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(list.Get(list.size() == 1 ? 0 : i));
  return Status();
}

}  // namespace

StatusOr<Tensor> TensorFromProto(const tensorflow::TensorProto& p) {
  PF_ASSIGN_OR_RETURN(DType dtype, DTypeFromProto(p.dtype()));
  PF_ASSIGN_OR_RETURN(Shape shape, ShapeFromProto(p.tensor_shape()));
  if (!shape.IsFullyDefined())
    return errors::InvalidArgument("TensorProto has a shape that is not fully defined: ",
                                   shape.ToString());
  Tensor t(dtype, shape);
  if (!p.tensor_content().empty() && dtype != DT_STRING) {
    if (p.tensor_content().size() != t.TotalBytes()) {
      return errors::InvalidArgument("TensorProto's tensor_content has ", p.tensor_content().size(),
                                     " bytes, but ", DTypeName(dtype), " ", shape.ToString(),
                                     " needs ", t.TotalBytes());
    }
    std::memcpy(t.raw_data(), p.tensor_content().data(), t.TotalBytes());
    return t;
  }
  Status s;
  switch (dtype) {
    case DT_FLOAT:
      s = FillFromList<float>(p.float_val(), &t);
      break;
    case DT_DOUBLE:
      s = FillFromList<double>(p.double_val(), &t);
      break;
    case DT_INT32:
      s = FillFromList<int32_t>(p.int_val(), &t);
      break;
    case DT_INT64:
      s = FillFromList<int64_t>(p.int64_val(), &t);
      break;
    case DT_BOOL:
      s = FillFromList<bool>(p.bool_val(), &t);
      break;
    case DT_UINT8:
      s = FillFromList<uint8_t>(p.int_val(), &t);
      break;
    case DT_INT8:  // TF keeps the small integers in int_val
      s = FillFromList<int8_t>(p.int_val(), &t);
      break;
    case DT_INT16:
      s = FillFromList<int16_t>(p.int_val(), &t);
      break;
    case DT_STRING: {
      const int64_t n = t.num_elements();
      const auto& list = p.string_val();
      if (list.size() != 0 && list.size() != 1 && list.size() != n)
        return errors::InvalidArgument("TensorProto has ", list.size(), " strings for ", n);
      for (int64_t i = 0; i < n && list.size() > 0; ++i)
        t.flat<std::string>()[i] = list.Get(list.size() == 1 ? 0 : static_cast<int>(i));
      break;
    }
    case DT_HALF:
    case DT_BFLOAT16: {
      const int64_t n = t.num_elements();
      const auto& list = p.half_val();
      if (list.size() != 0 && list.size() != 1 && list.size() != n)
        return errors::InvalidArgument("TensorProto has ", list.size(), " half values for ", n);
      auto* d = static_cast<uint16_t*>(t.raw_data());
      for (int64_t i = 0; i < n && list.size() > 0; ++i)
        d[i] = static_cast<uint16_t>(list.Get(list.size() == 1 ? 0 : i));
      break;
    }
    default:
      return errors::Unimplemented("TensorProto of dtype ", DTypeName(dtype));
  }
  PF_RETURN_IF_ERROR(s);
  return t;
}

Status AttrToProto(const AttrValue& v, tensorflow::AttrValue* p) {
  return std::visit(
      [p](const auto& x) -> Status {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          p->set_b(x);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          p->set_i(x);
        } else if constexpr (std::is_same_v<T, float>) {
          p->set_f(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          p->set_s(x);
        } else if constexpr (std::is_same_v<T, DType>) {
          PF_ASSIGN_OR_RETURN(tensorflow::DataType dt, DTypeToProto(x));
          p->set_type(dt);
        } else if constexpr (std::is_same_v<T, Shape>) {
          ShapeToProto(x, p->mutable_shape());
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          auto* list = p->mutable_list();
          for (int64_t i : x) list->add_i(i);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          auto* list = p->mutable_list();
          for (const std::string& s : x) list->add_s(s);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          PF_RETURN_IF_ERROR(TensorToProto(x, p->mutable_tensor()));
        }
        return Status();
      },
      v);
}

// `declared` is the schema's default for the attr (when it has one): it tells an empty list's
// element type.
StatusOr<AttrValue> AttrFromProto(const tensorflow::AttrValue& p, const AttrValue* declared) {
  switch (p.value_case()) {
    case tensorflow::AttrValue::kS:
      return AttrValue(p.s());
    case tensorflow::AttrValue::kI:
      return AttrValue(static_cast<int64_t>(p.i()));
    case tensorflow::AttrValue::kF:
      return AttrValue(p.f());
    case tensorflow::AttrValue::kB:
      return AttrValue(p.b());
    case tensorflow::AttrValue::kType: {
      PF_ASSIGN_OR_RETURN(DType t, DTypeFromProto(p.type()));
      return AttrValue(t);
    }
    case tensorflow::AttrValue::kShape: {
      PF_ASSIGN_OR_RETURN(Shape s, ShapeFromProto(p.shape()));
      return AttrValue(s);
    }
    case tensorflow::AttrValue::kTensor: {
      PF_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(p.tensor()));
      return AttrValue(t);
    }
    case tensorflow::AttrValue::kList: {
      const auto& l = p.list();
      if (l.f_size() || l.b_size() || l.type_size() || l.shape_size() || l.tensor_size() ||
          l.func_size()) {
        return errors::Unimplemented(
            "list attrs of floats, bools, types, shapes, tensors or "
            "functions are not supported");
      }
      if (l.s_size() > 0 || (l.i_size() == 0 && declared &&
                             std::holds_alternative<std::vector<std::string>>(*declared)))
        return AttrValue(std::vector<std::string>(l.s().begin(), l.s().end()));
      return AttrValue(std::vector<int64_t>(l.i().begin(), l.i().end()));
    }
    case tensorflow::AttrValue::kFunc:
    case tensorflow::AttrValue::kPlaceholder:
      return errors::Unimplemented("function and placeholder attrs are not supported");
    case tensorflow::AttrValue::VALUE_NOT_SET:
      break;
  }
  return errors::InvalidArgument("an attr without a value");
}

}  // namespace pf
