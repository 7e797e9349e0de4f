// A folder of images, one subfolder per class, as a dataset (Keras's
// tf.keras.utils.image_dataset_from_directory, without its batching: add .Batch()).
//
//   pf::data::ImageFolderOptions o;
//   o.image_size = {224, 224};
//   o.validation_split = 0.2;
//   o.subset = "training";
//   pf::data::ImageFolder train = pf::data::FromImageFolder("cats_vs_dogs", o).ValueOrThrow();
//   // train.dataset: (float [224, 224, 3] in 0..255, int32 [] label); train.class_names
//   auto batches = train.dataset.Shuffle(1000, 1).Batch(64).Prefetch(2);
//
// Classes are the subfolders in sorted order (labels 0, 1, ...); files whose extension is not
// an image's (.jpg, .jpeg, .png; .gif and .bmp are listed as TF does but fail to decode) are
// skipped and counted, as Keras skips them. Each element is decoded (io/image_codec.h) and
// resized bilinearly with half-pixel centers (tf.image.resize) in a parallel Map; a file that
// does not decode fails GetNext with InvalidArgument naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "placeflow/data/dataset.h"

namespace pf::data {

struct ImageFolderOptions {
  std::vector<int64_t> image_size = {256, 256};  // height, width (Keras's default)
  int channels = 3;                              // 1 (grayscale), 3 (rgb) or 4 (rgba)
  bool shuffle = true;  // the file order, from seed (Keras shuffles files, then splits)
  uint64_t seed = 0;
  double validation_split = 0;             // the fraction of files kept for "validation"
  std::string subset;                      // "training", "validation", or "" (all files)
  int num_parallel_calls = 2;              // decoding and resizing threads
  std::string interpolation = "bilinear";  // or "nearest"
};

struct ImageFolder {
  Dataset dataset;
  std::vector<std::string> class_names;
  int64_t num_files = 0;           // in this subset
  int64_t num_skipped = 0;         // files that are not images, in every class
  std::vector<int64_t> per_class;  // files per class in this subset
  // The subset's files in the dataset's order, and their labels.
  std::vector<std::string> files;
  std::vector<int32_t> labels;
};

// Errors (InvalidArgument, NotFound): no such folder, no class subfolder, no image at all,
// bad options (image size, channels, split without a subset, or a subset without a split).
StatusOr<ImageFolder> FromImageFolder(const std::string& dir,
                                      const ImageFolderOptions& options = {});

// One encoded image (JPEG or PNG bytes: a file's, or a TFRecord's image/encoded) as
// FromImageFolder's elements have it: decoded to o.channels, resized to o.image_size by
// o.interpolation, float [height, width, channels] in 0..255. The decoder's errors as
// io/image_codec.h gives them. `into`: a float tensor of that shape to write the image into (and
// return), instead of a new one.
StatusOr<Tensor> DecodeAndResize(std::string_view bytes, const ImageFolderOptions& o,
                                 const Tensor* into = nullptr);

}  // namespace pf::data
