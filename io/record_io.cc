#include "placeflow/io/record_io.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "placeflow/core/logging.h"

namespace pf::io {

namespace {

constexpr size_t kFileBuffer = 256 << 10;
constexpr size_t kZlibChunk = 256 << 10;
constexpr size_t kHeaderBytes = 12;  // uint64 length + uint32 masked crc of the length

Status OpenError(const std::string& path, const char* what) {
  const int e = errno;
  if (e == ENOENT) return errors::NotFound(path, ": No such file or directory");
  return errors::FailedPrecondition("Cannot ", what, " ", path, ": ", std::strerror(e));
}

void PutFixed64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void PutFixed32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint64_t GetFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}
uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

// zlib's window bits for TensorFlow's two formats: a zlib header (15) or a gzip one (15 + 16).
int WindowBits(Compression c) { return c == Compression::kGzip ? 31 : 15; }

}  // namespace

// ---- output ----

class OutputStream {
 public:
  virtual ~OutputStream() = default;
  virtual Status Append(std::string_view data) = 0;
  virtual Status Flush() = 0;
  virtual Status Close() = 0;
};

namespace {

class FileOutput final : public OutputStream {
 public:
  FileOutput(std::string path, std::FILE* f) : path_(std::move(path)), f_(f) {
    std::setvbuf(f_, nullptr, _IOFBF, kFileBuffer);
  }
  ~FileOutput() override {
    if (f_ != nullptr) std::fclose(f_);
  }
  Status Append(std::string_view data) override {
    if (f_ == nullptr) return errors::FailedPrecondition("Write to closed file ", path_);
    if (!data.empty() && std::fwrite(data.data(), 1, data.size(), f_) != data.size())
      return errors::Internal("Cannot write to ", path_, ": ", std::strerror(errno));
    return Status::OK();
  }
  Status Flush() override {
    if (f_ != nullptr && std::fflush(f_) != 0)
      return errors::Internal("Cannot flush ", path_, ": ", std::strerror(errno));
    return Status::OK();
  }
  Status Close() override {
    if (f_ == nullptr) return Status::OK();
    const int r = std::fclose(f_);
    f_ = nullptr;
    if (r != 0) return errors::Internal("Cannot close ", path_, ": ", std::strerror(errno));
    return Status::OK();
  }

 private:
  std::string path_;
  std::FILE* f_;
};

class ZlibOutput final : public OutputStream {
 public:
  ZlibOutput(std::string path, std::unique_ptr<OutputStream> out)
      : path_(std::move(path)), out_(std::move(out)), buffer_(kZlibChunk) {}
  ~ZlibOutput() override {
    if (initialized_) deflateEnd(&z_);
  }
  Status Init(Compression c) {
    // TensorFlow's defaults: default level, deflate, memLevel 9.
    if (deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, WindowBits(c), 9,
                     Z_DEFAULT_STRATEGY) != Z_OK)
      return errors::Internal("deflateInit2 failed for ", path_);
    initialized_ = true;
    return Status::OK();
  }
  Status Append(std::string_view data) override { return Deflate(data, Z_NO_FLUSH); }
  Status Flush() override {
    if (!initialized_) return Status::OK();
    PF_RETURN_IF_ERROR(Deflate({}, Z_SYNC_FLUSH));
    return out_->Flush();
  }
  Status Close() override {
    if (!initialized_) return out_->Close();
    Status s = Deflate({}, Z_FINISH);
    deflateEnd(&z_);
    initialized_ = false;
    Status c = out_->Close();
    return s.ok() ? c : s;
  }

 private:
  Status Deflate(std::string_view data, int flush) {
    if (!initialized_) return errors::FailedPrecondition("Write to closed file ", path_);
    // zlib's avail_in is 32 bits: feed large records in pieces.
    do {
      const size_t piece = std::min<size_t>(data.size(), size_t{1} << 30);
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
      z_.avail_in = static_cast<uInt>(piece);
      const int mode = piece == data.size() ? flush : Z_NO_FLUSH;
      int r;
      do {
        z_.next_out = reinterpret_cast<Bytef*>(buffer_.data());
        z_.avail_out = static_cast<uInt>(buffer_.size());
        r = deflate(&z_, mode);
        if (r == Z_STREAM_ERROR) return errors::Internal("deflate failed writing ", path_);
        PF_RETURN_IF_ERROR(out_->Append({buffer_.data(), buffer_.size() - z_.avail_out}));
      } while (z_.avail_out == 0 || (mode == Z_FINISH && r != Z_STREAM_END));
      data.remove_prefix(piece);
    } while (!data.empty());
    return Status::OK();
  }

  std::string path_;
  std::unique_ptr<OutputStream> out_;
  std::vector<char> buffer_;
  z_stream z_{};
  bool initialized_ = false;
};

}  // namespace

