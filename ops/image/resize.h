// Bilinear and nearest-neighbour resizing as TensorFlow's ResizeBilinear and
// ResizeNearestNeighbor compute them (legacy, align_corners and half_pixel_centers
// coordinates), with their gradients. Shared by the resize kernels (resize_ops.cc) and the
// image-folder dataset (data/image_folder.cc). Images are [batch, height, width, channels],
// row-major, in host memory.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "placeflow/ops/simd/vec_kernels.h"

namespace pf::image {

struct ResizeMode {
  bool align_corners = false;
  bool half_pixel_centers = false;
};

// How far apart, in input pixels, two neighbouring output pixels are.
inline float ResizeScale(int64_t in, int64_t out, bool align_corners) {
  return align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

// Per output coordinate: the two input coordinates it lies between and its weight on the
// second (bilinear).
struct Lerp {
  int64_t lower, upper;
  float frac;
};
inline std::vector<Lerp> BilinearLerps(int64_t in, int64_t out, ResizeMode m) {
  std::vector<Lerp> l(static_cast<size_t>(out));
  const float scale = ResizeScale(in, out, m.align_corners);
  for (int64_t i = 0; i < out; ++i) {
    const float src = m.half_pixel_centers ? (static_cast<float>(i) + 0.5f) * scale - 0.5f
                                           : static_cast<float>(i) * scale;
    const float f = std::floor(src);
    l[i] = {std::clamp<int64_t>(static_cast<int64_t>(f), 0, in - 1),
            std::clamp<int64_t>(static_cast<int64_t>(std::ceil(src)), 0, in - 1), src - f};
  }
  return l;
}

// Per output coordinate: the input coordinate nearest to it.
inline std::vector<int64_t> NearestIndices(int64_t in, int64_t out, ResizeMode m) {
  std::vector<int64_t> idx(static_cast<size_t>(out));
  const float scale = ResizeScale(in, out, m.align_corners);
  for (int64_t i = 0; i < out; ++i) {
    const float src = m.half_pixel_centers ? (static_cast<float>(i) + 0.5f) * scale
                                           : static_cast<float>(i) * scale;
    int64_t j = static_cast<int64_t>(m.align_corners ? std::round(src) : std::floor(src));
    j = std::min(j, in - 1);
    if (m.half_pixel_centers) j = std::max<int64_t>(j, 0);
    idx[i] = j;
  }
  return idx;
}

// Input row `src` ([w, c]) interpolated across to the output's width ([ow, c], float): the
// scalar loop, for rows too long for LerpGather's int32 offsets.
template <typename T>
void LerpRow(const T* src, const std::vector<Lerp>& xs, int64_t c, float* dst) {
  for (size_t x = 0; x < xs.size(); ++x) {
    const T* l = src + xs[x].lower * c;
    const T* r = src + xs[x].upper * c;
    const float fx = xs[x].frac;
    for (int64_t k = 0; k < c; ++k) {
      const float a = static_cast<float>(l[k]);
      dst[x * c + k] = a + (static_cast<float>(r[k]) - a) * fx;
    }
  }
}

// The step across a row per output element (x * c + k): the offsets of its two input values in
// the input row and the weight on the second, for simd::LerpGather.
struct RowLerps {
  std::vector<int32_t> lower, upper;
  std::vector<float> frac;
};
inline RowLerps ElementLerps(const std::vector<Lerp>& xs, int64_t c) {
  RowLerps r;
  const size_t n = xs.size() * static_cast<size_t>(c);
  r.lower.resize(n);
  r.upper.resize(n);
  r.frac.resize(n);
  for (size_t x = 0; x < xs.size(); ++x) {
    for (int64_t k = 0; k < c; ++k) {
      const size_t i = x * static_cast<size_t>(c) + static_cast<size_t>(k);
      r.lower[i] = static_cast<int32_t>(xs[x].lower * c + k);
      r.upper[i] = static_cast<int32_t>(xs[x].upper * c + k);
      r.frac[i] = xs[x].frac;
    }
  }
  return r;
}

// out[b, y, x, c] from in[b, h, w, c]: bilinear, computed in float with TensorFlow's operations
// in TensorFlow's order (across each of the two input rows, then between them). An input row
// is converted to float and interpolated across once however many output rows use it (gathers,
// vec_kernels.h), and the step between the rows runs over whole rows; both are Highway kernels,
// so every CPU target gives the same bits.
template <typename T, typename U>
void ResizeBilinearImpl(const T* in, int64_t batch, int64_t h, int64_t w, int64_t c, U* out,
                        int64_t oh, int64_t ow, ResizeMode m) {
  const std::vector<Lerp> ys = BilinearLerps(h, oh, m), xs = BilinearLerps(w, ow, m);
  const int64_t n = ow * c;
  const bool gather = w * c <= std::numeric_limits<int32_t>::max();
  const RowLerps across = gather ? ElementLerps(xs, c) : RowLerps{};
  std::vector<float> rows(static_cast<size_t>(2 * n));  // two input rows, across
  // Other types' rows converted to float; bytes are gathered as they are.
  constexpr bool kConvert = !std::is_same_v<T, float> && !std::is_same_v<T, uint8_t>;
  std::vector<float> in_row(kConvert && gather ? static_cast<size_t>(w * c) : 0);
  const T* const end = in + batch * h * w * c;
  std::vector<uint8_t> padded;  // bytes: the input's last row, with 3 readable bytes after it
  auto lerp_row = [&](const T* src, float* dst) {
    if (!gather) return LerpRow(src, xs, c, dst);
    if constexpr (std::is_same_v<T, uint8_t>) {
      // Bytes are gathered 4 at a time: the last row goes through a copy with room after it.
      if (src + w * c + 3 > end) {
        padded.assign(src, end);
        padded.resize(static_cast<size_t>(w * c) + 3);
        src = padded.data();
      }
      return simd::LerpGatherU8(src, across.lower.data(), across.upper.data(), across.frac.data(),
                                dst, n);
    }
    const float* s;
    if constexpr (std::is_same_v<T, float>) {
      s = src;
    } else {
      std::transform(src, src + w * c, in_row.begin(), [](T v) { return static_cast<float>(v); });
      s = in_row.data();
    }
    simd::LerpGather(s, across.lower.data(), across.upper.data(), across.frac.data(), dst, n);
  };
  for (int64_t b = 0; b < batch; ++b) {
    const T* img = in + b * h * w * c;
    int64_t cached[2] = {-1, -1};
    for (int64_t y = 0; y < oh; ++y) {
      float* across_rows[2];
      for (int s = 0; s < 2; ++s) {
        const int64_t src = s == 0 ? ys[y].lower : ys[y].upper;
        int slot = cached[0] == src ? 0 : cached[1] == src ? 1 : -1;
        if (slot < 0) {  // the slot the other row does not use
          const int64_t other = s == 0 ? ys[y].upper : ys[y].lower;
          slot = cached[0] == other ? 1 : 0;
          lerp_row(img + src * w * c, rows.data() + slot * n);
          cached[slot] = src;
        }
        across_rows[s] = rows.data() + slot * n;
      }
      const float fy = ys[y].frac;
      const float* t = across_rows[0];
      const float* bo = across_rows[1];
      U* row = out + ((b * oh + y) * ow) * c;
      if constexpr (std::is_same_v<U, float>) {
        simd::Lerp(t, bo, fy, row, n);
      } else {
        for (int64_t i = 0; i < n; ++i) row[i] = static_cast<U>(t[i] + (bo[i] - t[i]) * fy);
      }
    }
  }
}

// The gradient of ResizeBilinearImpl: grad [batch, oh, ow, c] spread onto [batch, h, w, c]
// (`out`, zeroed here).
template <typename T>
void ResizeBilinearGradImpl(const float* grad, int64_t batch, int64_t oh, int64_t ow, int64_t c,
                            T* out, int64_t h, int64_t w, ResizeMode m) {
  std::fill(out, out + batch * h * w * c, T(0));
  const std::vector<Lerp> ys = BilinearLerps(h, oh, m), xs = BilinearLerps(w, ow, m);
  for (int64_t b = 0; b < batch; ++b) {
    T* img = out + b * h * w * c;
    for (int64_t y = 0; y < oh; ++y) {
      T* top = img + ys[y].lower * w * c;
      T* bottom = img + ys[y].upper * w * c;
      const float fy = ys[y].frac;
      const float* g = grad + ((b * oh + y) * ow) * c;
      for (int64_t x = 0; x < ow; ++x) {
        const int64_t l = xs[x].lower * c, r = xs[x].upper * c;
        const float fx = xs[x].frac;
        for (int64_t k = 0; k < c; ++k) {
          const float v = g[x * c + k];
          top[l + k] += static_cast<T>(v * (1 - fy) * (1 - fx));
          top[r + k] += static_cast<T>(v * (1 - fy) * fx);
          bottom[l + k] += static_cast<T>(v * fy * (1 - fx));
          bottom[r + k] += static_cast<T>(v * fy * fx);
        }
      }
    }
  }
}

// Nearest neighbour; `Grad`: false copies in -> out ([.., oh, ow, ..] from [.., h, w, ..]); true
// adds each of `in` ([.., oh, ow, ..], a gradient) onto the pixel of `out` ([.., h, w, ..],
// zeroed) it came from.
template <bool Grad, typename T>
void ResizeNearestImpl(const T* in, int64_t batch, int64_t h, int64_t w, int64_t c, T* out,
                       int64_t oh, int64_t ow, ResizeMode m) {
  const std::vector<int64_t> ys = NearestIndices(h, oh, m), xs = NearestIndices(w, ow, m);
  if constexpr (Grad) std::fill(out, out + batch * h * w * c, T(0));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        const int64_t small = ((b * oh + y) * ow + x) * c;
        const int64_t big = ((b * h + ys[y]) * w + xs[x]) * c;
        for (int64_t k = 0; k < c; ++k) {
          if constexpr (Grad) {
            out[big + k] += in[small + k];
          } else {
            out[small + k] = in[big + k];
          }
        }
      }
    }
  }
}

}  // namespace pf::image
