// TFRecord files: each record is framed as
//   uint64 length | uint32 masked crc32c(length) | data[length] | uint32 masked crc32c(data)
// (little-endian), optionally inside one ZLIB or GZIP stream, as TensorFlow's TFRecordWriter
// writes them. CRCs are verified on read.
//
//   auto w = pf::io::RecordWriter::Open("/tmp/a.tfrecord", pf::io::Compression::kGzip).value();
//   PF_RETURN_IF_ERROR(w->Write("hello"));
//   PF_RETURN_IF_ERROR(w->Close());
//   auto r = pf::io::RecordReader::Open("/tmp/a.tfrecord", {.compression = kGzip}).value();
//   std::string rec;
//   while (r->Next(&rec).value()) Use(rec);   // DataLoss "corrupted record at offset N in FILE"
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "placeflow/core/status.h"

namespace pf::io {

enum class Compression { kNone, kZlib, kGzip };

// TensorFlow's compression_type strings: "" (or "NONE"), "ZLIB", "GZIP".
StatusOr<Compression> ParseCompression(std::string_view s);
std::string_view CompressionName(Compression c);  // "", "ZLIB", "GZIP"

// CRC-32C (Castagnoli), the standard one: Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(std::string_view data);
// Continues a CRC: Crc32cExtend(Crc32c(a), b) == Crc32c(a + b).
uint32_t Crc32cExtend(uint32_t crc, std::string_view data);
// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t MaskCrc(uint32_t crc);
uint32_t MaskedCrc32c(std::string_view data);
// Which implementation Crc32c uses: "isa-l" or "sse4.2" (or "bitwise" on a CPU without SSE4.2).
std::string_view Crc32cImplementation();
// The SSE4.2 implementation on its own (the fallback when ISA-L is absent), for the benchmark
// that compares them; the bitwise loop where the CPU lacks SSE4.2.
uint32_t Crc32cSse42(std::string_view data);

class OutputStream;
class InputStream;

class RecordWriter {
 public:
  // Creates (truncates) `path`. NotFound or FailedPrecondition naming the file on failure.
  static StatusOr<std::unique_ptr<RecordWriter>> Open(const std::string& path,
                                                      Compression c = Compression::kNone);
  ~RecordWriter();  // closes; errors are logged there
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  Status Write(std::string_view record);
  // Everything written so far reaches the OS (a compressed stream is sync-flushed: a reader
  // sees every complete record).
  Status Flush();
  // Finishes the compressed stream and closes the file. Later calls do nothing.
  Status Close();
  const std::string& path() const { return path_; }

 private:
  RecordWriter(std::string path, std::unique_ptr<OutputStream> out);
  std::string path_;
  std::unique_ptr<OutputStream> out_;
  Status first_error_;
};

struct RecordReaderOptions {
  Compression compression = Compression::kNone;
  // Skip records whose data CRC is wrong (counted in records_skipped()); a wrong length CRC or
  // a truncated record ends the file (counted once, logged), since what follows cannot be framed.
  bool skip_corrupt = false;
};

class RecordReader {
 public:
  // NotFound naming the file when it does not exist.
  static StatusOr<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                                      RecordReaderOptions o = {});
  ~RecordReader();
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // The next record into *record: OK + true; OK + false at a clean end of file; DataLoss naming
  // the file and byte offset for a corrupt or truncated record (unless skip_corrupt). Offsets
  // of a compressed file count uncompressed bytes (as TensorFlow's do).
  StatusOr<bool> Next(std::string* record);
  int64_t records_skipped() const { return skipped_; }
  // Where the next record starts (uncompressed bytes).
  uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  RecordReader(std::string path, RecordReaderOptions o, std::unique_ptr<InputStream> in);
  // Ends reading after a record that cannot be framed: the error, or (skip_corrupt) a skip.
  StatusOr<bool> Unframeable(Status why);

  std::string path_;
  RecordReaderOptions options_;
  std::unique_ptr<InputStream> in_;
  uint64_t offset_ = 0;
  int64_t skipped_ = 0;
  bool done_ = false;
};

}  // namespace pf::io
