// CRC-32C. With ISA-L (Debian's libisal-dev, PF_HAVE_ISAL) crc32_iscsi, which folds several
// streams with carry-less multiplies; without it the SSE4.2 crc32 instruction on one stream of
// 8-byte words, which every x86-64 CPU since 2008 has (pf-bench's `crc32c` figure compares
// them). A bitwise loop only for a CPU without SSE4.2.
#include <cstring>

#include "placeflow/io/record_io.h"

#if defined(PF_HAVE_ISAL)
#include <isa-l/crc.h>
#endif
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace pf::io {
namespace {

// The raw (pre- and post-inverted by the caller) CRC register over `n` bytes.
uint32_t BitwiseUpdate(uint32_t c, const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    c ^= static_cast<unsigned char>(p[i]);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Sse42Update(uint32_t crc, const char* p, size_t n) {
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, static_cast<unsigned char>(*p));
  return c32;
}
bool HaveSse42() {
  static const bool have = __builtin_cpu_supports("sse4.2");
  return have;
}
#endif

uint32_t FallbackUpdate(uint32_t c, const char* p, size_t n) {
#if defined(__x86_64__)
  if (HaveSse42()) return Sse42Update(c, p, n);
#endif
  return BitwiseUpdate(c, p, n);
}

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, std::string_view data) {
  uint32_t c = ~crc;
#if defined(PF_HAVE_ISAL)
  // crc32_iscsi takes the register as it is (no inversion) and an int length.
  const char* p = data.data();
  size_t n = data.size();
  while (n > 0) {
    const size_t chunk = std::min<size_t>(n, size_t{1} << 30);
    c = crc32_iscsi(reinterpret_cast<unsigned char*>(const_cast<char*>(p)), static_cast<int>(chunk),
                    c);
    p += chunk;
    n -= chunk;
  }
#else
  c = FallbackUpdate(c, data.data(), data.size());
#endif
  return ~c;
}

uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data); }

uint32_t Crc32cSse42(std::string_view data) {
  return ~FallbackUpdate(~0u, data.data(), data.size());
}

uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

uint32_t MaskedCrc32c(std::string_view data) { return MaskCrc(Crc32c(data)); }

std::string_view Crc32cImplementation() {
#if defined(PF_HAVE_ISAL)
  return "isa-l";
#else
#if defined(__x86_64__)
  if (HaveSse42()) return "sse4.2";
#endif
  return "bitwise";
#endif
}

}  // namespace pf::io
