// MNIST-style data as TFRecord files of tf.Example (what pf-data convert writes: image_raw bytes,
// label int64), read through the input pipeline: records are batched first, then each batch of
// serialized examples is parsed at once (TensorFlow's advice: batch before parse).
//
//   auto files = pf::tfrecord_input::Files(dir, pf::data::Split::kTrain).value();
//   auto batches = pf::data::Dataset::FromTFRecord(files).Shuffle(n, 1).Batch(100)
//                      .Map(parse, 2);  // parse(e) = ParseMnistBatch(e[0]): (float [100, 784],
//                      int32 [100])
#pragma once

#include <string>
#include <vector>

#include "placeflow/data/dataset.h"
#include "placeflow/data/idx.h"

namespace pf::tfrecord_input {

// Whether this placeflow parses tf.Example (built with protobuf, PF_WITH_PROTOBUF).
bool Available();
// The TFRecord files of `path` for a split: the file itself, or in a directory the files whose
// names start with "train" (kTrain) or "test"/"t10k" (kTest) and contain ".tfrecord", sorted.
// NotFound naming the path when there are none.
StatusOr<std::vector<std::string>> Files(const std::string& path, data::Split split);
// Parses a DT_STRING [n] batch of serialized examples into (float [n, pixels] / 255, int32 [n]);
// errors name the feature and the example (ParseExamples').
StatusOr<data::Element> ParseMnistBatch(const Tensor& serialized);
// All examples of `files` as arrays (the test set, fed to the accuracy).
StatusOr<data::MnistArrays> LoadMnistArrays(const std::vector<std::string>& files);

// TFRecord files of encoded images (pf-data convert --images, TensorFlow's image layout:
// image/encoded, image/class/label, image/class/text).
// Whether the first record of `file` holds an image/encoded feature.
StatusOr<bool> HoldsEncodedImages(const std::string& file);
struct ImageRecords {
  data::Dataset train;  // per record: float [size * size * 3] in [0, 1] and its int32 label
  int64_t train_examples = 0;
  data::MnistArrays test;                // the test records, decoded once
  std::vector<std::string> class_names;  // by label: image/class/text ("class_<label>" if none)
};
// Each image decoded and resized to size x size RGB (bilinear, half-pixel centres: what
// FromImageFolder and tf.image.resize do) on 2 threads; limits of 0 take every record. A record
// that does not parse or decode fails with the parser's or the decoder's reason, naming the
// record's index.
StatusOr<ImageRecords> LoadImageRecords(const std::vector<std::string>& train_files,
                                        const std::vector<std::string>& test_files, int64_t size,
                                        int64_t train_limit, int64_t test_limit);

}  // namespace pf::tfrecord_input
