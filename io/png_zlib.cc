#include "placeflow/io/png_zlib.h"

#include <zlib.h>

namespace pf::image {
namespace {

void PutU32(std::string* s, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  s->append(b, 4);
}

// length, type, data, CRC of type and data.
void PutChunk(std::string* png, const char type[4], const std::string& data) {
  PutU32(png, static_cast<uint32_t>(data.size()));
  const std::string body = std::string(type, 4) + data;
  png->append(body);
  PutU32(png, static_cast<uint32_t>(
                  crc32(0L, reinterpret_cast<const Bytef*>(body.data()), body.size())));
}

}  // namespace

StatusOr<std::string> EncodePngUnfiltered(const uint8_t* pixels, int64_t height, int64_t width,
                                          int64_t channels, int compression) {
  static const char kColourType[] = {0, 0, 4, 2, 6};  // by channels: gray, +alpha, RGB, RGBA
  std::string png("\x89PNG\r\n\x1a\n", 8), ihdr;
  PutU32(&ihdr, static_cast<uint32_t>(width));
  PutU32(&ihdr, static_cast<uint32_t>(height));
  // Bit depth 8, the colour type, deflate, filtering method 0, no interlace.
  ihdr += {8, kColourType[channels], 0, 0, 0};
  PutChunk(&png, "IHDR", ihdr);
  const size_t row = static_cast<size_t>(width * channels);
  std::string raw;
  raw.reserve((row + 1) * static_cast<size_t>(height));
  for (int64_t y = 0; y < height; ++y) {
    raw += '\0';  // the row's filter type: none
    raw.append(reinterpret_cast<const char*>(pixels) + static_cast<size_t>(y) * row, row);
  }
  uLongf size = compressBound(raw.size());
  std::string idat(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(idat.data()), &size,
                reinterpret_cast<const Bytef*>(raw.data()), raw.size(),
                compression < 0 ? Z_DEFAULT_COMPRESSION : compression) != Z_OK) {
    return errors::Internal("EncodePng: zlib could not deflate a ", height, "x", width, "x",
                            channels, " image");
  }
  idat.resize(size);
  PutChunk(&png, "IDAT", idat);
  PutChunk(&png, "IEND", "");
  return png;
}

}  // namespace pf::image
