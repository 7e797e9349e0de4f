// The TFRecord reader (io/record_io.h) on arbitrary bytes, and, with protobuf, tf.Example
// parsing (io/example.h) on every record it returns. The first byte picks the compression
// (none, ZLIB, GZIP), skip_corrupt, and whether records are parsed as tf.Example.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "placeflow/io/record_io.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_file.h"
#if defined(PF_WITH_PROTOBUF)
#include "placeflow/io/example.h"
#endif

namespace {

#if defined(PF_WITH_PROTOBUF)
// A spec of every kind the parser has: required and defaulted fixed-length features of each
// dtype, and variable-length ones.
const pf::io::ExampleSpec& Spec() {
  static const auto* spec = [] {
    auto* s = new pf::io::ExampleSpec;
    s->fixed.push_back({"label", pf::DT_INT64, {}, pf::Tensor::Scalar<int64_t>(-1)});
    s->fixed.push_back({"weights", pf::DT_FLOAT, {3}, pf::Tensor::Scalar<float>(0.f)});
    s->fixed.push_back({"name", pf::DT_STRING, {}, pf::Tensor::Scalar<std::string>("")});
    s->var_len.push_back({"tags", pf::DT_STRING});
    s->var_len.push_back({"ids", pf::DT_INT64});
    s->var_len.push_back({"scores", pf::DT_FLOAT});
    return s;
  }();
  return *spec;
}

void ParseRecords(const std::vector<std::string>& records) {
  auto parsed = pf::io::ParseExamples(records, Spec());
  if (parsed.ok()) {
    CHECK(parsed->dense[0].num_elements() == static_cast<int64_t>(records.size()));
    for (const pf::io::SparseValues& sv : parsed->sparse) {
      CHECK(sv.indices.dim(0) == sv.values.num_elements());
      const int64_t* idx = sv.indices.data<int64_t>();
      const int64_t* shape = sv.dense_shape.data<int64_t>();
      for (int64_t i = 0; i < sv.indices.dim(0); ++i)
        CHECK(idx[2 * i] < shape[0] && idx[2 * i + 1] < shape[1]);
    }
  }
  for (const std::string& r : records) (void)pf::io::DescribeExample(r);
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ++data, --size;
  static pf::fuzz::MemFile file("tfrecord");
  pf::io::RecordReaderOptions o;
  o.compression = static_cast<pf::io::Compression>((mode & 3) % 3);
  o.skip_corrupt = (mode & 4) != 0;
  auto reader = pf::io::RecordReader::Open(file.Write(data, size), o);
  CHECK(reader.ok());
  std::vector<std::string> records;
  std::string rec;
  uint64_t last_offset = 0;
  for (int i = 0; i < 100000; ++i) {
    auto more = (*reader)->Next(&rec);
    if (!more.ok()) {
      CHECK(more.status().code() == pf::Code::kDataLoss);
      CHECK(!o.skip_corrupt || o.compression != pf::io::Compression::kNone);
      break;
    }
    if (!*more) break;
    CHECK((*reader)->offset() >= last_offset + 16);  // a record takes at least 16 bytes
    last_offset = (*reader)->offset();
    // Uncompressed: a record never holds more than the input.
    if (o.compression == pf::io::Compression::kNone) CHECK(rec.size() + 16 <= size);
    if (records.size() < 64) records.push_back(rec);
  }
#if defined(PF_WITH_PROTOBUF)
  if (mode & 8) ParseRecords(records);
#endif
  return 0;
}
