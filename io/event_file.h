// TensorBoard event files: a TFRecord file (io/record_io.h) of serialized tensorflow.Event
// messages (io/proto/event.proto), named events.out.tfevents.<seconds>.<host>, whose first
// record carries file_version "brain.Event:2". The synchronous writer and the reader; the
// asynchronous SummaryWriter that training uses is train/summary_writer.h.
//
//   auto w = pf::io::EventFileWriter::Open("runs/a").value();       // writes the version record
//   w->Write(pf::io::ScalarEvent(pf::io::WallTime(), 10, "loss", 0.25f));
//   w->Close();
//   auto events = pf::io::ReadEventFile(w->path()).value();          // checks every CRC
//   events[1].values[0].tag == "loss";
//
// Only built with protobuf (PF_WITH_PROTOBUF).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/io/record_io.h"

namespace pf::io {

inline constexpr char kEventFileVersion[] = "brain.Event:2";

double WallTime();  // seconds since the epoch, with microseconds
// "events.out.tfevents.<seconds>.<host><suffix>" (TensorFlow's name).
std::string EventFileName(double wall_time, const std::string& host, const std::string& suffix);

// Serialized Events.
std::string FileVersionEvent(double wall_time);
// `summary`: a serialized tensorflow.Summary (what summary ops output), embedded as is.
std::string SummaryEvent(double wall_time, int64_t step, std::string_view summary);
std::string ScalarEvent(double wall_time, int64_t step, const std::string& tag, float value);
std::string GraphEvent(double wall_time, std::string_view graph_def);
std::string RunMetadataEvent(double wall_time, int64_t step, const std::string& tag,
                             std::string_view run_metadata);

class EventFileWriter {
 public:
  // Creates `logdir` (and parents) and a new event file in it, and writes the file_version
  // record. A name already taken (two writers in one second) gets ".1", ".2", ... appended.
  static StatusOr<std::unique_ptr<EventFileWriter>> Open(const std::string& logdir,
                                                         const std::string& suffix = "");
  Status Write(std::string_view serialized_event);
  Status Flush();
  Status Close();
  const std::string& path() const { return writer_->path(); }

 private:
  explicit EventFileWriter(std::unique_ptr<RecordWriter> w) : writer_(std::move(w)) {}
  std::unique_ptr<RecordWriter> writer_;
};

// What one Summary.Value holds, readable without protobuf.
struct SummaryValue {
  enum class Kind { kScalar, kHistogram, kImage, kOther };
  std::string tag;
  Kind kind = Kind::kOther;
  double scalar = 0;
  // Histograms.
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limits, buckets;
  // Images.
  int width = 0, height = 0, colorspace = 0;
  std::string png;
};

// One Event, readable without protobuf.
struct EventRecord {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::string graph_def;             // serialized GraphDef
  std::string run_metadata_tag;      // tagged_run_metadata
  std::string run_metadata;          // serialized RunMetadata
  std::vector<SummaryValue> values;  // summary
};

// Every event of an event file, in order; each record's CRCs are checked (DataLoss naming the
// file and byte offset), and a record that is not an Event is DataLoss too.
StatusOr<std::vector<EventRecord>> ReadEventFile(const std::string& path);
// Event files of `logdir` (names containing "tfevents"), sorted.
std::vector<std::string> ListEventFiles(const std::string& logdir);

}  // namespace pf::io
