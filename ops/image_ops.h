// Image ops, as TensorFlow's tf.io.decode_* / encode_* and tf.image.resize (CPU kernels; the
// codecs need a build with libjpeg and libpng: io/image_codec.h, image::Available()).
//
//   pf::Output bytes = pf::ops::ReadFile(root, path);                  // or a fed string
//   pf::Output rgb = pf::ops::DecodeImage(root, bytes, {.channels = 3}); // uint8 [h, w, 3]
//   pf::Output x = pf::ops::Resize(root, rgb, {224, 224});               // float [224, 224, 3]
//
// Decoders take a string scalar (one file's bytes) and return [height, width, channels]; a
// corrupt, truncated or unknown file fails the step with InvalidArgument naming the node and
// the decoder's reason. Resize ops take [batch, height, width, channels] (Resize also takes
// [height, width, channels]) and have gradients with respect to the images.
#pragma once

#include <string>

#include "placeflow/graph/scope.h"

namespace pf::ops {

struct DecodeJpegAttrs {
  int channels = 0;  // 0: as in the file, 1: grayscale, 3: RGB
  int ratio = 1;     // 1, 2, 4 or 8: decode at 1/ratio of the size
  bool fancy_upscaling = true;
  bool try_recover_truncated = false;
  float acceptable_fraction = 1.f;
  std::string dct_method;  // "", "INTEGER_FAST" or "INTEGER_ACCURATE"
};
Output DecodeJpeg(const Scope& s, Output contents, const DecodeJpegAttrs& attrs = {});
// channels 0 (as in the file), 1, 2, 3 or 4; dtype DT_UINT8 (a 16-bit file keeps its high bytes;
// placeflow has no uint16 dtype yet).
Output DecodePng(const Scope& s, Output contents, int channels = 0, DType dtype = DT_UINT8);
struct DecodeImageAttrs {
  int channels = 0;
  DType dtype = DT_UINT8;  // DT_UINT8 or DT_FLOAT (scaled to [0, 1], as TF's)
};
// A JPEG or a PNG, told apart by its first bytes (tf.io.decode_image, expand_animations
// irrelevant: GIF is not supported).
Output DecodeImage(const Scope& s, Output contents, const DecodeImageAttrs& attrs = {});
// image: uint8 [h, w, 1..4]; compression -1 (zlib's default) to 9.
Output EncodePng(const Scope& s, Output image, int compression = -1);
// image: uint8 [h, w, 1 or 3]; quality 0 to 100.
Output EncodeJpeg(const Scope& s, Output image, int quality = 95);
// The bytes of a file (tf.io.read_file): a string scalar.
Output ReadFile(const Scope& s, Output filename);

struct ResizeAttrs {
  bool align_corners = false;
  bool half_pixel_centers = false;  // TF 2's tf.image.resize sets it
};
// images: [batch, h, w, c] of a real type; size: int32 [2] (new height, new width). Output
// float (ResizeBilinear) or the images' dtype (ResizeNearestNeighbor).
Output ResizeBilinear(const Scope& s, Output images, Output size, const ResizeAttrs& attrs = {});
Output ResizeNearestNeighbor(const Scope& s, Output images, Output size,
                             const ResizeAttrs& attrs = {});

// tf.image.resize (TF 2): "bilinear" (float output) or "nearest" (the images' dtype), with half
// pixel centers; images [batch, h, w, c] or [h, w, c].
Output Resize(const Scope& s, Output images, std::vector<int64_t> size,
              const std::string& method = "bilinear");

}  // namespace pf::ops
