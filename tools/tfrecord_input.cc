#include "tools/tfrecord_input.h"

#include <algorithm>
#include <filesystem>

// tf.Example parsing comes with the records part of issue 17 (io/example.h) and needs protobuf.
#if defined(PF_WITH_PROTOBUF) && __has_include("placeflow/io/example.h")
#include "placeflow/data/image_folder.h"
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

StatusOr<bool> HoldsEncodedImages(const std::string& file) {
  auto it = data::Dataset::FromTFRecord({file}).MakeIterator();
  data::Element first;
  PF_ASSIGN_OR_RETURN(bool any, it->GetNext(&first));
  if (!any) return errors::InvalidArgument("No records in ", file);
#if PF_TFRECORD_INPUT
  io::ExampleSpec spec;
  spec.var_len.push_back({"image/encoded", DT_STRING});
  PF_ASSIGN_OR_RETURN(io::ParsedExamples p,
                      io::ParseExamples({first[0].data<std::string>(), 1}, spec));
  return p.sparse[0].values.num_elements() > 0;
#else
  return false;
#endif
}

#if PF_TFRECORD_INPUT
namespace {

// The features of an image record: bytes, label, class name ("" when absent).
io::ExampleSpec ImageSpec(bool with_image) {
  io::ExampleSpec spec;
  spec.fixed.push_back({"image/class/label", DT_INT64, Shape{}, Tensor()});
  spec.fixed.push_back({"image/class/text", DT_STRING, Shape{}, Tensor::Scalar<std::string>("")});
  if (with_image) spec.fixed.push_back({"image/encoded", DT_STRING, Shape{}, Tensor()});
  return spec;
}

StatusOr<int32_t> Label(const io::ParsedExamples& p) {
  const int64_t label = p.dense[0].data<int64_t>()[0];
  if (label < 0 || label >= (int64_t{1} << 20))
    return errors::InvalidArgument("image/class/label ", label, " is not a class index");
  return static_cast<int32_t>(label);
}

// One record: (float [size * size * 3] in [0, 1], int32 label).
StatusOr<data::Element> DecodeRecord(const std::string& record, int64_t size) {
  PF_ASSIGN_OR_RETURN(io::ParsedExamples p, io::ParseExamples({&record, 1}, ImageSpec(true)));
  PF_ASSIGN_OR_RETURN(int32_t label, Label(p));
  data::ImageFolderOptions o;
  o.image_size = {size, size};
  PF_ASSIGN_OR_RETURN(Tensor image, data::DecodeAndResize(p.dense[2].data<std::string>()[0], o));
  float* v = image.data<float>();  // a tensor of its own: scaled where it is
  for (int64_t i = 0; i < image.num_elements(); ++i) v[i] /= 255.f;
  PF_ASSIGN_OR_RETURN(Tensor flat, image.Reshaped(Shape{image.num_elements()}));
  return data::Element{std::move(flat), Tensor::Scalar<int32_t>(label)};
}

// The class names by label, from every record's label and class text, and the records' count:
// one pass over the files.
StatusOr<std::vector<std::string>> ClassNames(const std::vector<std::string>& files,
                                              int64_t* records) {
  std::vector<std::string> names;
  auto it = data::Dataset::FromTFRecord(files).MakeIterator();
  data::Element e;
  for (*records = 0;; ++*records) {
    PF_ASSIGN_OR_RETURN(bool more, it->GetNext(&e));
    if (!more) break;
    PF_ASSIGN_OR_RETURN(io::ParsedExamples p,
                        io::ParseExamples({e[0].data<std::string>(), 1}, ImageSpec(false)));
    PF_ASSIGN_OR_RETURN(int32_t label, Label(p));
    if (static_cast<size_t>(label) >= names.size()) names.resize(label + 1);
    const std::string& text = p.dense[1].data<std::string>()[0];
    if (!text.empty()) names[label] = text;
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i].empty()) names[i] = "class_" + std::to_string(i);
  return names;
}

}  // namespace
#endif

StatusOr<ImageRecords> LoadImageRecords(const std::vector<std::string>& train_files,
                                        const std::vector<std::string>& test_files, int64_t size,
                                        int64_t train_limit, int64_t test_limit) {
#if PF_TFRECORD_INPUT
  ImageRecords r;
  int64_t records = 0;
  PF_ASSIGN_OR_RETURN(r.class_names, ClassNames(train_files, &records));
  r.train_examples = train_limit > 0 ? std::min(train_limit, records) : records;
  const data::ElementSpec spec = {{DT_FLOAT, Shape{size * size * 3}}, {DT_INT32, Shape{}}};
  auto decode = [size](data::Element e, const data::MapContext&) {
    return DecodeRecord(e[0].data<std::string>()[0], size);
  };
  r.train = data::Dataset::FromTFRecord(train_files)
                .Take(train_limit > 0 ? train_limit : -1)
                .Map(decode, 2, spec);
  // The test records, decoded and stacked in one batch.
  auto test = data::Dataset::FromTFRecord(test_files)
                  .Take(test_limit > 0 ? test_limit : -1)
                  .Map(decode, 2, spec)
                  .Batch(1 << 30)
                  .MakeIterator();
  data::Element all;
  PF_ASSIGN_OR_RETURN(bool any, test->GetNext(&all));
  if (!any) return errors::InvalidArgument("No records in ", test_files.front());
  r.test = data::MnistArrays{all[0], all[1]};
  return r;
#else
  (void)train_files, (void)test_files, (void)size, (void)train_limit, (void)test_limit;
  return errors::Unimplemented(
      "Parsing tf.Example needs a placeflow built with protobuf (PF_WITH_PROTOBUF)");
#endif
}

}  // namespace pf::tfrecord_input
