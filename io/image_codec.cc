#include "placeflow/io/image_codec.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "placeflow/core/allocator.h"
#include "placeflow/io/png_zlib.h"

#if defined(PF_WITH_IMAGES)
#include <jpeglib.h>
// jerror.h after jpeglib.h: ERREXIT, WARNMS and the message codes.
#include <jerror.h>
#include <png.h>
#endif

namespace pf::image {

Format SniffFormat(std::string_view b) {
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (starts("\xff\xd8\xff")) return Format::kJpeg;
  if (starts("\x89PNG\r\n\x1a\n")) return Format::kPng;
  if (starts("GIF87a") || starts("GIF89a")) return Format::kGif;
  if (starts("BM")) return Format::kBmp;
  return Format::kUnknown;
}

const char* FormatName(Format f) {
  switch (f) {
    case Format::kJpeg:
      return "JPEG";
    case Format::kPng:
      return "PNG";
    case Format::kGif:
      return "GIF";
    case Format::kBmp:
      return "BMP";
    default:
      return "unknown";
  }
}

namespace {

Status CheckImage(const Tensor& image, const char* what, int max_channels) {
  if (!image.IsInitialized() || image.rank() != 3 || image.dtype() != DT_UINT8 ||
      image.shape().dim(2) < 1 || image.shape().dim(2) > max_channels) {
    return errors::InvalidArgument(what, " takes a [height, width, channels] uint8 image of 1 to ",
                                   max_channels, " channels, got ", DTypeName(image.dtype()), " ",
                                   image.shape().ToString());
  }
  if (image.shape().dim(0) <= 0 || image.shape().dim(1) <= 0 || image.shape().dim(0) > (1 << 24) ||
      image.shape().dim(1) > (1 << 24)) {
    return errors::InvalidArgument(what, ": image of shape ", image.shape().ToString(),
                                   " is empty or too large");
  }
  return Status::OK();
}

// EncodePng's arguments, whichever encoder runs.
Status CheckEncodePng(const Tensor& image, int compression) {
  PF_RETURN_IF_ERROR(CheckImage(image, "EncodePng", 4));
  if (compression < -1 || compression > 9)
    return errors::InvalidArgument("EncodePng: compression must be -1 to 9, got ", compression);
  return Status::OK();
}

}  // namespace

#if defined(PF_WITH_IMAGES)

bool Available() { return true; }

namespace {

// ---- JPEG (libjpeg API) ----
// libjpeg reports errors by calling error_exit, which must not return: it longjmps back to the
// function that set `jump`. Those functions hold only trivially destructible locals.
struct JpegError {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}
void JpegQuiet(j_common_ptr, int) {}  // warnings (corrupt data) are not printed

// A source over memory that, when the data ends early, inserts an end-of-image marker once if
// asked to recover (libjpeg then fills the rest), and otherwise suspends: the scanline reader
// then returns no lines and the decode fails as truncated (TensorFlow's behaviour).
struct JpegSource {
  jpeg_source_mgr pub;
  const JOCTET* data;
  size_t size;
  bool recover;
  bool inserted_eoi;
};
const JOCTET kEoi[2] = {0xff, JPEG_EOI};
void SrcInit(j_decompress_ptr) {}
boolean SrcFill(j_decompress_ptr cinfo) {
  auto* src = reinterpret_cast<JpegSource*>(cinfo->src);
  if (src->pub.next_input_byte == src->data && src->pub.bytes_in_buffer == 0) {
    ERREXIT(cinfo, JERR_INPUT_EMPTY);
  }
  if (!src->recover) return FALSE;
  if (src->inserted_eoi) ERREXIT(cinfo, JERR_FILE_READ);
  WARNMS(cinfo, JWRN_JPEG_EOF);
  src->inserted_eoi = true;
  src->pub.next_input_byte = kEoi;
  src->pub.bytes_in_buffer = 2;
  return TRUE;
}
void SrcSkip(j_decompress_ptr cinfo, long n) {  // NOLINT(runtime/int): libjpeg's type
  auto* src = reinterpret_cast<JpegSource*>(cinfo->src);
  if (n <= 0) return;
  if (static_cast<size_t>(n) <= src->pub.bytes_in_buffer) {
    src->pub.next_input_byte += n;
    src->pub.bytes_in_buffer -= static_cast<size_t>(n);
    return;
  }
  src->pub.next_input_byte += src->pub.bytes_in_buffer;  // past the end: as for more data
  src->pub.bytes_in_buffer = 0;
  SrcFill(cinfo);
}
void SrcTerm(j_decompress_ptr) {}

struct JpegDecoder {
  jpeg_decompress_struct cinfo;
  JpegError err;
  JpegSource src;
};

// The largest decoded image, in bytes (TensorFlow's limit too).
constexpr int64_t kMaxImageBytes = int64_t{1} << 29;

// Whether the file is CMYK (or YCCK): libjpeg gives it as CMYK, converted to RGB here.
bool IsCmyk(const jpeg_decompress_struct& c) { return c.num_components == 4; }

// Reads the header and starts decompression with `o`; false (err.message set) on error, or on
// an image too large to decode.
bool JpegStart(JpegDecoder* d, const JpegOptions& o) {
  if (setjmp(d->err.jump)) return false;
  if (jpeg_read_header(&d->cinfo, TRUE) != JPEG_HEADER_OK) {
    std::snprintf(d->err.message, sizeof(d->err.message),
                  "truncated file: the data ends in the "
                  "header");
    return false;
  }
  if (IsCmyk(d->cinfo)) {
    d->cinfo.out_color_space = JCS_CMYK;  // libjpeg converts CMYK to nothing else
  } else if (o.channels == 1 || (o.channels == 0 && d->cinfo.num_components == 1)) {
    d->cinfo.out_color_space = JCS_GRAYSCALE;
  } else {
    d->cinfo.out_color_space = JCS_RGB;
  }
  d->cinfo.scale_num = 1;
  d->cinfo.scale_denom = static_cast<unsigned>(o.ratio);
  d->cinfo.do_fancy_upsampling = o.fancy_upscaling ? TRUE : FALSE;
  d->cinfo.dct_method = o.dct_method == "INTEGER_ACCURATE" ? JDCT_ISLOW : JDCT_IFAST;
  jpeg_calc_output_dimensions(&d->cinfo);
  // Checked before libjpeg allocates anything of the image's size.
  const int64_t bytes = int64_t{d->cinfo.output_width} * d->cinfo.output_height *
                        std::max(d->cinfo.output_components, 3);
  if (d->cinfo.output_width == 0 || d->cinfo.output_height == 0 || bytes >= kMaxImageBytes) {
    std::snprintf(d->err.message, sizeof(d->err.message),
                  "image of %ux%u pixels is empty or too large (at most 2^29 bytes decoded)",
                  d->cinfo.output_width, d->cinfo.output_height);
    return false;
  }
  jpeg_start_decompress(&d->cinfo);
  return true;
}

// A CMYK row (Adobe's inverted values when the file says so) as RGB, or gray.
void CmykRow(const uint8_t* cmyk, int64_t width, bool adobe, int channels, uint8_t* out) {
  for (int64_t i = 0; i < width; ++i) {
    int v[3];
    const int k = cmyk[4 * i + 3];
    for (int j = 0; j < 3; ++j) {
      const int c = cmyk[4 * i + j];
      v[j] = adobe ? c * k / 255 : (255 - c) * (255 - k) / 255;
    }
    if (channels == 1) {
      out[i] = static_cast<uint8_t>((v[0] * 299 + v[1] * 587 + v[2] * 114 + 500) / 1000);
    } else {
      for (int j = 0; j < 3; ++j) out[3 * i + j] = static_cast<uint8_t>(v[j]);
    }
  }
}

// Reads the lines into `out` (rows of `stride` bytes; a CMYK file's through `cmyk`, a row of
// 4 * width bytes, converted to `channels`); false on error. *lines: lines read.
bool JpegRead(JpegDecoder* d, uint8_t* out, size_t stride, uint8_t* cmyk, int channels,
              JDIMENSION* lines) {
  if (setjmp(d->err.jump)) return false;
  while (d->cinfo.output_scanline < d->cinfo.output_height) {
    uint8_t* dst = out + static_cast<size_t>(d->cinfo.output_scanline) * stride;
    JSAMPROW row = cmyk != nullptr ? cmyk : dst;
    if (jpeg_read_scanlines(&d->cinfo, &row, 1) == 0) break;  // the data ended (suspended)
    if (cmyk != nullptr)
      CmykRow(cmyk, d->cinfo.output_width, d->cinfo.saw_Adobe_marker, channels, dst);
    *lines = d->cinfo.output_scanline;
  }
  return true;
}

bool JpegFinish(JpegDecoder* d) {
  if (setjmp(d->err.jump)) return false;
  if (d->cinfo.output_scanline == d->cinfo.output_height) jpeg_finish_decompress(&d->cinfo);
  return true;
}

// ---- PNG (libpng) ----
struct PngReader {
  std::string_view data;
  size_t at = 0;
  char message[256] = {0};
};
void PngRead(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (r->data.size() - r->at < n) png_error(png, "PNG data ends early (truncated file)");
  std::memcpy(out, r->data.data() + r->at, n);
  r->at += n;
}
void PngErrorFn(png_structp png, png_const_charp msg) {
  auto* r = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof(r->message), "%s", msg);
  png_longjmp(png, 1);
}
void PngWarningFn(png_structp, png_const_charp) {}

struct PngInfo {
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, channels = 0;
};

// Reads the header and sets the transformations TensorFlow's decode_png applies; false on error.
bool PngStart(png_structp png, png_infop info, int want_channels, int want_bits, PngInfo* out) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  png_get_IHDR(png, info, &out->width, &out->height, &out->bit_depth, &out->color_type, nullptr,
               nullptr, nullptr);
  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  int channels = want_channels;
  if (channels == 0) {
    channels = out->color_type == PNG_COLOR_TYPE_PALETTE ? (has_trns ? 4 : 3)
                                                         : png_get_channels(png, info);
  }
  const bool has_alpha = (out->color_type & PNG_COLOR_MASK_ALPHA) != 0;
  if (channels % 2 == 0) {  // alpha wanted
    if (!has_alpha) {
      if (has_trns) {
        png_set_tRNS_to_alpha(png);
      } else {
        png_set_add_alpha(png, (1u << want_bits) - 1, PNG_FILLER_AFTER);
      }
    }
  } else if (has_alpha || has_trns) {
    png_set_strip_alpha(png);
  }
  if (out->bit_depth > 8 && want_bits <= 8) png_set_strip_16(png);
  png_set_packing(png);
  png_set_interlace_handling(png);
  if (out->color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  const bool is_gray = (out->color_type & PNG_COLOR_MASK_COLOR) == 0;
  if (is_gray && out->bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (channels < 3 && !is_gray) png_set_rgb_to_gray(png, 1, 0.299, 0.587);
  if (channels >= 3 && is_gray) png_set_gray_to_rgb(png);
  png_read_update_info(png, info);
  out->channels = channels;
  if (png_get_channels(png, info) != channels) png_error(png, "channel conversion failed");
  return true;
}

bool PngRows(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

struct PngWriter {
  std::string out;
  char message[256] = {0};
};
void PngWrite(png_structp png, png_bytep data, png_size_t n) {
  static_cast<PngWriter*>(png_get_io_ptr(png))->out.append(reinterpret_cast<char*>(data), n);
}
void PngFlush(png_structp) {}
void PngWriteError(png_structp png, png_const_charp msg) {
  auto* w = static_cast<PngWriter*>(png_get_error_ptr(png));
  std::snprintf(w->message, sizeof(w->message), "%s", msg);
  png_longjmp(png, 1);
}

bool PngEncode(png_structp png, png_infop info, const Tensor& image, int compression,
               png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  static const int kColor[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                               PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  const int bits = 8;
  png_set_IHDR(png, info, static_cast<png_uint_32>(image.shape().dim(1)),
               static_cast<png_uint_32>(image.shape().dim(0)), bits, kColor[image.shape().dim(2)],
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, compression);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}

// A destination that appends to a string, 64 KiB at a time (libjpeg's own memory destination
// reallocates behind the caller's pointer, which an error leaves dangling).
struct JpegSink {
  jpeg_destination_mgr pub;
  std::string* out;
  JOCTET buffer[1 << 16];
};
void SinkInit(j_compress_ptr c) {
  auto* s = reinterpret_cast<JpegSink*>(c->dest);
  s->pub.next_output_byte = s->buffer;
  s->pub.free_in_buffer = sizeof(s->buffer);
}
boolean SinkFlush(j_compress_ptr c) {
  auto* s = reinterpret_cast<JpegSink*>(c->dest);
  s->out->append(reinterpret_cast<const char*>(s->buffer), sizeof(s->buffer));
  SinkInit(c);
  return TRUE;
}
void SinkTerm(j_compress_ptr c) {
  auto* s = reinterpret_cast<JpegSink*>(c->dest);
  s->out->append(reinterpret_cast<const char*>(s->buffer),
                 sizeof(s->buffer) - s->pub.free_in_buffer);
}

struct JpegEncoder {
  jpeg_compress_struct cinfo;
  JpegError err;
  JpegSink sink;
};

bool JpegEncode(JpegEncoder* e, const Tensor& image, int quality) {
  if (setjmp(e->err.jump)) return false;
  jpeg_create_compress(&e->cinfo);
  e->sink.pub.init_destination = SinkInit;
  e->sink.pub.empty_output_buffer = SinkFlush;
  e->sink.pub.term_destination = SinkTerm;
  e->cinfo.dest = &e->sink.pub;
  e->cinfo.image_width = static_cast<JDIMENSION>(image.shape().dim(1));
  e->cinfo.image_height = static_cast<JDIMENSION>(image.shape().dim(0));
  e->cinfo.input_components = static_cast<int>(image.shape().dim(2));
  e->cinfo.in_color_space = e->cinfo.input_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&e->cinfo);
  jpeg_set_quality(&e->cinfo, quality, TRUE);
  jpeg_start_compress(&e->cinfo, TRUE);
  const size_t stride = static_cast<size_t>(image.shape().dim(1) * image.shape().dim(2));
  const uint8_t* px = image.data<uint8_t>();
  while (e->cinfo.next_scanline < e->cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(px) + e->cinfo.next_scanline * stride;
    jpeg_write_scanlines(&e->cinfo, &row, 1);
  }
  jpeg_finish_compress(&e->cinfo);
  return true;
}

}  // namespace

StatusOr<Tensor> DecodeJpeg(std::string_view bytes, const JpegOptions& o) {
  if (o.channels != 0 && o.channels != 1 && o.channels != 3)
    return errors::InvalidArgument("DecodeJpeg: channels must be 0, 1 or 3, got ", o.channels);
  if (o.ratio != 1 && o.ratio != 2 && o.ratio != 4 && o.ratio != 8)
    return errors::InvalidArgument("DecodeJpeg: ratio must be 1, 2, 4 or 8, got ", o.ratio);
  if (!o.dct_method.empty() && o.dct_method != "INTEGER_FAST" && o.dct_method != "INTEGER_ACCURATE")
    return errors::InvalidArgument("DecodeJpeg: dct_method must be '', 'INTEGER_FAST' or ",
                                   "'INTEGER_ACCURATE', got '", o.dct_method, "'");
  if (SniffFormat(bytes) != Format::kJpeg) {
    return errors::InvalidArgument("Invalid JPEG data (", bytes.size(),
                                   " bytes): not a JPEG file (it starts like a ",
                                   FormatName(SniffFormat(bytes)), " file)");
  }
  JpegDecoder d{};
  d.cinfo.err = jpeg_std_error(&d.err.pub);
  d.err.pub.error_exit = JpegErrorExit;
  d.err.pub.emit_message = JpegQuiet;
  jpeg_create_decompress(&d.cinfo);
  d.src.pub = {nullptr, 0, SrcInit, SrcFill, SrcSkip, jpeg_resync_to_restart, SrcTerm};
  d.src.data = reinterpret_cast<const JOCTET*>(bytes.data());
  d.src.size = bytes.size();
  d.src.pub.next_input_byte = d.src.data;
  d.src.pub.bytes_in_buffer = bytes.size();
  d.src.recover = o.try_recover_truncated;
  d.cinfo.src = &d.src.pub;
  auto fail = [&](const std::string& why) {
    jpeg_destroy_decompress(&d.cinfo);
    return errors::InvalidArgument("Invalid JPEG data (", bytes.size(), " bytes): ", why);
  };
  if (!JpegStart(&d, o)) return fail(d.err.message);
  const bool cmyk = IsCmyk(d.cinfo);
  const int64_t h = d.cinfo.output_height, w = d.cinfo.output_width;
  const int64_t c = cmyk ? (o.channels == 1 ? 1 : 3) : d.cinfo.output_components;
  // Not zeroed: every line is written, or zeroed below when the data ends early.
  StatusOr<Tensor> allocated = Tensor::Allocate(CpuAllocator(), DT_UINT8, Shape{h, w, c});
  if (!allocated.ok()) {
    jpeg_destroy_decompress(&d.cinfo);
    return allocated.status();
  }
  Tensor out = std::move(*allocated);
  std::vector<uint8_t> cmyk_row(cmyk ? static_cast<size_t>(4 * w) : 0);
  JDIMENSION lines = 0;
  if (!JpegRead(&d, out.data<uint8_t>(), static_cast<size_t>(w * c),
                cmyk ? cmyk_row.data() : nullptr, static_cast<int>(c), &lines))
    return fail(d.err.message);
  // The data ended early: the lines not read stay 0, if enough were (TensorFlow's rule).
  if (lines < d.cinfo.output_height &&
      static_cast<double>(lines) < o.acceptable_fraction * static_cast<double>(h)) {
    return fail("premature end of data (truncated file): " + std::to_string(lines) + " of " +
                std::to_string(h) + " lines decoded, fewer than acceptable_fraction " +
                std::to_string(o.acceptable_fraction) + " of them");
  }
  if (lines < d.cinfo.output_height) {
    std::memset(out.data<uint8_t>() + static_cast<size_t>(lines) * static_cast<size_t>(w * c), 0,
                static_cast<size_t>((h - lines) * w * c));
  }
  if (!JpegFinish(&d)) return fail(d.err.message);
  jpeg_destroy_decompress(&d.cinfo);
  return out;
}

StatusOr<Tensor> DecodePng(std::string_view bytes, int channels, DType dtype) {
  if (channels < 0 || channels > 4)
    return errors::InvalidArgument("DecodePng: channels must be 0 to 4, got ", channels);
  if (dtype != DT_UINT8) {
    return errors::Unimplemented("DecodePng: dtype ", DTypeName(dtype),
                                 ": placeflow decodes images as uint8 only (no uint16 dtype yet)");
  }
  if (SniffFormat(bytes) != Format::kPng) {
    return errors::InvalidArgument("Invalid PNG data (", bytes.size(),
                                   " bytes): not a PNG file (it starts like a ",
                                   FormatName(SniffFormat(bytes)), " file)");
  }
  PngReader reader{bytes};
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, PngErrorFn, PngWarningFn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return errors::ResourceExhausted("DecodePng: out of memory");
  }
  png_set_read_fn(png, &reader, PngRead);
  auto fail = [&](const std::string& why) {
    png_destroy_read_struct(&png, &info, nullptr);
    return errors::InvalidArgument("Invalid PNG data (", bytes.size(), " bytes): ", why);
  };
  const int want_bits = 8;
  PngInfo pi;
  if (!PngStart(png, info, channels, want_bits, &pi)) return fail(reader.message);
  const int64_t h = pi.height, w = pi.width, c = pi.channels;
  if (h <= 0 || w <= 0 || h * w * c >= kMaxImageBytes) {
    return fail("image of " + std::to_string(w) + "x" + std::to_string(h) +
                " pixels is empty or too large");
  }
  Tensor out(DT_UINT8, Shape{h, w, c});
  const size_t stride = static_cast<size_t>(w * c);
  std::vector<png_bytep> rows(static_cast<size_t>(h));
  for (int64_t y = 0; y < h; ++y)
    rows[y] = static_cast<png_bytep>(out.raw_data()) + static_cast<size_t>(y) * stride;
  if (!PngRows(png, info, rows.data())) return fail(reader.message);
  png_destroy_read_struct(&png, &info, nullptr);
  return out;
}

StatusOr<Tensor> DecodeImage(std::string_view bytes, int channels, DType dtype) {
  switch (SniffFormat(bytes)) {
    case Format::kJpeg: {
      if (channels != 0 && channels != 1 && channels != 3) {
        return errors::InvalidArgument("DecodeImage: a JPEG has 1 or 3 channels, asked for ",
                                       channels);
      }
      if (dtype != DT_UINT8)
        return errors::Unimplemented("DecodeImage: dtype ", DTypeName(dtype), ": uint8 only");
      JpegOptions o;
      o.channels = channels;
      return DecodeJpeg(bytes, o);
    }
    case Format::kPng:
      return DecodePng(bytes, channels, dtype);
    case Format::kUnknown:
      return errors::InvalidArgument(
          "Unknown image file format (", bytes.size(),
          " bytes): one of JPEG or PNG is required (GIF and BMP are not supported)");
    default:
      return errors::Unimplemented("DecodeImage: ", FormatName(SniffFormat(bytes)),
                                   " files are not supported (JPEG and PNG are)");
  }
}

StatusOr<std::string> EncodePng(const Tensor& image, int compression) {
  PF_RETURN_IF_ERROR(CheckEncodePng(image, compression));
  PngWriter writer;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &writer, PngWriteError, PngWarningFn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    return errors::ResourceExhausted("EncodePng: out of memory");
  }
  png_set_write_fn(png, &writer, PngWrite, PngFlush);
  const int64_t h = image.shape().dim(0);
  const size_t stride = static_cast<size_t>(image.shape().dim(1) * image.shape().dim(2));
  std::vector<png_bytep> rows(static_cast<size_t>(h));
  for (int64_t y = 0; y < h; ++y)
    rows[y] = const_cast<png_bytep>(static_cast<const png_byte*>(image.raw_data())) +
              static_cast<size_t>(y) * stride;
  const bool ok = PngEncode(png, info, image, compression, rows.data());
  png_destroy_write_struct(&png, &info);
  if (!ok) return errors::Internal("EncodePng: ", writer.message);
  return std::move(writer.out);
}

