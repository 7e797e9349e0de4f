// Element types. float16/bfloat16 are storage-only: tensors hold them, kernels do not compute on
// them. DT_UINT8 holds bytes (images, DecodeRaw). DT_STRING elements are std::string objects in
// host memory only: they are constructed and destroyed with the buffer, never memcpy'd, and a
// copy of a DT_STRING tensor to a device that is not the host is refused.
//
//   pf::DType t = pf::DT_FLOAT;
//   pf::DTypeName(t) == "float";  pf::DTypeSize(t) == 4;
//   static_assert(pf::DataTypeOf<int64_t>() == pf::DT_INT64);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

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
  DT_UINT8,
  DT_STRING,
};

std::string_view DTypeName(DType t);  // TensorFlow's names: float, double, int32, int64, bool,
                                      // half, bfloat16, uint8, string
// Bytes per element; for DT_STRING sizeof(std::string), which is no size to memcpy.
size_t DTypeSize(DType t);
// Whether the elements are plain bytes that may be memcpy'd (every dtype but DT_STRING).
inline bool DTypeIsPod(DType t) { return t != DT_STRING; }
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
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DT_UINT8;
  else if constexpr (std::is_same_v<T, std::string>)
    return DT_STRING;
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
