// JPEG and PNG files to pixels and back, as TensorFlow's decode_jpeg, decode_png, decode_image,
// encode_jpeg and encode_png do it (libjpeg-turbo's libjpeg API and libpng; built with
// PF_WITH_IMAGES when both are found). Images are [height, width, channels] tensors in host
// memory, uint8 (placeflow has no uint16 dtype yet: a 16-bit PNG is read as uint8, its high
// bytes, as TF's decode_png(dtype=uint8) does). Used by the image ops (ops/image/) and the
// image-folder dataset (data/image_folder.cc).
//
//   pf::StatusOr<pf::Tensor> rgb = pf::image::DecodeJpeg(bytes, {.channels = 3});
//   pf::StatusOr<std::string> png = pf::image::EncodePng(*rgb);
//
// Bad input never crashes: a corrupt, truncated or unknown file is InvalidArgument with the
// decoder's reason (the callers add the op or the file name).
#pragma once

#include <string>
#include <string_view>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"

namespace pf::image {

// Whether this build decodes images (libjpeg and libpng were found).
bool Available();

enum class Format { kJpeg, kPng, kGif, kBmp, kUnknown };
// From the first bytes (magic numbers), as tf.io.decode_image sniffs.
Format SniffFormat(std::string_view bytes);
const char* FormatName(Format f);

struct JpegOptions {
  int channels = 0;  // 0: as in the file (1 or 3), 1: grayscale, 3: RGB
  int ratio = 1;     // downscaling while decoding: 1, 2, 4 or 8
  bool fancy_upscaling = true;
  // A truncated file: libjpeg decodes what is there and fills the rest (TensorFlow's fake
  // end-of-image marker), instead of stopping at the last complete line.
  bool try_recover_truncated = false;
  // The fraction of lines that must have been decoded; the lines missing are 0.
  float acceptable_fraction = 1.f;
  std::string dct_method;  // "" (libjpeg's fast integer DCT, TF's default), "INTEGER_FAST",
                           // "INTEGER_ACCURATE"
};
StatusOr<Tensor> DecodeJpeg(std::string_view bytes, const JpegOptions& options = {});

// channels 0 (as in the file), 1, 2 (gray + alpha), 3 or 4; dtype DT_UINT8 (anything else is
// Unimplemented). A 16-bit file keeps the high byte of each value.
StatusOr<Tensor> DecodePng(std::string_view bytes, int channels = 0, DType dtype = DT_UINT8);

// JPEG or PNG, sniffed; channels as for DecodePng (a JPEG: 0, 1 or 3); dtype DT_UINT8.
StatusOr<Tensor> DecodeImage(std::string_view bytes, int channels = 0, DType dtype = DT_UINT8);

// image: [height, width, channels] uint8, channels 1 to 4. compression: -1 (zlib's default)
// to 9.
StatusOr<std::string> EncodePng(const Tensor& image, int compression = -1);
// image: [height, width, 1 or 3] uint8; quality 0 to 100.
StatusOr<std::string> EncodeJpeg(const Tensor& image, int quality = 95);

}  // namespace pf::image
