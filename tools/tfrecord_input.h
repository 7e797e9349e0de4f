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

}  // namespace pf::tfrecord_input
