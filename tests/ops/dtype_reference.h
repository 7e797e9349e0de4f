// Reference conversions for the dtype tests, written apart from the library's: half by rounding
// to the binade's quantum in double arithmetic (IEEE binary16: 10 fraction bits, exponents -14 to
// 15, ties to even; clang 14 has no _Float16 on x86), bfloat16 by comparing the two neighbouring
// bfloat16 values in double, integers by explicit wrap-around or saturation.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "placeflow/core/tensor.h"

namespace pf::testing {

inline bool IsIntegerDType(DType t) {
  return t == DT_INT8 || t == DT_INT16 || t == DT_INT32 || t == DT_INT64 || t == DT_UINT8 ||
         t == DT_BOOL;
}

inline int IntegerBits(DType t) {
  switch (t) {
    case DT_INT8:
    case DT_UINT8:
      return 8;
    case DT_INT16:
      return 16;
    case DT_INT32:
      return 32;
    default:
      return 64;
  }
}

// The nearest IEEE binary16 value to v (ties to even), as a double: v rounded to a multiple of
// its binade's quantum 2^(e - 10) (2^-24 below the normal range); 65520 and beyond overflow.
inline double RefHalf(double v) {
  if (std::isnan(v) || std::isinf(v)) return v;
  if (std::fabs(v) >= 65520) return std::copysign(std::numeric_limits<double>::infinity(), v);
  if (v == 0) return v;
  const int e = std::max(std::ilogb(v), -14);
  const double quantum = std::ldexp(1.0, e - 10);
  return std::nearbyint(v / quantum) * quantum;  // the default rounding: to nearest even
}

// The bits of a binary16 value (one RefHalf returned), and back.
inline uint16_t RefHalfBits(double h) {
  const uint16_t sign = std::signbit(h) ? 0x8000 : 0;
  if (std::isnan(h)) return 0x7e00;
  if (std::isinf(h)) return sign | 0x7c00;
  const double m = std::fabs(h);
  if (m == 0) return sign;
  const int e = std::ilogb(m);
  if (e < -14) return sign | static_cast<uint16_t>(std::ldexp(m, 24));  // subnormal
  const uint16_t fraction = static_cast<uint16_t>(std::ldexp(m, 10 - e) - 1024);
  return sign | static_cast<uint16_t>((e + 15) << 10) | fraction;
}
inline double RefHalfValue(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1 : 1;
  const int exponent = (bits >> 10) & 0x1f, fraction = bits & 0x3ff;
  if (exponent == 0x1f)
    return fraction ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0) return sign * std::ldexp(fraction, -24);
  return sign * std::ldexp(1024 + fraction, exponent - 25);
}

// The nearest bfloat16 to f (ties to even), as a double.
inline double RefBFloat16(float f) {
  if (std::isnan(f) || std::isinf(f)) return f;
  const double mag = std::fabs(static_cast<double>(f));
  uint32_t bits;
  const float fmag = static_cast<float>(mag);
  std::memcpy(&bits, &fmag, 4);
  const uint32_t lo_bits = bits & 0xffff0000u;
  float lo_f;
  std::memcpy(&lo_f, &lo_bits, 4);
  const int e = static_cast<int>((lo_bits >> 23) & 0xff);
  const double ulp = e == 0 ? std::ldexp(1.0, -133) : std::ldexp(1.0, e - 127 - 7);
  const double lo = lo_f, hi = lo + ulp;
  const double d_lo = mag - lo, d_hi = hi - mag;
  const bool lo_even = ((lo_bits >> 16) & 1) == 0;
  double r = (d_lo < d_hi || (d_lo == d_hi && lo_even)) ? lo : hi;
  if (r >= std::ldexp(1.0, 128)) r = std::numeric_limits<double>::infinity();
  return f < 0 ? -r : r;
}