StatusOr<std::string> EncodeJpeg(const Tensor& image, int quality) {
  PF_RETURN_IF_ERROR(CheckImage(image, "EncodeJpeg", 3));
  if (image.shape().dim(2) == 2)
    return errors::InvalidArgument("EncodeJpeg: an image of 1 or 3 channels, got 2");
  if (quality < 0 || quality > 100)
    return errors::InvalidArgument("EncodeJpeg: quality must be 0 to 100, got ", quality);
  if (image.shape().dim(0) > 65500 || image.shape().dim(1) > 65500)
    return errors::InvalidArgument("EncodeJpeg: JPEG images are at most 65500 pixels a side");
  auto e = std::make_unique<JpegEncoder>();  // its 64 KiB buffer stays off the stack
  std::string out;
  e->sink.out = &out;
  e->cinfo.err = jpeg_std_error(&e->err.pub);
  e->err.pub.error_exit = JpegErrorExit;
  e->err.pub.emit_message = JpegQuiet;
  const bool ok = JpegEncode(e.get(), image, quality);
  jpeg_destroy_compress(&e->cinfo);
  if (!ok) return errors::Internal("EncodeJpeg: ", e->err.message);
  return out;
}

#else  // without libjpeg and libpng

bool Available() { return false; }

namespace {
Status NotBuilt(const char* what) {
  return errors::Unimplemented(what,
                               ": this build of placeflow has no image codecs (libjpeg "
                               "and libpng were not found: install libjpeg62-turbo-dev and "
                               "libpng-dev, then rebuild)");
}
}  // namespace

StatusOr<Tensor> DecodeJpeg(std::string_view, const JpegOptions&) { return NotBuilt("DecodeJpeg"); }
StatusOr<Tensor> DecodePng(std::string_view, int, DType) { return NotBuilt("DecodePng"); }
StatusOr<Tensor> DecodeImage(std::string_view, int, DType) { return NotBuilt("DecodeImage"); }
// Without libpng a PNG all the same (image summaries need one in every build): zlib only.
StatusOr<std::string> EncodePng(const Tensor& image, int compression) {
  PF_RETURN_IF_ERROR(CheckEncodePng(image, compression));
  return EncodePngUnfiltered(static_cast<const uint8_t*>(image.raw_data()), image.shape().dim(0),
                             image.shape().dim(1), image.shape().dim(2), compression);
}
StatusOr<std::string> EncodeJpeg(const Tensor&, int) { return NotBuilt("EncodeJpeg"); }

#endif

}  // namespace pf::image
