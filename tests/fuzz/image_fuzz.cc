// The JPEG and PNG decoders (io/image_codec.h) on arbitrary bytes. The first byte picks the
// decoder and its options; whatever decodes must have a consistent shape and survive a PNG
// round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "placeflow/io/image_codec.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || !pf::image::Available()) return 0;
  const uint8_t mode = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  pf::StatusOr<pf::Tensor> image = pf::Status::OK();
  if ((mode & 3) == 0) {
    pf::image::JpegOptions o;
    o.channels = (mode >> 2) % 3 == 2 ? 3 : (mode >> 2) % 3;
    o.ratio = 1 << ((mode >> 4) & 3);
    o.try_recover_truncated = (mode & 0x40) != 0;
    o.acceptable_fraction = (mode & 0x80) != 0 ? 0.5f : 1.f;
    o.dct_method = (mode & 0x80) != 0 ? "INTEGER_ACCURATE" : "";
    image = pf::image::DecodeJpeg(bytes, o);
  } else if ((mode & 3) == 1) {
    image = pf::image::DecodePng(bytes, (mode >> 2) % 5);
  } else {
    image = pf::image::DecodeImage(bytes, (mode >> 2) % 2 == 0 ? 0 : 3);
  }
  if (!image.ok()) return 0;
  CHECK(image->dtype() == pf::DT_UINT8 && image->rank() == 3);
  CHECK(image->dim(0) > 0 && image->dim(1) > 0 && image->dim(2) >= 1 && image->dim(2) <= 4);
  if (image->num_elements() > (1 << 20)) return 0;  // a round trip of a huge image is slow
  pf::StatusOr<std::string> png = pf::image::EncodePng(*image, 1);
  CHECK(png.ok());
  pf::StatusOr<pf::Tensor> back = pf::image::DecodePng(*png);
  CHECK(back.ok() && back->shape() == image->shape());
  CHECK(std::string_view(static_cast<const char*>(back->raw_data()), back->TotalBytes()) ==
        std::string_view(static_cast<const char*>(image->raw_data()), image->TotalBytes()));
  return 0;
}
