// Element types. float16/bfloat16 are storage-only: tensors hold them, kernels do not compute on
// them.
//
//   pf::DType t = pf::DT_FLOAT;
//   pf::DTypeName(t) == "float";  pf::DTypeSize(t) == 4;
//   static_assert(pf::DataTypeOf<int64_t>() == pf::DT_INT64);
#pragma once

#include <cstdint>
#include <string_view>

#include "placeflow/core/status.h"

namespace pf {

enum DType : int8_t {
  DT_INVALID = 0,
  DT_FLOAT,
  DT_DOUBLE,
  DT_INT32,
  DT_INT64,
  DT_BOOL,
  DT_HALF,
  DT_BFLOAT16,
};

std::string_view DTypeName(DType t);  // TensorFlow's names: float, double, int32, int64, bool, half
size_t DTypeSize(DType t);
StatusOr<DType> ParseDType(std::string_view name);

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <typename T>
constexpr DType DataTypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DT_FLOAT;
  else if constexpr (std::is_same_v<T, double>)
    return DT_DOUBLE;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DT_INT32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DT_INT64;
  else if constexpr (std::is_same_v<T, bool>)
    return DT_BOOL;
  else if constexpr (std::is_same_v<T, Half>)
    return DT_HALF;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return DT_BFLOAT16;
  else
    return DT_INVALID;
}

// Calls fn(T{}) with the C++ type of `t` for the computable types; returns false for others.
template <typename Fn>
bool VisitDType(DType t, Fn&& fn) {
  switch (t) {
    case DT_FLOAT:
      fn(float{});
      return true;
    case DT_DOUBLE:
      fn(double{});
      return true;
    case DT_INT32:
      fn(int32_t{});
      return true;
    case DT_INT64:
      fn(int64_t{});
      return true;
    case DT_BOOL:
      fn(bool{});
      return true;
    default:
      return false;
  }
}

}  // namespace pf
