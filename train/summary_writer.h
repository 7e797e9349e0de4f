// SummaryWriter: TensorBoard event files written on a background thread (TensorFlow's
// tf.compat.v1.summary.FileWriter).
//
//   pf::SummaryWriter writer("runs/a");                  // runs/a/events.out.tfevents.<t>.<host>
//   writer.AddGraph(g, sess.DevicePlacement());          // the graph tab, coloured by device
//   for (int64_t step = 1; ...; ++step) {
//     auto r = sess.Run({{x, batch}}, {merged, loss}, {train_op});
//     writer.AddSummary(r[0], step);                     // what summary ops output
//     writer.AddScalar("examples_per_sec", rate, step);  // or a host-side value
//   }
//   writer.AddRunMetadata("step_3", metadata, 3);        // from RunOptions{.trace = true}
//   writer.Close();                                      // or the destructor
//
// Add* serialize the event on the caller's thread and append it to a queue under a mutex that
// is held only for that append (the writer thread holds it only to swap the queue for an empty
// one), so a training loop never waits for disk I/O. The thread writes what it took and flushes
// the file every `flush_secs`, whenever `max_queue` events are waiting, and on Flush/Close. The
// first write error is kept: Flush and Close throw it. Only built with protobuf
// (PF_WITH_PROTOBUF).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"
#include "placeflow/executor/trace.h"
#include "placeflow/graph/graph.h"

namespace pf {

namespace io {
class EventFileWriter;
}

struct SummaryWriterOptions {
  double flush_secs = 120;  // TensorFlow's FileWriter default
  int max_queue = 10;       // events waiting before the thread is woken to write them
  std::string filename_suffix;
};

class SummaryWriter {
 public:
  // Creates `logdir` and the event file (its first record is file_version "brain.Event:2").
  // Throws pf::Error naming the directory when it cannot.
  explicit SummaryWriter(const std::string& logdir, SummaryWriterOptions options = {});
  ~SummaryWriter();  // Close(); errors are logged
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // A summary op's output: a DT_STRING scalar holding a serialized Summary (InvalidArgument
  // for anything else).
  void AddSummary(const Tensor& summary, int64_t step);
  void AddSummary(std::string_view serialized_summary, int64_t step);
  void AddScalar(const std::string& tag, double value, int64_t step);
  // The graph as a GraphDef whose nodes carry op, inputs, attrs and device: `placement`'s
  // (Session::DevicePlacement(): the assigned devices) where given, else the requested one.
  void AddGraph(const Graph& graph, const std::map<std::string, std::string>& placement = {});
  // One traced step's statistics (RunOptions::trace) as a RunMetadata with per-device
  // StepStats: per node its start, its compute time and its output bytes.
  void AddRunMetadata(const std::string& tag, const RunMetadata& metadata, int64_t step);

  // Blocks until everything added so far is written and flushed to the OS.
  void Flush();
  // Flushes, stops the thread and closes the file. Later Add* calls are ignored.
  void Close();
  const std::string& path() const { return path_; }
  int64_t events_written() const;

 private:
  void Enqueue(std::string event);
  void Loop();

  SummaryWriterOptions options_;
  std::unique_ptr<io::EventFileWriter> file_;
  std::string path_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable wake_, flushed_;
  std::vector<std::string> queue_;  // guarded by mu_
  int64_t enqueued_ = 0, written_ = 0;
  int64_t flush_requested_ = 0, flushed_upto_ = 0;  // counts of enqueued events
  bool stop_ = false, closed_ = false;
  Status error_;
};

// The RunMetadata record's message (serialized tensorflow.RunMetadata): exposed for tests.
// `step_start_micros`: the step's start since the epoch.
std::string RunMetadataProto(const RunMetadata& metadata, int64_t step_start_micros);

}  // namespace pf
