#include "placeflow/core/dtype.h"

namespace pf {

std::string_view DTypeName(DType t) {
  switch (t) {
    case DT_FLOAT:
      return "float";
    case DT_DOUBLE:
      return "double";
    case DT_INT32:
      return "int32";
    case DT_INT64:
      return "int64";
    case DT_BOOL:
      return "bool";
    case DT_HALF:
      return "half";
    case DT_BFLOAT16:
      return "bfloat16";
    case DT_UINT8:
      return "uint8";
    case DT_STRING:
      return "string";
    case DT_INT8:
      return "int8";
    case DT_INT16:
      return "int16";
    case DT_INVALID:
      break;
  }
  return "invalid";
}

size_t DTypeSize(DType t) {
  switch (t) {
    case DT_FLOAT:
    case DT_INT32:
      return 4;
    case DT_DOUBLE:
    case DT_INT64:
      return 8;
    case DT_BOOL:
    case DT_UINT8:
    case DT_INT8:
      return 1;
    case DT_STRING:
      return sizeof(std::string);
    case DT_HALF:
    case DT_BFLOAT16:
    case DT_INT16:
      return 2;
    case DT_INVALID:
      break;
  }
  return 0;
}

StatusOr<DType> ParseDType(std::string_view name) {
  for (DType t : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL, DT_HALF, DT_BFLOAT16, DT_UINT8,
                  DT_STRING, DT_INT8, DT_INT16}) {
    if (DTypeName(t) == name) return t;
  }
  if (name == "float32") return DT_FLOAT;
  if (name == "float64") return DT_DOUBLE;
  if (name == "float16") return DT_HALF;
  return errors::InvalidArgument("Unknown dtype '", name, "'");
}

}  // namespace pf
