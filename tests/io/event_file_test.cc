// TensorBoard event files (io/event_file.h): the name, the version record first, each record's
// framing checked independently of the reader (length, masked CRC32C of length and data), values
// read back, and damage reported as DataLoss naming the file and offset.
#include "placeflow/io/event_file.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "placeflow/io/proto/event.pb.h"
#include "tests/testing/test_util.h"

namespace pf::io::event_file_test {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

uint32_t Le32(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

TEST_CASE("Event files: TF's name, the version record first, records framed with CRCs",
          "[event_file]") {
  testing::TempDir dir("events_frame", false);
  auto w = EventFileWriter::Open((dir.path / "run").string()).value();
  const std::string path = w->path();
  CHECK_THAT(fs::path(path).filename().string(), StartsWith("events.out.tfevents."));
  REQUIRE(w->Write(ScalarEvent(1.5e9, 7, "loss", 0.25f)).ok());
  REQUIRE(w->Close().ok());

  // The framing, by hand: u64 length, masked crc32c of the 8 length bytes, data, masked crc32c.
  const std::string bytes = ReadAll(path);
  std::vector<std::string> records;
  for (size_t at = 0; at < bytes.size();) {
    REQUIRE(at + 12 <= bytes.size());
    uint64_t len;
    std::memcpy(&len, bytes.data() + at, 8);
    CHECK(Le32(bytes, at + 8) == MaskedCrc32c(bytes.substr(at, 8)));
    REQUIRE(at + 12 + len + 4 <= bytes.size());
    const std::string data = bytes.substr(at + 12, len);
    CHECK(Le32(bytes, at + 12 + len) == MaskedCrc32c(data));
    records.push_back(data);
    at += 12 + len + 4;
  }
  REQUIRE(records.size() == 2);
  tensorflow::Event first, second;
  REQUIRE(first.ParseFromString(records[0]));
  CHECK(first.file_version() == "brain.Event:2");
  CHECK(first.wall_time() > 1.6e9);  // now
  REQUIRE(second.ParseFromString(records[1]));
  CHECK(second.step() == 7);
  CHECK(second.wall_time() == 1.5e9);
  REQUIRE(second.summary().value_size() == 1);
  CHECK(second.summary().value(0).tag() == "loss");
  CHECK(second.summary().value(0).simple_value() == 0.25f);

  // The project's reader gives the same.
  auto events = ReadEventFile(path).value();
  REQUIRE(events.size() == 2);
  CHECK(events[0].file_version == "brain.Event:2");
  REQUIRE(events[1].values.size() == 1);
  CHECK(events[1].values[0].kind == SummaryValue::Kind::kScalar);
  CHECK(events[1].values[0].scalar == 0.25);
  CHECK(ListEventFiles((dir.path / "run").string()) == std::vector<std::string>{path});
}

TEST_CASE("A summary's bytes embedded in an Event parse as that Summary", "[event_file]") {
  tensorflow::Summary s;
  auto* v = s.add_value();
  v->set_tag("h");
  v->mutable_histo()->set_num(3);
  v->mutable_histo()->add_bucket_limit(1.0);
  v->mutable_histo()->add_bucket(3);
  std::string bytes;
  s.SerializeToString(&bytes);
  // Long enough for a two-byte length varint too.
  auto* big = s.add_value();
  big->set_tag(std::string(300, 'x'));
  big->set_simple_value(2);
  std::string big_bytes;
  s.SerializeToString(&big_bytes);
  for (const std::string& b : {bytes, big_bytes}) {
    tensorflow::Event e;
    REQUIRE(e.ParseFromString(SummaryEvent(10.0, 42, b)));
    CHECK(e.step() == 42);
    CHECK(e.wall_time() == 10.0);
    std::string again;
    e.summary().SerializeToString(&again);
    CHECK(again == b);
  }
}

TEST_CASE("Two writers in one second get two files", "[event_file]") {
  testing::TempDir dir("events_two", false);
  auto a = EventFileWriter::Open(dir.path.string()).value();
  auto b = EventFileWriter::Open(dir.path.string()).value();
  CHECK(a->path() != b->path());
  CHECK(ListEventFiles(dir.path.string()).size() == 2);
}

TEST_CASE("A damaged event file is DataLoss naming the file and offset", "[event_file]") {
  testing::TempDir dir("events_damage", false);
  auto w = EventFileWriter::Open(dir.path.string()).value();
  REQUIRE(w->Write(ScalarEvent(1, 1, "a", 1)).ok());
  REQUIRE(w->Write(ScalarEvent(1, 2, "a", 2)).ok());
  REQUIRE(w->Close().ok());
  std::string bytes = ReadAll(w->path());
  const size_t last = bytes.size() - 6;  // inside the last record's data
  bytes[last] ^= 0x40;
  std::ofstream(w->path(), std::ios::binary | std::ios::trunc) << bytes;
  auto r = ReadEventFile(w->path());
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kDataLoss);
  CHECK_THAT(r.status().message(), Contains(w->path()));
  // Not an event at all: a record of other bytes.
  auto rw = RecordWriter::Open((dir.path / "junk").string()).value();
  REQUIRE(rw->Write("\xff\xff\xff\xff").ok());
  REQUIRE(rw->Close().ok());
  auto junk = ReadEventFile((dir.path / "junk").string());
  CHECK(junk.status().code() == Code::kDataLoss);
  CHECK_THAT(junk.status().message(), Contains("offset 0"));
  CHECK(EventFileWriter::Open("/proc/no_such_dir/x").status().code() == Code::kFailedPrecondition);
}

}  // namespace
}  // namespace pf::io::event_file_test
