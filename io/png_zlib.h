// A PNG file written with zlib alone: 8-bit gray, gray+alpha, RGB or RGBA (1 to 4 channels),
// rows deflated without filtering (filter type 0), which every PNG reader decodes. EncodePng
// (image_codec.h) uses it in builds without libpng, so image summaries work in every build.
#pragma once

#include <cstdint>
#include <string>

#include "placeflow/core/status.h"

namespace pf::image {

// pixels: `height` rows of width * channels bytes; compression -1 (zlib's default) to 9.
StatusOr<std::string> EncodePngUnfiltered(const uint8_t* pixels, int64_t height, int64_t width,
                                          int64_t channels, int compression);

}  // namespace pf::image