// `v` converted to dtype `t` as Cast documents it (docs/api.md "Dtypes"), as a double:
// from an integer (`from_integer`) to an integer wraps around; from a floating value to an
// integer truncates toward zero and saturates (NaN: 0); to bool is v != 0; to half and
// bfloat16 goes through float.
inline double RefConvert(double v, bool from_integer, DType t) {
  switch (t) {
    case DT_BOOL:
      return v != 0 ? 1 : 0;
    case DT_FLOAT:
      return static_cast<float>(v);
    case DT_DOUBLE:
      return v;
    case DT_HALF:
      return RefHalf(static_cast<float>(v));
    case DT_BFLOAT16:
      return RefBFloat16(static_cast<float>(v));
    default:
      break;
  }
  const int bits = IntegerBits(t);
  const bool is_signed = t != DT_UINT8;
  const double lo = is_signed ? -std::ldexp(1.0, bits - 1) : 0;
  const double hi = is_signed ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
  if (!from_integer) {
    if (std::isnan(v)) return 0;
    const double tr = std::trunc(v);
    return tr <= lo ? lo : tr >= hi ? hi : tr;
  }
  if (bits == 64) return v;  // the tests keep int64 values within 2^53
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const uint64_t m = static_cast<uint64_t>(static_cast<int64_t>(v)) & mask;
  if (is_signed && m >= (uint64_t{1} << (bits - 1))) {
    return static_cast<double>(static_cast<int64_t>(m) - (int64_t{1} << bits));
  }
  return static_cast<double>(m);
}

// Element i of `t` as a double (exact for every dtype but int64 past 2^53).
inline double ElementAsDouble(const Tensor& t, int64_t i) {
  const char* p = static_cast<const char*>(t.raw_data()) + i * DTypeSize(t.dtype());
  auto read = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (t.dtype()) {
    case DT_FLOAT:
      return read(float{});
    case DT_DOUBLE:
      return read(double{});
    case DT_INT32:
      return read(int32_t{});
    case DT_INT64:
      return static_cast<double>(read(int64_t{}));
    case DT_INT8:
      return read(int8_t{});
    case DT_INT16:
      return read(int16_t{});
    case DT_UINT8:
      return read(uint8_t{});
    case DT_BOOL:
      return read(bool{}) ? 1 : 0;
    case DT_HALF:
      return RefHalfValue(read(uint16_t{}));
    case DT_BFLOAT16: {
      const uint32_t bits = static_cast<uint32_t>(read(uint16_t{})) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    default:
      return std::nan("");
  }
}

// A tensor of dtype t holding `values`, each exactly representable in t.
inline Tensor TensorOfDoubles(DType t, const Shape& shape, const std::vector<double>& values) {
  Tensor out(t, shape);
  char* base = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < values.size(); ++i) {
    char* p = base + i * DTypeSize(t);
    const double v = values[i];
    auto write = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
    switch (t) {
      case DT_FLOAT:
        write(static_cast<float>(v));
        break;
      case DT_DOUBLE:
        write(v);
        break;
      case DT_INT32:
        write(static_cast<int32_t>(v));
        break;
      case DT_INT64:
        write(static_cast<int64_t>(v));
        break;
      case DT_INT8:
        write(static_cast<int8_t>(v));
        break;
      case DT_INT16:
        write(static_cast<int16_t>(v));
        break;
      case DT_UINT8:
        write(static_cast<uint8_t>(v));
        break;
      case DT_BOOL:
        write(v != 0);
        break;
      case DT_HALF:
        write(RefHalfBits(RefHalf(v)));
        break;
      case DT_BFLOAT16: {
        const float f = static_cast<float>(v);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        write(static_cast<uint16_t>(bits >> 16));
        break;
      }
      default:
        break;
    }
  }
  return out;
}

// Whether got equals want (NaN equals NaN), or is within `rel` of it relatively.
inline bool SameValue(double got, double want, double rel = 0) {
  if (std::isnan(want)) return std::isnan(got);
  if (got == want) return true;
  return std::fabs(got - want) <= rel * std::fabs(want);
}

}  // namespace pf::testing