RecordWriter::RecordWriter(std::string path, std::unique_ptr<OutputStream> out)
    : path_(std::move(path)), out_(std::move(out)) {}

RecordWriter::~RecordWriter() {
  Status s = Close();
  if (!s.ok()) PF_LOG_ERROR("Closing TFRecord file {}: {}", path_, s.ToString());
}

StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Open(const std::string& path, Compression c) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return OpenError(path, "create");
  std::unique_ptr<OutputStream> out = std::make_unique<FileOutput>(path, f);
  if (c != Compression::kNone) {
    auto z = std::make_unique<ZlibOutput>(path, std::move(out));
    PF_RETURN_IF_ERROR(z->Init(c));
    out = std::move(z);
  }
  return std::unique_ptr<RecordWriter>(new RecordWriter(path, std::move(out)));
}

Status RecordWriter::Write(std::string_view record) {
  if (!first_error_.ok()) return first_error_;
  if (out_ == nullptr) return errors::FailedPrecondition("Write to closed TFRecord file ", path_);
  char header[kHeaderBytes];
  PutFixed64(header, record.size());
  PutFixed32(header + 8, MaskedCrc32c({header, 8}));
  char footer[4];
  PutFixed32(footer, MaskedCrc32c(record));
  Status s = out_->Append({header, sizeof(header)});
  if (s.ok()) s = out_->Append(record);
  if (s.ok()) s = out_->Append({footer, sizeof(footer)});
  if (!s.ok()) first_error_ = s;
  return s;
}

Status RecordWriter::Flush() {
  if (!first_error_.ok()) return first_error_;
  if (out_ == nullptr) return Status::OK();
  return out_->Flush();
}

Status RecordWriter::Close() {
  if (out_ == nullptr) return Status::OK();
  Status s = out_->Close();
  out_.reset();
  return first_error_.ok() ? s : first_error_;
}

// ---- input ----

class InputStream {
 public:
  virtual ~InputStream() = default;
  // Reads up to `n` bytes into `dst`; *got < n only at the end of the stream.
  virtual Status Read(char* dst, size_t n, size_t* got) = 0;
};

namespace {

class FileInput final : public InputStream {
 public:
  FileInput(std::string path, std::FILE* f) : path_(std::move(path)), f_(f) {
    std::setvbuf(f_, nullptr, _IOFBF, kFileBuffer);
  }
  ~FileInput() override { std::fclose(f_); }
  Status Read(char* dst, size_t n, size_t* got) override {
    *got = n == 0 ? 0 : std::fread(dst, 1, n, f_);
    if (*got < n && std::ferror(f_))
      return errors::Internal("Cannot read ", path_, ": ", std::strerror(errno));
    return Status::OK();
  }

 private:
  std::string path_;
  std::FILE* f_;
};

class ZlibInput final : public InputStream {
 public:
  ZlibInput(std::string path, std::unique_ptr<InputStream> in)
      : path_(std::move(path)), in_(std::move(in)), input_(kZlibChunk) {}
  ~ZlibInput() override {
    if (initialized_) inflateEnd(&z_);
  }
  Status Init(Compression c) {
    compression_ = c;
    if (inflateInit2(&z_, WindowBits(c)) != Z_OK)
      return errors::Internal("inflateInit2 failed for ", path_);
    initialized_ = true;
    return Status::OK();
  }
  Status Read(char* dst, size_t n, size_t* got) override {
    *got = 0;
    while (*got < n && !end_) {
      if (z_.avail_in == 0) {
        size_t read = 0;
        PF_RETURN_IF_ERROR(in_->Read(input_.data(), input_.size(), &read));
        compressed_offset_ += read;
        if (read == 0) {
          // The compressed stream ends here (a writer that flushed but did not close leaves no
          // stream end): what was inflated is all there is.
          end_ = true;
          break;
        }
        z_.next_in = reinterpret_cast<Bytef*>(input_.data());
        z_.avail_in = static_cast<uInt>(read);
      }
      const size_t want = std::min<size_t>(n - *got, size_t{1} << 30);
      z_.next_out = reinterpret_cast<Bytef*>(dst + *got);
      z_.avail_out = static_cast<uInt>(want);
      const int r = inflate(&z_, Z_NO_FLUSH);
      *got += want - z_.avail_out;
      if (r == Z_STREAM_END) {
        // Concatenated members (cat a.gz b.gz) continue; otherwise this is the end.
        if (z_.avail_in > 0 || !AtInputEnd()) {
          inflateReset(&z_);
          continue;
        }
        end_ = true;
      } else if (r == Z_BUF_ERROR) {
        continue;  // needs more input: read it
      } else if (r != Z_OK) {
        return errors::DataLoss("corrupted ", CompressionName(compression_), " stream in ", path_,
                                " near compressed byte ", compressed_offset_ - z_.avail_in, ": ",
                                z_.msg != nullptr ? z_.msg : "inflate failed");
      }
    }
    return Status::OK();
  }

