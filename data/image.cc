#include "placeflow/data/image.h"

#include <fmt/format.h>

namespace pf::data {
namespace {

Status CheckImage(const Tensor& t, const ImageOptions& o, const char* op) {
  if (!t.IsInitialized() || t.dtype() != DT_FLOAT ||
      t.num_elements() != o.height * o.width * o.channels) {
    return errors::InvalidArgument(
        op, " needs a float image of ", o.height, "x", o.width, "x", o.channels, " = ",
        o.height * o.width * o.channels, " elements, got ",
        t.IsInitialized() ? std::string(DTypeName(t.dtype())) : "an empty tensor", " ",
        t.shape().ToString());
  }
  return Status::OK();
}

Status CheckComponent(const Element& e, const ImageOptions& o, const char* op) {
  if (o.component < 0 || o.component >= static_cast<int>(e.size())) {
    return errors::InvalidArgument(op, ": the element has ", e.size(), " components, no component ",
                                   o.component);
  }
  return CheckImage(e[o.component], o, op);
}

}  // namespace

StatusOr<Tensor> CropWithPadding(const Tensor& image, const ImageOptions& o, int64_t pad,
                                 int64_t crop_y, int64_t crop_x) {
  PF_RETURN_IF_ERROR(CheckImage(image, o, "CropWithPadding"));
  if (pad < 0 || crop_y < 0 || crop_x < 0 || crop_y > 2 * pad || crop_x > 2 * pad) {
    return errors::InvalidArgument("CropWithPadding: offset (", crop_y, ", ", crop_x,
                                   ") outside [0, ", 2 * pad, "] for padding ", pad);
  }
  Tensor out(DT_FLOAT, image.shape());
  const float* in = image.data<float>();
  float* dst = out.data<float>();
  const int64_t h = o.height, w = o.width, c = o.channels;
  for (int64_t y = 0; y < h; ++y) {
    const int64_t sy = y + crop_y - pad;  // row of the source image (outside: padding)
    for (int64_t x = 0; x < w; ++x) {
      const int64_t sx = x + crop_x - pad;
      const bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
      for (int64_t k = 0; k < c; ++k)
        dst[(y * w + x) * c + k] = inside ? in[(sy * w + sx) * c + k] : 0.f;
    }
  }
  return out;
}

StatusOr<Tensor> FlipLeftRight(const Tensor& image, const ImageOptions& o) {
  PF_RETURN_IF_ERROR(CheckImage(image, o, "FlipLeftRight"));
  Tensor out(DT_FLOAT, image.shape());
  const float* in = image.data<float>();
  float* dst = out.data<float>();
  const int64_t h = o.height, w = o.width, c = o.channels;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) dst[(y * w + x) * c + k] = in[(y * w + (w - 1 - x)) * c + k];
  return out;
}

MapFn RandomCropWithPadding(const ImageOptions& o, int64_t pad, uint64_t seed) {
  if (pad < 0) throw Error(errors::InvalidArgument("RandomCropWithPadding: pad ", pad, " < 0"));
  return [o, pad, seed](Element e, const MapContext& ctx) -> StatusOr<Element> {
    PF_RETURN_IF_ERROR(CheckComponent(e, o, "RandomCropWithPadding"));
    std::mt19937_64 rng(ctx.Seed(seed));
    std::uniform_int_distribution<int64_t> offset(0, 2 * pad);
    const int64_t dy = offset(rng), dx = offset(rng);
    PF_ASSIGN_OR_RETURN(e[o.component], CropWithPadding(e[o.component], o, pad, dy, dx));
    return e;
  };
}

MapFn RandomFlipLeftRight(const ImageOptions& o, uint64_t seed) {
  return [o, seed](Element e, const MapContext& ctx) -> StatusOr<Element> {
    PF_RETURN_IF_ERROR(CheckComponent(e, o, "RandomFlipLeftRight"));
    std::mt19937_64 rng(ctx.Seed(seed));
    if (rng() & 1) {
      PF_ASSIGN_OR_RETURN(e[o.component], FlipLeftRight(e[o.component], o));
    }
    return e;
  };
}

MapFn Normalize(const ImageOptions& o, std::vector<float> mean, std::vector<float> std) {
  auto fits = [&](const std::vector<float>& v) {
    return v.size() == 1 || static_cast<int64_t>(v.size()) == o.channels;
  };
  if (!fits(mean) || !fits(std)) {
    throw Error(errors::InvalidArgument("Normalize: mean and std need 1 or ", o.channels,
                                        " values, got ", mean.size(), " and ", std.size()));
  }
  for (float s : std)
    if (!(s > 0)) throw Error(errors::InvalidArgument("Normalize: std must be positive, got ", s));
  return [o, mean, std](Element e, const MapContext&) -> StatusOr<Element> {
    PF_RETURN_IF_ERROR(CheckComponent(e, o, "Normalize"));
    const Tensor& in = e[o.component];
    Tensor out(DT_FLOAT, in.shape());
    const float* src = in.data<float>();
    float* dst = out.data<float>();
    const int64_t c = o.channels, n = in.num_elements();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = i % c;
      dst[i] = (src[i] - mean[mean.size() == 1 ? 0 : k]) / std[std.size() == 1 ? 0 : k];
    }
    e[o.component] = std::move(out);
    return e;
  };
}

}  // namespace pf::data
