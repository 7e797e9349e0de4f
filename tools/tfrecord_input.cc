#include "tools/tfrecord_input.h"

#include <algorithm>
#include <filesystem>

// tf.Example parsing comes with the records part of issue 17 (io/example.h) and needs protobuf.
#if defined(PF_WITH_PROTOBUF) && __has_include("placeflow/io/example.h")
#include "placeflow/io/example.h"
#define PF_TFRECORD_INPUT 1
#else
#define PF_TFRECORD_INPUT 0
#endif

namespace pf::tfrecord_input {

bool Available() { return PF_TFRECORD_INPUT; }

StatusOr<std::vector<std::string>> Files(const std::string& path, data::Split split) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (!fs::exists(path, ec))
      return errors::NotFound("No TFRecord file or directory '", path, "'");
    return std::vector<std::string>{path};
  }
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename().string();
    const bool train = name.rfind("train", 0) == 0;
    const bool test = name.rfind("test", 0) == 0 || name.rfind("t10k", 0) == 0;
    if (name.find(".tfrecord") == std::string::npos) continue;
    if ((split == data::Split::kTrain && train) || (split == data::Split::kTest && test))
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return errors::NotFound("No ", split == data::Split::kTrain ? "train*" : "test* or t10k*",
                            ".tfrecord files in '", path, "' (pf-data convert writes them)");
  }
  return files;
}

StatusOr<data::Element> ParseMnistBatch(const Tensor& serialized) {
#if PF_TFRECORD_INPUT
  io::ExampleSpec spec;
  spec.fixed.push_back({"image_raw", DT_STRING, Shape{}, Tensor()});
  spec.fixed.push_back({"label", DT_INT64, Shape{}, Tensor()});
  const int64_t n = serialized.num_elements();
  std::span<const std::string> records(serialized.data<std::string>(), static_cast<size_t>(n));
  PF_ASSIGN_OR_RETURN(io::ParsedExamples p, io::ParseExamples(records, spec));
  const std::string* raw = p.dense[0].data<std::string>();
  const int64_t pixels = n > 0 ? static_cast<int64_t>(raw[0].size()) : 0;
  Tensor images(DT_FLOAT, {n, pixels});
  Tensor labels(DT_INT32, {n});
  float* img = images.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (static_cast<int64_t>(raw[i].size()) != pixels) {
      return errors::InvalidArgument("Example ", i, " of the batch has ", raw[i].size(),
                                     " image_raw bytes, example 0 has ", pixels);
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(raw[i].data());
    for (int64_t k = 0; k < pixels; ++k) img[i * pixels + k] = bytes[k] / 255.f;
    const int64_t label = p.dense[1].data<int64_t>()[i];
    if (label < 0 || label > 9)
      return errors::InvalidArgument("Label ", label, " of example ", i, " is not a digit class");
    labels.data<int32_t>()[i] = static_cast<int32_t>(label);
  }
  return data::Element{std::move(images), std::move(labels)};
#else
  (void)serialized;
  return errors::Unimplemented(
      "Parsing tf.Example needs a placeflow built with protobuf (PF_WITH_PROTOBUF)");
#endif
}

StatusOr<data::MnistArrays> LoadMnistArrays(const std::vector<std::string>& files) {
  auto it = data::Dataset::FromTFRecord(files).Batch(1 << 30).MakeIterator();
  data::Element all;
  PF_ASSIGN_OR_RETURN(bool any, it->GetNext(&all));
  if (!any) return errors::InvalidArgument("No records in ", files.front());
  PF_ASSIGN_OR_RETURN(data::Element parsed, ParseMnistBatch(all[0]));
  return data::MnistArrays{parsed[0], parsed[1]};
}

}  // namespace pf::tfrecord_input