 private:
  // Whether the compressed file has nothing after the current input buffer.
  bool AtInputEnd() {
    size_t read = 0;
    if (!in_->Read(input_.data(), input_.size(), &read).ok() || read == 0) return true;
    compressed_offset_ += read;
    z_.next_in = reinterpret_cast<Bytef*>(input_.data());
    z_.avail_in = static_cast<uInt>(read);
    return false;
  }

  std::string path_;
  std::unique_ptr<InputStream> in_;
  std::vector<char> input_;
  z_stream z_{};
  Compression compression_ = Compression::kZlib;
  bool initialized_ = false;
  bool end_ = false;
  uint64_t compressed_offset_ = 0;
};

}  // namespace

RecordReader::RecordReader(std::string path, RecordReaderOptions o, std::unique_ptr<InputStream> in)
    : path_(std::move(path)), options_(o), in_(std::move(in)) {}

RecordReader::~RecordReader() = default;

StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(const std::string& path,
                                                           RecordReaderOptions o) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return OpenError(path, "open");
  std::unique_ptr<InputStream> in = std::make_unique<FileInput>(path, f);
  if (o.compression != Compression::kNone) {
    auto z = std::make_unique<ZlibInput>(path, std::move(in));
    PF_RETURN_IF_ERROR(z->Init(o.compression));
    in = std::move(z);
  }
  return std::unique_ptr<RecordReader>(new RecordReader(path, o, std::move(in)));
}

StatusOr<bool> RecordReader::Unframeable(Status why) {
  done_ = true;
  if (!options_.skip_corrupt) return why;
  ++skipped_;
  PF_LOG_WARN("{}; skipping the rest of the file (the records after it cannot be framed)",
              why.message());
  return false;
}

StatusOr<bool> RecordReader::Next(std::string* record) {
  while (!done_) {
    const uint64_t start = offset_;
    char header[kHeaderBytes];
    size_t got = 0;
    PF_RETURN_IF_ERROR(in_->Read(header, sizeof(header), &got));
    if (got == 0) {
      done_ = true;
      return false;
    }
    if (got < sizeof(header)) {
      offset_ += got;
      return Unframeable(errors::DataLoss("truncated record at offset ", start, " in ", path_, ": ",
                                          got, " of the 12 header bytes"));
    }
    if (GetFixed32(header + 8) != MaskedCrc32c({header, 8})) {
      return Unframeable(errors::DataLoss("corrupted record at offset ", start, " in ", path_,
                                          ": length crc mismatch"));
    }
    const uint64_t length = GetFixed64(header);
    offset_ += sizeof(header);
    // Read the data in growing pieces: a length that passed its CRC can still promise more
    // bytes than the file holds, and memory is only spent on bytes that are there.
    record->clear();
    uint64_t have = 0;
    while (have < length) {
      const uint64_t piece = std::min<uint64_t>(length - have, std::max<uint64_t>(have, 1 << 20));
      record->resize(have + piece);
      PF_RETURN_IF_ERROR(in_->Read(record->data() + have, piece, &got));
      have += got;
      if (got < piece) break;
    }
    char footer[4];
    got = 0;
    if (have == length) PF_RETURN_IF_ERROR(in_->Read(footer, sizeof(footer), &got));
    if (have < length || got < sizeof(footer)) {
      offset_ += have + got;
      return Unframeable(errors::DataLoss("truncated record at offset ", start, " in ", path_, ": ",
                                          length, " data bytes expected, ", have, " found"));
    }
    offset_ += length + sizeof(footer);
    if (GetFixed32(footer) != MaskedCrc32c(*record)) {
      Status bad = errors::DataLoss("corrupted record at offset ", start, " in ", path_,
                                    ": data crc mismatch");
      if (!options_.skip_corrupt) {
        done_ = true;
        return bad;
      }
      ++skipped_;
      PF_LOG_WARN("{}; skipped", bad.message());
      continue;
    }
    return true;
  }
  return false;
}

StatusOr<Compression> ParseCompression(std::string_view s) {
  if (s.empty() || s == "NONE") return Compression::kNone;
  if (s == "ZLIB") return Compression::kZlib;
  if (s == "GZIP") return Compression::kGzip;
  return errors::InvalidArgument("Unknown compression type '", s,
                                 "': expected \"\", \"ZLIB\" or \"GZIP\"");
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kZlib:
      return "ZLIB";
    case Compression::kGzip:
      return "GZIP";
    case Compression::kNone:
      break;
  }
  return "";
}

}  // namespace pf::io
