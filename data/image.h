// Image augmentation for the CNN models, as map functions: each takes component
// `options.component` of an element, an image of height x width x channels floats (HWC; any
// shape with that many elements, MNIST's flat [784] included, and the same shape comes out),
// and draws its randomness from (seed, pass, element index) (MapContext::Seed): the same at
// every num_parallel_calls.
//
//   ImageOptions io{.height = 28, .width = 28, .channels = 1};
//   ds = ds.Map(pf::data::RandomCropWithPadding(io, /*pad=*/2, /*seed=*/7), 2)
//          .Map(pf::data::RandomFlipLeftRight(io, 8))
//          .Map(pf::data::Normalize(io, {0.2860f}, {0.3530f}));
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "placeflow/data/dataset.h"

namespace pf::data {

struct ImageOptions {
  int64_t height = 28, width = 28, channels = 1;
  int component = 0;  // which component of the element is the image
};

// Pads with `pad` zeros on every side and crops height x width at a uniformly drawn offset in
// [0, 2 * pad] x [0, 2 * pad] (TensorFlow's pad_to_bounding_box + random_crop).
MapFn RandomCropWithPadding(const ImageOptions& o, int64_t pad, uint64_t seed);
// Mirrors the image left-right with probability 1/2.
MapFn RandomFlipLeftRight(const ImageOptions& o, uint64_t seed);
// (x - mean[c]) / std[c] per channel (one value each: every channel).
MapFn Normalize(const ImageOptions& o, std::vector<float> mean, std::vector<float> std);

// The single-image operations the map functions apply (float HWC, checked: errors name the
// shapes). crop_y, crop_x in [0, 2 * pad].
StatusOr<Tensor> CropWithPadding(const Tensor& image, const ImageOptions& o, int64_t pad,
                                 int64_t crop_y, int64_t crop_x);
StatusOr<Tensor> FlipLeftRight(const Tensor& image, const ImageOptions& o);

}  // namespace pf::data
