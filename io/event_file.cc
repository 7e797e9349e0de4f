#include "placeflow/io/event_file.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "placeflow/io/proto/event.pb.h"

namespace pf::io {

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string EventFileName(double wall_time, const std::string& host, const std::string& suffix) {
  return "events.out.tfevents." + std::to_string(static_cast<int64_t>(wall_time)) + "." + host +
         suffix;
}

namespace {

std::string Serialize(const tensorflow::Event& e) {
  std::string out;
  e.SerializeToString(&out);
  return out;
}

tensorflow::Event Base(double wall_time, int64_t step) {
  tensorflow::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  return e;
}

std::string HostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

}  // namespace

std::string FileVersionEvent(double wall_time) {
  tensorflow::Event e = Base(wall_time, 0);
  e.set_file_version(kEventFileVersion);
  return Serialize(e);
}

std::string SummaryEvent(double wall_time, int64_t step, std::string_view summary) {
  // The summary's bytes go in as field 5 without being parsed again: a message field is its
  // serialized bytes, length-delimited.
  std::string out = Serialize(Base(wall_time, step));
  out += static_cast<char>((5 << 3) | 2);
  uint64_t n = summary.size();
  while (n >= 0x80) {
    out += static_cast<char>((n & 0x7F) | 0x80);
    n >>= 7;
  }
  out += static_cast<char>(n);
  out.append(summary);
  return out;
}

std::string ScalarEvent(double wall_time, int64_t step, const std::string& tag, float value) {
  tensorflow::Event e = Base(wall_time, step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return Serialize(e);
}

std::string GraphEvent(double wall_time, std::string_view graph_def) {
  tensorflow::Event e = Base(wall_time, 0);
  e.set_graph_def(std::string(graph_def));
  return Serialize(e);
}

std::string RunMetadataEvent(double wall_time, int64_t step, const std::string& tag,
                             std::string_view run_metadata) {
  tensorflow::Event e = Base(wall_time, step);
  e.mutable_tagged_run_metadata()->set_tag(tag);
  e.mutable_tagged_run_metadata()->set_run_metadata(std::string(run_metadata));
  return Serialize(e);
}

StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Open(const std::string& logdir,
                                                                 const std::string& suffix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(logdir, ec);
  if (ec || !fs::is_directory(logdir)) {
    return errors::FailedPrecondition("cannot create the log directory '", logdir,
                                      "': ", ec ? ec.message() : "not a directory");
  }
  const double now = WallTime();
  const std::string base = (fs::path(logdir) / EventFileName(now, HostName(), suffix)).string();
  std::string path = base;
  for (int i = 1; fs::exists(path); ++i) path = base + "." + std::to_string(i);
  PF_ASSIGN_OR_RETURN(std::unique_ptr<RecordWriter> w, RecordWriter::Open(path));
  std::unique_ptr<EventFileWriter> out(new EventFileWriter(std::move(w)));
  PF_RETURN_IF_ERROR(out->Write(FileVersionEvent(now)));
  PF_RETURN_IF_ERROR(out->Flush());
  return out;
}

Status EventFileWriter::Write(std::string_view serialized_event) {
  return writer_->Write(serialized_event);
}
Status EventFileWriter::Flush() { return writer_->Flush(); }
Status EventFileWriter::Close() { return writer_->Close(); }

StatusOr<std::vector<EventRecord>> ReadEventFile(const std::string& path) {
  PF_ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> r, RecordReader::Open(path));
  std::vector<EventRecord> out;
  std::string record;
  for (;;) {
    const uint64_t offset = r->offset();
    PF_ASSIGN_OR_RETURN(bool more, r->Next(&record));
    if (!more) break;
    tensorflow::Event e;
    if (!e.ParseFromString(record)) {
      return errors::DataLoss("record at offset ", offset, " of '", path,
                              "' is not a tensorflow.Event");
    }
    EventRecord ev;
    ev.wall_time = e.wall_time();
    ev.step = e.step();
    ev.file_version = e.file_version();
    ev.graph_def = e.graph_def();
    ev.run_metadata_tag = e.tagged_run_metadata().tag();
    ev.run_metadata = e.tagged_run_metadata().run_metadata();
    for (const auto& v : e.summary().value()) {
      SummaryValue sv;
      sv.tag = v.tag();
      switch (v.value_case()) {
        case tensorflow::Summary::Value::kSimpleValue:
          sv.kind = SummaryValue::Kind::kScalar;
          sv.scalar = v.simple_value();
          break;
        case tensorflow::Summary::Value::kHisto: {
          const auto& h = v.histo();
          sv.kind = SummaryValue::Kind::kHistogram;
          sv.min = h.min();
          sv.max = h.max();
          sv.num = h.num();
          sv.sum = h.sum();
          sv.sum_squares = h.sum_squares();
          sv.bucket_limits.assign(h.bucket_limit().begin(), h.bucket_limit().end());
          sv.buckets.assign(h.bucket().begin(), h.bucket().end());
          break;
        }
        case tensorflow::Summary::Value::kImage:
          sv.kind = SummaryValue::Kind::kImage;
          sv.width = v.image().width();
          sv.height = v.image().height();
          sv.colorspace = v.image().colorspace();
          sv.png = v.image().encoded_image_string();
          break;
        default:
          break;
      }
      ev.values.push_back(std::move(sv));
    }
    out.push_back(std::move(ev));
  }
  return out;
}

std::vector<std::string> ListEventFiles(const std::string& logdir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(logdir, ec)) {
    if (entry.path().filename().string().find("tfevents") != std::string::npos)
      out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace pf::io
