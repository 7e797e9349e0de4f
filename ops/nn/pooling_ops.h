// Checks and window arithmetic of the 2-D pooling ops (pooling_ops.cc): MaxPool, AvgPool,
// MaxPoolGrad, AvgPoolGrad. Shape functions call them with partly known shapes (unknown ranks
// and dims pass, unknown output dims stay -1); the CPU kernels and future cuDNN kernels call
// them with the run-time shapes and take the window geometry from Pool2DGeometry.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// The attrs every pooling op carries (TensorFlow's names; ksize and strides in data_format
// order, batch and channel entries 1).
struct PoolAttrs {
  std::vector<int64_t> ksize;
  std::vector<int64_t> strides;
  std::string padding;      // "SAME" or "VALID"
  std::string data_format;  // "NHWC" or "NCHW"
};

// TensorFlow's window arithmetic for one spatial dim: VALID out = ceil((in - k + 1) / s),
// SAME out = ceil(in / s) with pad_total = max((out - 1) * s + k - in, 0) split as
// pad_before = pad_total / 2 (the extra row or column goes after). -1 where `in` is unknown.
struct PoolDim {
  int64_t in = -1, window = 1, stride = 1, out = -1, pad_before = 0, pad_after = 0;
};

// Everything a kernel needs: sizes in logical N, H, W, C terms whatever the layout; `nchw`
// says how they are laid out in memory. Fields are -1 where the input dim is unknown.
struct Pool2DGeometry {
  bool nchw = false;
  int64_t batch = -1, channels = -1;
  PoolDim h, w;

  Shape InputShape() const;   // in data_format order
  Shape OutputShape() const;  // in data_format order
  // Memory strides of one logical step in H, W and C within one image (layout-dependent).
  int64_t InStrideH() const { return nchw ? w.in : w.in * channels; }
  int64_t InStrideW() const { return nchw ? 1 : channels; }
  int64_t InStrideC() const { return nchw ? h.in * w.in : 1; }
  int64_t OutStrideH() const { return nchw ? w.out : w.out * channels; }
  int64_t OutStrideW() const { return nchw ? 1 : channels; }
  int64_t OutStrideC() const { return nchw ? h.out * w.out : 1; }
  int64_t InImageSize() const { return h.in * w.in * channels; }
  int64_t OutImageSize() const { return h.out * w.out * channels; }
};

// Reads the pooling attrs of a node or shape context's attr map.
template <typename Attrs>
PoolAttrs ReadPoolAttrs(const Attrs& a) {
  return {a.template attr<std::vector<int64_t>>("ksize"),
          a.template attr<std::vector<int64_t>>("strides"), a.template attr<std::string>("padding"),
          a.template attr<std::string>("data_format")};
}

// Checks the attrs and the 4-D input (`op` names the op in messages) and fills the geometry.
// Errors: rank, ksize/strides length and sign, pooling over batch or depth, padding and
// data_format strings, a negative VALID output size.
Status ComputePool2DGeometry(std::string_view op, const Shape& input, const PoolAttrs& attrs,
                             Pool2DGeometry* geo);
// The gradient ops' extra checks: `grad` (and MaxPoolGrad's orig_output) has the forward
// output's shape.
Status ValidatePoolGrad(std::string_view op, const Pool2DGeometry& geo, const Shape& grad,
                        std::string_view what);

}  // namespace pf
