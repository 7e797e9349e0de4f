// FromTFRecord: records of TFRecord files as DT_STRING scalars.
#include <fmt/format.h>

#include "placeflow/core/logging.h"
#include "placeflow/data/internal.h"

namespace pf::data {
namespace {

class TFRecordNode : public DatasetNode {
 public:
  TFRecordNode(std::vector<std::string> files, io::Compression c, bool skip)
      : DatasetNode({{DT_STRING, Shape{}}}), files_(std::move(files)), c_(c), skip_(skip) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext&) const override {
    return std::make_unique<It>(this);
  }
  std::string DebugString() const override {
    return fmt::format(
        "FromTFRecord({} file{}{})", files_.size(), files_.size() == 1 ? "" : "s",
        c_ == io::Compression::kNone ? std::string() : ", " + std::string(io::CompressionName(c_)));
  }

 private:
  class It : public Iterator {
   public:
    explicit It(const TFRecordNode* n) : n_(n) {}
    StatusOr<bool> GetNext(Element* out) override {
      std::string record;
      while (file_ < n_->files_.size()) {
        if (!reader_) {
          io::RecordReaderOptions o;
          o.compression = n_->c_;
          o.skip_corrupt = n_->skip_;
          PF_ASSIGN_OR_RETURN(reader_, io::RecordReader::Open(n_->files_[file_], o));
        }
        PF_ASSIGN_OR_RETURN(bool more, reader_->Next(&record));
        if (more) {
          Tensor t(DT_STRING, Shape{});
          t.data<std::string>()[0] = std::move(record);
          *out = Element{std::move(t)};
          return true;
        }
        if (reader_->records_skipped() > 0) {
          PF_LOG_WARN("FromTFRecord: skipped {} corrupt record(s) of {}",
                      reader_->records_skipped(), n_->files_[file_]);
        }
        reader_.reset();
        ++file_;
      }
      return false;
    }

   private:
    const TFRecordNode* n_;
    size_t file_ = 0;
    std::unique_ptr<io::RecordReader> reader_;
  };
  std::vector<std::string> files_;
  io::Compression c_;
  bool skip_;
};

}  // namespace

Dataset Dataset::FromTFRecord(std::vector<std::string> files, io::Compression compression,
                              bool skip_corrupt) {
  if (files.empty()) throw Error(errors::InvalidArgument("FromTFRecord needs at least one file"));
  return Dataset(std::make_shared<TFRecordNode>(std::move(files), compression, skip_corrupt));
}

Dataset Dataset::FromFileNames(std::vector<std::string> files) {
  Tensor t(DT_STRING, Shape{static_cast<int64_t>(files.size())});
  for (size_t i = 0; i < files.size(); ++i) t.data<std::string>()[i] = std::move(files[i]);
  return FromTensorSlices({t});
}

}  // namespace pf::data
