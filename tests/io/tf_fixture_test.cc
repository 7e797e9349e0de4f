// Files TensorFlow wrote (tests/data/make_tfrecord_fixture.py, tensorflow-cpu 2.21) read without
// TensorFlow: every compression frames the same records, byte for byte what TF serialized, and
// (with protobuf) ParseExamples gives the values TF's own parse_example gave
// (tests/data/tf_fixture_expected.json).
#include <map>
#include <memory>
#include <variant>

#include "tests/testing/json.h"
#include "tests/testing/test_util.h"

namespace pf::tf_fixture_test {
namespace {

using testing::Json;
using testing::JsonParser;

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::string DataPath(const std::string& name) {
  return std::string(PF_SOURCE_DIR) + "/tests/data/" + name;
}

const Json& Expected() {
  static const Json* j = new Json(testing::ParseJsonFile(DataPath("tf_fixture_expected.json")));
  return *j;
}

std::vector<std::string> ReadAllRecords(const std::string& file, io::Compression c) {
  auto r = io::RecordReader::Open(DataPath(file), {.compression = c}).value();
  std::vector<std::string> out;
  std::string rec;
  while (r->Next(&rec).value()) out.push_back(rec);
  CHECK(r->records_skipped() == 0);
  return out;
}

TEST_CASE("TFRecord files written by TensorFlow read back as TF serialized them",
          "[io][tf_fixture]") {
  std::vector<std::string> want;
  for (const Json& h : Expected()["serialized_hex"].array()) want.push_back(FromHex(h.str()));
  REQUIRE(want.size() == 4);
  CHECK(ReadAllRecords("tf_fixture.tfrecord", io::Compression::kNone) == want);
  CHECK(ReadAllRecords("tf_fixture.tfrecord.gz", io::Compression::kGzip) == want);
  CHECK(ReadAllRecords("tf_fixture.tfrecord.zz", io::Compression::kZlib) == want);
}

#if defined(PF_WITH_PROTOBUF)

TEST_CASE("tf.Examples written by TensorFlow parse to TF's own values", "[io][tf_fixture]") {
  const Json& e = Expected();
  std::vector<std::string> ser = ReadAllRecords("tf_fixture.tfrecord.gz", io::Compression::kGzip);
  io::ExampleSpec spec;
  spec.fixed.push_back({"label", DT_INT64, {}, Tensor()});
  spec.fixed.push_back({"weights", DT_FLOAT, {3}, Tensor()});
  spec.fixed.push_back({"name", DT_STRING, {}, Tensor()});
  spec.var_len.push_back({"tags", DT_STRING});
  spec.var_len.push_back({"ids", DT_INT64});
  spec.var_len.push_back({"scores", DT_FLOAT});
  io::ParsedExamples p = io::ParseExamples(ser, spec).value();

  std::vector<int64_t> labels;
  for (const Json& v : e["label"].array()) labels.push_back(static_cast<int64_t>(v.number()));
  CHECK(p.dense[0].ToVector<int64_t>() == labels);
  std::vector<float> weights;
  for (const Json& row : e["weights"].array())
    for (const Json& v : row.array()) weights.push_back(static_cast<float>(v.number()));
  CHECK(p.dense[1].ToVector<float>() == weights);  // float32 values printed exactly by TF
  std::vector<std::string> names;
  for (const Json& v : e["name_hex"].array()) names.push_back(FromHex(v.str()));
  CHECK(p.dense[2].ToVector<std::string>() == names);

  const char* keys[] = {"tags", "ids", "scores"};
  for (int k = 0; k < 3; ++k) {
    INFO(keys[k]);
    const Json& want = e[keys[k]];
    const io::SparseValues& got = p.sparse[k];
    std::vector<int64_t> indices, shape;
    for (const Json& row : want["indices"].array())
      for (const Json& v : row.array()) indices.push_back(static_cast<int64_t>(v.number()));
    for (const Json& v : want["dense_shape"].array())
      shape.push_back(static_cast<int64_t>(v.number()));
    CHECK(got.indices.ToVector<int64_t>() == indices);
    CHECK(got.dense_shape.ToVector<int64_t>() == shape);
    const auto& values = want["values"].array();
    REQUIRE(got.values.num_elements() == static_cast<int64_t>(values.size()));
    for (size_t i = 0; i < values.size(); ++i) {
      if (k == 0) CHECK(got.values.data<std::string>()[i] == FromHex(values[i].str()));
      if (k == 1) {
        // int64 extremes (2^63-1) do not survive a double: compare what a double holds.
        CHECK(static_cast<double>(got.values.data<int64_t>()[i]) == values[i].number());
      }
      if (k == 2) CHECK(got.values.data<float>()[i] == static_cast<float>(values[i].number()));
    }
  }
}

#endif  // PF_WITH_PROTOBUF

}  // namespace
}  // namespace pf::tf_fixture_test
