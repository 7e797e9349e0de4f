// TFRecord framing: CRC32C against known values, write + read back byte-exact for every
// compression, and each kind of damage giving its DataLoss (or a counted skip).
#include "placeflow/io/record_io.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

namespace pf::io::record_io_test {
namespace {

using Catch::Matchers::Contains;

// A fresh file name under the system's temporary directory, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               ("pf_record_io_" + std::to_string(::getpid()) + "_" + name))
                  .string()) {}
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> ReadRecords(const std::string& path, RecordReaderOptions o = {}) {
  auto r = RecordReader::Open(path, o).value();
  std::vector<std::string> out;
  std::string rec;
  while (r->Next(&rec).value()) out.push_back(rec);
  return out;
}

TEST_CASE("CRC32C: the standard check value, RFC 3720 vectors, TFRecord masking", "[io]") {
  CHECK(Crc32c("123456789") == 0xE3069283u);
  CHECK(Crc32c("") == 0u);
  // RFC 3720 B.4: 32 bytes of zeros, of 0xff, ascending, descending.
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, 0), down(32, 0);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<char>(i);
    down[i] = static_cast<char>(31 - i);
  }
  CHECK(Crc32c(zeros) == 0x8A9136AAu);
  CHECK(Crc32c(ones) == 0x62A8AB43u);
  CHECK(Crc32c(up) == 0x46DD794Eu);
  CHECK(Crc32c(down) == 0x113FDB5Cu);
  // The SSE4.2 fallback agrees with the library implementation on every length and alignment.
  std::mt19937 rng(7);
  std::string data(4096 + 13, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t len : {0, 1, 7, 8, 9, 63, 64, 1000, 4109}) {
    for (size_t off : {0, 1, 3}) {
      std::string_view v(data.data() + off, std::min(len, data.size() - off));
      CHECK(Crc32cSse42(v) == Crc32c(v));
    }
  }
  CHECK(Crc32cExtend(Crc32c("12345"), "6789") == 0xE3069283u);
  CHECK(MaskCrc(0) == 0xa282ead8u);
  CHECK(MaskedCrc32c("123456789") == (((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u));
  CHECK((Crc32cImplementation() == "isa-l" || Crc32cImplementation() == "sse4.2"));
}

TEST_CASE("TFRecord framing is TensorFlow's: header, masked CRCs, little-endian", "[io]") {
  TempFile f("frame");
  {
    auto w = RecordWriter::Open(f.path()).value();
    REQUIRE(w->Write("abc").ok());
    REQUIRE(w->Close().ok());
  }
  const std::string bytes = ReadAll(f.path());
  REQUIRE(bytes.size() == 8 + 4 + 3 + 4);
  CHECK(bytes.substr(0, 8) == std::string("\x03\0\0\0\0\0\0\0", 8));
  uint32_t len_crc = 0, data_crc = 0;
  std::memcpy(&len_crc, bytes.data() + 8, 4);
  std::memcpy(&data_crc, bytes.data() + 15, 4);
  CHECK(len_crc == MaskedCrc32c(bytes.substr(0, 8)));
  CHECK(bytes.substr(12, 3) == "abc");
  CHECK(data_crc == MaskedCrc32c("abc"));
}

TEST_CASE("TFRecord files read back byte-exact for every compression", "[io]") {
  std::mt19937 rng(3);
  std::vector<std::string> records = {"", "x", std::string(1 << 20, '\0')};
  for (char& c : records[2]) c = static_cast<char>(rng());  // 1 MiB of incompressible bytes
  for (int i = 0; i < 1000; ++i) records.push_back("record " + std::to_string(i));
  for (Compression c : {Compression::kNone, Compression::kZlib, Compression::kGzip}) {
    DYNAMIC_SECTION("compression '" << CompressionName(c) << "'") {
      TempFile f("roundtrip");
      {
        auto w = RecordWriter::Open(f.path(), c).value();
        for (const std::string& r : records) REQUIRE(w->Write(r).ok());
        REQUIRE(w->Close().ok());
        CHECK(w->Write("late").code() == Code::kFailedPrecondition);
      }
      CHECK(ReadRecords(f.path(), {.compression = c}) == records);
      const std::string bytes = ReadAll(f.path());
      if (c == Compression::kGzip) CHECK(bytes.substr(0, 2) == "\x1f\x8b");  // gzip magic
      if (c == Compression::kZlib) CHECK(static_cast<unsigned char>(bytes[0]) == 0x78);
      if (c == Compression::kNone) {
        uint64_t total = 0;
        for (const std::string& r : records) total += 16 + r.size();
        CHECK(bytes.size() == total);
      }
    }
  }
}

TEST_CASE("A flushed compressed writer's records are readable before Close", "[io]") {
  TempFile f("flush");
  auto w = RecordWriter::Open(f.path(), Compression::kGzip).value();
  REQUIRE(w->Write("first").ok());
  REQUIRE(w->Write("second").ok());
  REQUIRE(w->Flush().ok());
  CHECK(ReadRecords(f.path(), {.compression = Compression::kGzip}) ==
        std::vector<std::string>{"first", "second"});
  REQUIRE(w->Close().ok());
}

TEST_CASE("Damaged TFRecord files give DataLoss naming file and offset, or counted skips", "[io]") {
  TempFile f("damaged");
  {
    auto w = RecordWriter::Open(f.path()).value();
    for (const char* r : {"zero", "one", "two"}) REQUIRE(w->Write(r).ok());
  }
  const std::string good = ReadAll(f.path());
  // Records: "zero" at 0 (20 bytes), "one" at 20 (19 bytes), "two" at 39 (19 bytes).
  REQUIRE(good.size() == 58);
  auto read = [&](const std::string& bytes, bool skip, std::vector<std::string>* got,
                  int64_t* skipped) -> Status {
    WriteAll(f.path(), bytes);
    auto r = RecordReader::Open(f.path(), {.skip_corrupt = skip}).value();
    std::string rec;
    got->clear();
    while (true) {
      StatusOr<bool> more = r->Next(&rec);
      if (!more.ok()) return more.status();
      if (!*more) break;
      got->push_back(rec);
    }
    *skipped = r->records_skipped();
    return Status::OK();
  };
  std::vector<std::string> got;
  int64_t skipped = 0;

  SECTION("flipped data byte: data crc mismatch; skipping loses just that record") {
    std::string bad = good;
    bad[20 + 12] ^= 0x01;  // the 'o' of "one"
    Status s = read(bad, false, &got, &skipped);
    CHECK(s.code() == Code::kDataLoss);
    CHECK(s.message() == "corrupted record at offset 20 in " + f.path() + ": data crc mismatch");
    CHECK(got == std::vector<std::string>{"zero"});
    REQUIRE(read(bad, true, &got, &skipped).ok());
    CHECK(got == std::vector<std::string>{"zero", "two"});
    CHECK(skipped == 1);
  }
  SECTION("flipped length byte: length crc mismatch; the rest cannot be framed") {
    std::string bad = good;
    bad[20] ^= 0x40;
    Status s = read(bad, false, &got, &skipped);
    CHECK(s.code() == Code::kDataLoss);
    CHECK(s.message() == "corrupted record at offset 20 in " + f.path() + ": length crc mismatch");
    REQUIRE(read(bad, true, &got, &skipped).ok());
    CHECK(got == std::vector<std::string>{"zero"});
    CHECK(skipped == 1);
  }
  SECTION("flipped data crc byte: data crc mismatch") {
    std::string bad = good;
    bad[39 + 15 + 2] ^= 0x80;
    CHECK_THAT(read(bad, false, &got, &skipped).message(),
               Contains("offset 39") && Contains("data crc mismatch"));
  }
  SECTION("truncated inside the data and inside the header") {
    for (size_t cut : {size_t{50}, size_t{45}}) {
      Status s = read(good.substr(0, cut), false, &got, &skipped);
      CHECK(s.code() == Code::kDataLoss);
      CHECK_THAT(s.message(), Contains("truncated record at offset 39 in " + f.path()));
      CHECK(got == std::vector<std::string>{"zero", "one"});
      REQUIRE(read(good.substr(0, cut), true, &got, &skipped).ok());
      CHECK(got == std::vector<std::string>{"zero", "one"});
      CHECK(skipped == 1);
    }
  }
  SECTION("a length that passed its CRC but promises more than the file holds") {
    std::string bad = good.substr(0, 20);
    char header[12];
    const uint64_t huge = uint64_t{1} << 40;
    std::memcpy(header, &huge, 8);
    const uint32_t crc = MaskedCrc32c({header, 8});
    std::memcpy(header + 8, &crc, 4);
    bad += std::string(header, 12) + "short";
    Status s = read(bad, false, &got, &skipped);
    CHECK(s.code() == Code::kDataLoss);
    CHECK_THAT(s.message(), Contains("truncated record at offset 20") &&
                                Contains("1099511627776 data bytes expected, 5 found"));
  }
}

TEST_CASE("A damaged compressed stream is DataLoss naming the file", "[io]") {
  TempFile f("damaged_gz");
  {
    auto w = RecordWriter::Open(f.path(), Compression::kGzip).value();
    for (int i = 0; i < 100; ++i) REQUIRE(w->Write(std::string(100, 'a' + i % 26)).ok());
  }
  std::string bytes = ReadAll(f.path());
  bytes[bytes.size() / 2] ^= 0x55;
  bytes[bytes.size() / 2 + 1] ^= 0x55;
  WriteAll(f.path(), bytes);
  auto r = RecordReader::Open(f.path(), {.compression = Compression::kGzip}).value();
  std::string rec;
  Status s;
  for (int i = 0; i < 200 && s.ok(); ++i) {
    StatusOr<bool> more = r->Next(&rec);
    s = more.status();
    if (s.ok() && !*more) break;
  }
  CHECK(s.code() == Code::kDataLoss);
  CHECK_THAT(s.message(), Contains(f.path()));
}

TEST_CASE("Opening a missing TFRecord file is NotFound naming it; compression names", "[io]") {
  StatusOr<std::unique_ptr<RecordReader>> r = RecordReader::Open("/nonexistent/x.tfrecord");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kNotFound);
  CHECK_THAT(r.status().message(), Contains("/nonexistent/x.tfrecord"));
  CHECK(RecordWriter::Open("/nonexistent/dir/y.tfrecord").status().code() == Code::kNotFound);
  CHECK(ParseCompression("").value() == Compression::kNone);
  CHECK(ParseCompression("ZLIB").value() == Compression::kZlib);
  CHECK(ParseCompression("GZIP").value() == Compression::kGzip);
  CHECK_THAT(ParseCompression("gz").status().message(), Contains("'gz'"));
}

}  // namespace
}  // namespace pf::io::record_io_test
