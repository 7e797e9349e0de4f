// Element types. DT_HALF and DT_BFLOAT16 are 16-bit floats held as bits (Half, BFloat16): the
// kernels that take them compute in float and round back to nearest even (FloatToHalf,
// FloatToBFloat16). DT_UINT8 holds bytes (images, DecodeRaw); DT_INT8 and DT_INT16 are TF's small
// integers. DT_STRING elements are std::string objects in host memory only: they are constructed
// and destroyed with the buffer, never memcpy'd, and a copy of a DT_STRING tensor to a device that
// is not the host is refused. Every dtype but DT_STRING is numeric (DTypeIsNumeric).
//
//   pf::DType t = pf::DT_FLOAT;
//   pf::DTypeName(t) == "float";  pf::DTypeSize(t) == 4;
//   static_assert(pf::DataTypeOf<int64_t>() == pf::DT_INT64);
#pragma once

#include <bit>
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
  DT_INT8,  // appended: the numbers are placeflow's own (graph/proto_codecs.cc maps TF's)
  DT_INT16,
};

std::string_view DTypeName(DType t);  // TensorFlow's names: float, double, int32, int64, bool,
                                      // half, bfloat16, uint8, string, int8, int16
// Bytes per element; for DT_STRING sizeof(std::string), which is no size to memcpy.
size_t DTypeSize(DType t);
// Whether the elements are plain bytes that may be memcpy'd (every dtype but DT_STRING).
inline bool DTypeIsPod(DType t) { return t != DT_STRING; }
// Whether the elements are numbers (bool counts as 0/1): every valid dtype but DT_STRING.
inline bool DTypeIsNumeric(DType t) { return t != DT_STRING && t != DT_INVALID; }
// The floating-point dtypes: float, double, half, bfloat16.
inline bool DTypeIsFloating(DType t) {
  return t == DT_FLOAT || t == DT_DOUBLE || t == DT_HALF || t == DT_BFLOAT16;
}
StatusOr<DType> ParseDType(std::string_view name);

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// IEEE binary16 <-> float. Rounds to nearest, ties to even; values from 65520 up become inf;
// NaN stays NaN (quiet), the sign is kept on zeros, infinities and NaNs.
inline Half FloatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  x &= 0x7fffffff;
  if (x >= 0x7f800000) return {static_cast<uint16_t>(sign | (x > 0x7f800000 ? 0x7e00 : 0x7c00))};
  if (x >= 0x477ff000) return {static_cast<uint16_t>(sign | 0x7c00)};  // >= 65520: inf
  if (x >= 0x38800000) {  // a normal half: rebias the exponent, round the 13 dropped bits
    x += 0xfff + ((x >> 13) & 1);
    return {static_cast<uint16_t>(sign | ((x - 0x38000000) >> 13))};
  }
  // Subnormal or zero: adding 0.5f puts the half's mantissa, rounded by the FPU to nearest
  // even, in the low bits.
  const float aligned = std::bit_cast<float>(x) + 0.5f;
  return {static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(aligned) - 0x3f000000))};
}
inline float HalfToFloat(Half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000) << 16;
  const uint32_t em = h.bits & 0x7fff;
  if (em >= 0x7c00) return std::bit_cast<float>(sign | 0x7f800000 | ((em & 0x3ff) << 13));
  if (em >= 0x400) return std::bit_cast<float>(sign | ((em << 13) + 0x38000000));
  const float f = static_cast<float>(em) * 5.9604644775390625e-8f;  // em * 2^-24, exact
  return sign ? -f : f;
}
// bfloat16 (float's top 16 bits) <-> float: rounds to nearest, ties to even; NaN stays NaN.
inline BFloat16 FloatToBFloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return {static_cast<uint16_t>((x >> 16) | 0x40)};
  x += 0x7fff + ((x >> 16) & 1);
  return {static_cast<uint16_t>(x >> 16)};
}
inline float BFloat16ToFloat(BFloat16 b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b.bits) << 16);
}

// float and the 16-bit floats through float, for kernels templated on their storage type:
// ToFloat(v) widens exactly; FromFloat<T>(f) rounds as the functions above.
inline float ToFloat(float v) { return v; }
inline float ToFloat(Half v) { return HalfToFloat(v); }
inline float ToFloat(BFloat16 v) { return BFloat16ToFloat(v); }
template <typename T>
T FromFloat(float v) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>);
  if constexpr (std::is_same_v<T, Half>) {
    return FloatToHalf(v);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return FloatToBFloat16(v);
  } else {
    return v;
  }
}

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
  else if constexpr (std::is_same_v<T, int8_t>)
    return DT_INT8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DT_INT16;
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

// Calls fn(T{}) with the C++ type of any numeric dtype (VisitDType's, and Half, BFloat16,
// uint8_t, int8_t, int16_t); returns false for DT_STRING and DT_INVALID.
template <typename Fn>
bool VisitNumericDType(DType t, Fn&& fn) {
  switch (t) {
    case DT_HALF:
      fn(Half{});
      return true;
    case DT_BFLOAT16:
      fn(BFloat16{});
      return true;
    case DT_UINT8:
      fn(uint8_t{});
      return true;
    case DT_INT8:
      fn(int8_t{});
      return true;
    case DT_INT16:
      fn(int16_t{});
      return true;
    default:
      return VisitDType(t, fn);
  }
}

}  // namespace pf
