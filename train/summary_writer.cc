#include "placeflow/train/summary_writer.h"

#include <chrono>
#include <set>

#include "placeflow/core/logging.h"
#include "placeflow/graph/graph_def.h"
#include "placeflow/io/event_file.h"
#include "placeflow/io/proto/step_stats.pb.h"

namespace pf {

SummaryWriter::SummaryWriter(const std::string& logdir, SummaryWriterOptions options)
    : options_(std::move(options)) {
  if (options_.max_queue < 1) options_.max_queue = 1;
  file_ = io::EventFileWriter::Open(logdir, options_.filename_suffix).ValueOrThrow();
  path_ = file_->path();
  thread_ = std::thread([this] { Loop(); });
}

SummaryWriter::~SummaryWriter() {
  try {
    Close();
  } catch (const Error& e) {
    PF_LOG_ERROR("SummaryWriter for {}: {}", path_, e.what());
  }
}

void SummaryWriter::Enqueue(std::string event) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    queue_.push_back(std::move(event));
    ++enqueued_;
    wake = static_cast<int>(queue_.size()) >= options_.max_queue;
  }
  if (wake) wake_.notify_one();
}

void SummaryWriter::Loop() {
  const auto period = std::chrono::duration<double>(options_.flush_secs);
  std::vector<std::string> batch;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait_for(lock, period, [this] {
      return stop_ || static_cast<int>(queue_.size()) >= options_.max_queue ||
             flush_requested_ > flushed_upto_;
    });
    // Whatever is queued now is written and flushed (also on a timeout: the period's flush).
    batch.swap(queue_);
    const int64_t upto = enqueued_;
    const bool stopping = stop_;
    lock.unlock();
    Status s;
    for (const std::string& e : batch) {
      if (s.ok()) s = file_->Write(e);
    }
    if (s.ok()) s = file_->Flush();
    batch.clear();
    lock.lock();
    if (s.ok()) written_ = upto;
    if (!s.ok() && error_.ok()) error_ = s;
    flushed_upto_ = upto;
    flushed_.notify_all();
    if (stopping && queue_.empty()) return;
  }
}

void SummaryWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) {
    ThrowIfError(error_);
    return;
  }
  const int64_t target = enqueued_;
  flush_requested_ = std::max(flush_requested_, target);
  wake_.notify_one();
  flushed_.wait(lock, [&] { return flushed_upto_ >= target; });
  ThrowIfError(error_);
}

void SummaryWriter::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) {
      ThrowIfError(error_);
      return;
    }
    closed_ = true;
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  Status s = file_->Close();
  std::lock_guard<std::mutex> lock(mu_);
  if (!s.ok() && error_.ok()) error_ = s;
  ThrowIfError(error_);
}

int64_t SummaryWriter::events_written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

void SummaryWriter::AddSummary(const Tensor& summary, int64_t step) {
  if (summary.dtype() != DT_STRING || summary.num_elements() != 1) {
    throw Error(errors::InvalidArgument(
        "SummaryWriter::AddSummary takes a summary op's output, a string scalar; got ",
        DTypeName(summary.dtype()), " ", summary.shape().ToString()));
  }
  AddSummary(summary.flat<std::string>()[0], step);
}

void SummaryWriter::AddSummary(std::string_view serialized_summary, int64_t step) {
  Enqueue(io::SummaryEvent(io::WallTime(), step, serialized_summary));
}

void SummaryWriter::AddScalar(const std::string& tag, double value, int64_t step) {
  Enqueue(io::ScalarEvent(io::WallTime(), step, tag, static_cast<float>(value)));
}

void SummaryWriter::AddGraph(const Graph& graph,
                             const std::map<std::string, std::string>& placement) {
  std::string def = SerializeGraphDef(graph, placement).ValueOrThrow();
  Enqueue(io::GraphEvent(io::WallTime(), def));
}

std::string RunMetadataProto(const RunMetadata& metadata, int64_t step_start_micros) {
  tensorflow::RunMetadata md;
  std::map<std::string, tensorflow::DeviceStepStats*> by_device;
  for (const NodeExecStats& n : metadata.step_stats) {
    auto*& dev = by_device[n.device];
    if (dev == nullptr) {
      dev = md.mutable_step_stats()->add_dev_stats();
      dev->set_device(n.device);
    }
    (*dev->mutable_thread_names())[static_cast<uint32_t>(n.thread)] =
        "thread " + std::to_string(n.thread);
    tensorflow::NodeExecStats* s = dev->add_node_stats();
    const int64_t duration = std::max<int64_t>(0, n.end_us - n.start_us);
    s->set_node_name(n.node);
    s->set_all_start_micros(step_start_micros + n.start_us);
    s->set_op_start_rel_micros(0);
    s->set_op_end_rel_micros(duration);
    s->set_all_end_rel_micros(duration);
    s->set_all_start_nanos((step_start_micros + n.start_us) * 1000);
    s->set_op_end_rel_nanos(duration * 1000);
    s->set_all_end_rel_nanos(duration * 1000);
    s->set_timeline_label(n.node + " = " + n.op + "()");
    s->set_thread_id(static_cast<uint32_t>(n.thread));
    // The bytes of the node's outputs, allocated on its device (what TensorBoard shows as the
    // node's memory).
    tensorflow::AllocatorMemoryUsed* mem = s->add_memory();
    mem->set_allocator_name(n.device);
    mem->set_total_bytes(n.output_bytes);
    mem->set_peak_bytes(n.output_bytes);
  }
  std::string out;
  md.SerializeToString(&out);
  return out;
}

void SummaryWriter::AddRunMetadata(const std::string& tag, const RunMetadata& metadata,
                                   int64_t step) {
  const double now = io::WallTime();
  const int64_t start = static_cast<int64_t>(now * 1e6) - metadata.step_us;
  Enqueue(io::RunMetadataEvent(now, step, tag, RunMetadataProto(metadata, start)));
}

}  // namespace pf
