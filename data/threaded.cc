// The transformations with threads of their own: parallel Map and Prefetch. Each iterator owns
// its threads (started at its first GetNext) and joins them in Cancel, which its destructor
// calls: destroying an iterator (a session closing, a re-initialisation) stops every thread of
// the pipeline. Cancel joins the iterator's own threads before cancelling its input, so no
// iterator is ever used by two threads at once.
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "placeflow/core/allocator.h"
#include "placeflow/data/internal.h"
#include "placeflow/graph/cancellation.h"

namespace pf::data {
namespace {

Status CancelledError() { return errors::Cancelled("The dataset iterator was cancelled"); }

// Workers pull input elements in sequence order (under input_mu_), map them concurrently and
// hand each result to File with its sequence number; the subclass keeps results in order for
// its consumer. So the output order is the input order whatever the thread count and timing.
// Workers run at most capacity_ elements past consumed_, the elements the consumer has taken.
class ParallelMapBase : public Iterator {
 public:
  ParallelMapBase(std::unique_ptr<Iterator> in, const MapFn* fn, const ElementSpec* spec, int n,
                  int64_t capacity, int64_t iteration)
      : spec_(spec),
        input_(std::move(in)),
        fn_(fn),
        num_threads_(n),
        capacity_(capacity),
        iteration_(iteration) {}

  void Cancel() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelled_) return;
      cancelled_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    input_->Cancel();
  }

 protected:
  // Files the result of element `seq` (called without mu_ held) and wakes the consumer.
  virtual void File(int64_t seq, StatusOr<Element> r) = 0;
  // Where element `seq`'s result may be written (MapContext::rows), if anywhere.
  virtual bool RowsFor(int64_t /*seq*/, Element* /*rows*/) { return false; }

  // Under mu_: starts the workers at the first call.
  void StartOnce() {
    if (started_) return;
    started_ = true;
    for (int i = 0; i < num_threads_; ++i) threads_.emplace_back([this] { Work(); });
  }
  // Under mu_: a failure ends the iterator (TensorFlow's iterators end after an error too).
  void Fail() {
    failed_ = true;
    input_end_ = true;
    cv_.notify_all();
  }

  const ElementSpec* spec_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false, input_end_ = false, failed_ = false;
  int64_t consumed_ = 0, end_seq_ = 0;

 private:
  void Work() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return cancelled_ || input_end_ || issued_ - consumed_ < capacity_; });
        if (cancelled_ || input_end_) return;
      }
      int64_t seq;
      Element e;
      StatusOr<bool> more = false;
      {
        std::lock_guard<std::mutex> in_lock(input_mu_);
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (cancelled_ || input_end_) return;
          seq = issued_++;
        }
        more = input_->GetNext(&e);
        if (!more.ok() || !*more) {
          // Still under input_mu_: no other worker reads the input past its end.
          {
            std::lock_guard<std::mutex> lock(mu_);
            end_seq_ = more.ok() ? seq : seq + 1;
            input_end_ = true;
            cv_.notify_all();
          }
          if (!more.ok()) File(seq, more.status());
          return;
        }
      }
      MapContext ctx{.index = seq, .iteration = iteration_};
      Element rows;
      if (RowsFor(seq, &rows)) ctx.rows = &rows;
      File(seq, RunMapFn(*fn_, std::move(e), ctx, *spec_));
    }
  }

  std::unique_ptr<Iterator> input_;
  const MapFn* fn_;
  const int num_threads_;
  const int64_t capacity_, iteration_;
  std::mutex input_mu_;  // serialises input_->GetNext and the sequence numbers it goes with
  bool started_ = false;
  int64_t issued_ = 0;
  std::vector<std::thread> threads_;
};

// Map(fn, n): up to 2n elements ahead, each result filed by sequence number.
class ParallelMapIt : public ParallelMapBase {
 public:
  ParallelMapIt(std::unique_ptr<Iterator> in, const MapFn* fn, const ElementSpec* spec, int n,
                int64_t iteration)
      : ParallelMapBase(std::move(in), fn, spec, n, 2 * n, iteration) {}
  ~ParallelMapIt() override { Cancel(); }

  StatusOr<bool> GetNext(Element* out) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (failed_) return false;
    StartOnce();
    cv_.wait(lock, [&] {
      return cancelled_ || results_.count(consumed_) || (input_end_ && consumed_ >= end_seq_);
    });
    if (cancelled_) return CancelledError();
    auto it = results_.find(consumed_);
    if (it == results_.end()) return false;
    StatusOr<Element> r = std::move(it->second);
    results_.erase(it);
    ++consumed_;
    cv_.notify_all();
    if (!r.ok()) {
      Fail();
      results_.clear();
      return r.status();
    }
    *out = std::move(*r);
    return true;
  }

 private:
  void File(int64_t seq, StatusOr<Element> r) override {
    std::lock_guard<std::mutex> lock(mu_);
    results_.emplace(seq, std::move(r));
    cv_.notify_all();
  }

  std::map<int64_t, StatusOr<Element>> results_;
};

// Map(fn, n) followed by Batch(batch), fused as tf.data's map_and_batch_fusion does it: each
// worker copies its result into its row of the batch being filled while the result is still in
// its cache, instead of the consumer stacking a whole batch alone afterwards. Only for results
// whose spec has every shape fully defined (so no batch can be ragged).
class ParallelMapBatchIt : public ParallelMapBase {
 public:
  ParallelMapBatchIt(std::unique_ptr<Iterator> in, const MapFn* fn, const ElementSpec* spec, int n,
                     int64_t iteration, int64_t batch, bool drop_remainder)
      : ParallelMapBase(std::move(in), fn, spec, n, batch + 2 * n, iteration),
        batch_(batch),
        drop_(drop_remainder) {}
  ~ParallelMapBatchIt() override { Cancel(); }

  StatusOr<bool> GetNext(Element* out) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (failed_) return false;
    StartOnce();
    const int64_t b = consumed_ / batch_;
    cv_.wait(lock,
             [&] { return cancelled_ || Complete(b) || (input_end_ && consumed_ >= end_seq_); });
    if (cancelled_) return CancelledError();
    auto it = batches_.find(b);
    if (it == batches_.end() || !Complete(b)) return false;
    const int64_t rows = Rows(b);
    Partial p = std::move(it->second);
    batches_.erase(it);
    consumed_ += rows;
    cv_.notify_all();
    if (!p.error.ok()) {
      Fail();
      return p.error;
    }
    if (rows < batch_) {
      if (drop_) return false;
      for (Tensor& t : p.rows) {  // the short last batch: its first rows, the same buffer
        PF_ASSIGN_OR_RETURN(t, t.SliceRows(0, rows));
      }
    }
    *out = std::move(p.rows);
    return true;
  }

 private:
  struct Partial {
    Element rows;  // [batch_, ...] per component, allocated by the first result to arrive
    int64_t done = 0;
    Status error;  // the error of the earliest failed element
    int64_t error_seq = -1;
  };

  // Under mu_: batch b's rows (all but the last batch are full) and whether all have arrived.
  int64_t Rows(int64_t b) const {
    return input_end_ ? std::min(batch_, end_seq_ - b * batch_) : batch_;
  }
  bool Complete(int64_t b) const {
    auto it = batches_.find(b);
    return it != batches_.end() && it->second.done == Rows(b);
  }

  // Handles on batch b's tensors, allocated by the first caller.
  StatusOr<Element> BatchTensors(int64_t b) {
    std::lock_guard<std::mutex> lock(mu_);
    Partial& p = batches_[b];
    if (p.rows.empty()) PF_RETURN_IF_ERROR(Allocate(&p.rows));
    return p.rows;
  }

  // Views of the batch's row `seq`: each holds the batch's buffer while it lives.
  bool RowsFor(int64_t seq, Element* rows) override {
    StatusOr<Element> batch = BatchTensors(seq / batch_);
    if (!batch.ok()) return false;  // File says why
    const int64_t row = seq % batch_;
    for (const Tensor& t : *batch) {
      Shape s = t.shape();
      s.RemoveDim(0);
      StatusOr<Tensor> view = t.SliceRows(row, row + 1);  // shares (and holds) the batch's buffer
      if (view.ok()) view = view->Reshaped(s);
      if (!view.ok()) return false;
      rows->push_back(*std::move(view));
    }
    return true;
  }

  void File(int64_t seq, StatusOr<Element> r) override {
    const int64_t b = seq / batch_;
    Status error = r.status();
    if (r.ok()) {
      // Handles on the batch's tensors: kept alive by this worker while it copies.
      StatusOr<Element> rows = BatchTensors(b);
      error = rows.status();
      for (size_t c = 0; error.ok() && c < rows->size(); ++c)
        CopyRow((*r)[c], seq % batch_, &(*rows)[c]);
    }
    std::lock_guard<std::mutex> lock(mu_);
    Partial& p = batches_[b];
    if (!error.ok() && (p.error_seq < 0 || seq < p.error_seq)) {
      p.error = error;
      p.error_seq = seq;
    }
    ++p.done;
    cv_.notify_all();
  }

  // Every component's [batch_, ...] tensor into *rows, or none of them (ResourceExhausted).
  Status Allocate(Element* rows) const {
    Element all;
    for (const ComponentSpec& c : *spec_) {
      Shape s = c.shape;
      s.InsertDim(0, batch_);
      PF_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator(), c.dtype, s));
      all.push_back(std::move(t));
    }
    *rows = std::move(all);
    return Status::OK();
  }
  const int64_t batch_;
  const bool drop_;
  std::map<int64_t, Partial> batches_;
};

// A producer thread fills a bounded buffer; the consumer takes from it. GetNextAsync never
// waits: a request that finds the buffer empty is completed by the producer, or by the step's
// cancellation.
class PrefetchIt : public Iterator {
 public:
  PrefetchIt(std::unique_ptr<Iterator> in, int64_t capacity)
      : s_(std::make_shared<State>()), input_(std::move(in)), capacity_(capacity) {}
  ~PrefetchIt() override { Cancel(); }

  bool SupportsAsync() const override { return true; }

  StatusOr<bool> GetNext(Element* out) override {
    std::unique_lock<std::mutex> lock(s_->mu);
    if (!started_) Start();
    s_->cv.wait(lock, [&] { return Ready(); });
    return TakeLocked(out);
  }

  void GetNextAsync(Element* out, CancellationManager* cm,
                    std::function<void(StatusOr<bool>)> done) override {
    std::unique_lock<std::mutex> lock(s_->mu);
    if (!started_) Start();
    if (s_->pending.empty() && Ready()) {
      StatusOr<bool> r = TakeLocked(out);
      lock.unlock();
      return done(std::move(r));
    }
    Request req{s_->next_id++, out, std::move(done), cm, 0};
    if (cm != nullptr) {
      std::weak_ptr<State> weak = s_;
      const uint64_t id = req.id;
      // Register never runs the callback itself, so holding mu here is safe.
      if (!cm->Register(
              &req.token, [weak, id](const Status& st) { CancelRequest(weak, id, st); },
              [] { return std::string("IteratorGetNext: the input pipeline's next element"); })) {
        Status st = cm->status();
        lock.unlock();
        return req.done(st);
      }
    }
    s_->pending.push_back(std::move(req));
  }

  void Cancel() override {
    std::vector<Completion> completions;
    {
      std::lock_guard<std::mutex> lock(s_->mu);
      if (s_->cancelled) return;
      s_->cancelled = true;
      // Every waiting request ends here; a step cancellation racing with this finds none.
      for (Request& r : s_->pending) {
        if (r.cm != nullptr) r.cm->Deregister(r.token);
        completions.push_back({std::move(r.done), CancelledError()});
      }
      s_->pending.clear();
    }
    s_->cv.notify_all();
    if (producer_.joinable()) producer_.join();
    input_->Cancel();
    for (Completion& c : completions) c.done(std::move(c.result));
  }

 private:
  struct Request {
    uint64_t id;
    Element* out;
    std::function<void(StatusOr<bool>)> done;
    CancellationManager* cm;
    CancellationManager::Token token;
  };
  struct Completion {
    std::function<void(StatusOr<bool>)> done;
    StatusOr<bool> result;
  };
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Element> buffer;
    bool end = false, cancelled = false;
    Status error;
    std::list<Request> pending;
    uint64_t next_id = 1;
  };

  bool Ready() const { return s_->cancelled || !s_->buffer.empty() || s_->end; }

  StatusOr<bool> TakeLocked(Element* out) { return TakeLocked(*s_, out); }
  static StatusOr<bool> TakeLocked(State& s, Element* out) {
    if (!s.buffer.empty()) {
      *out = std::move(s.buffer.front());
      s.buffer.pop_front();
      s.cv.notify_all();  // room for the producer
      return true;
    }
    if (!s.error.ok()) return s.error;
    if (s.end) return false;
    return CancelledError();
  }

  static void CancelRequest(const std::weak_ptr<State>& weak, uint64_t id, const Status& st) {
    auto s = weak.lock();
    if (!s) return;
    std::vector<Completion> completions;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      for (auto it = s->pending.begin(); it != s->pending.end(); ++it) {
        if (it->id != id) continue;
        completions.push_back({std::move(it->done), st});
        s->pending.erase(it);
        break;
      }
      ServeLocked(*s, &completions);  // those queued behind it
    }
    for (Completion& c : completions) c.done(std::move(c.result));
  }

  // Serves waiting requests in order while elements (or the end) are there.
  static void ServeLocked(State& s, std::vector<Completion>* completions) {
    while (!s.pending.empty() && (!s.buffer.empty() || s.end)) {
      Request& r = s.pending.front();
      if (r.cm != nullptr && !r.cm->Deregister(r.token)) return;  // its cancellation serves it
      StatusOr<bool> result = TakeLocked(s, r.out);
      completions->push_back({std::move(r.done), std::move(result)});
      s.pending.pop_front();
    }
  }

  void Start() {
    started_ = true;
    producer_ = std::thread([this] { Produce(); });
  }

  void Produce() {
    State& s = *s_;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(s.mu);
        s.cv.wait(lock,
                  [&] { return s.cancelled || static_cast<int64_t>(s.buffer.size()) < capacity_; });
        if (s.cancelled) return;
      }
      Element e;
      StatusOr<bool> more = input_->GetNext(&e);
      std::vector<Completion> completions;
      bool end;
      {
        std::lock_guard<std::mutex> lock(s.mu);
        if (!more.ok()) {
          s.error = more.status();
          s.end = true;
        } else if (!*more) {
          s.end = true;
        } else {
          s.buffer.push_back(std::move(e));
        }
        end = s.end;
        ServeLocked(s, &completions);
      }
      s.cv.notify_all();
      for (Completion& c : completions) c.done(std::move(c.result));
      if (end) return;
    }
  }

  std::shared_ptr<State> s_;
  std::unique_ptr<Iterator> input_;
  const int64_t capacity_;
  bool started_ = false;  // under s_->mu
  std::thread producer_;
};

class PrefetchNode : public UnaryNode {
 public:
  PrefetchNode(Dataset in, int64_t n) : UnaryNode(in, in.spec()), n_(n) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override {
    return std::make_unique<PrefetchIt>(input().node()->MakeIterator(ctx), n_);
  }
  std::string DebugString() const override {
    return fmt::format("{} -> Prefetch({})", input().DebugString(), n_);
  }

 private:
  int64_t n_;
};

}  // namespace

std::unique_ptr<Iterator> MakeParallelMapIterator(std::unique_ptr<Iterator> input, const MapFn* fn,
                                                  const ElementSpec* spec, int num_threads,
                                                  int64_t iteration) {
  return std::make_unique<ParallelMapIt>(std::move(input), fn, spec, num_threads, iteration);
}

std::unique_ptr<Iterator> MakeParallelMapBatchIterator(std::unique_ptr<Iterator> input,
                                                       const MapFn* fn, const ElementSpec* spec,
                                                       int num_threads, int64_t iteration,
                                                       int64_t batch_size, bool drop_remainder) {
  return std::make_unique<ParallelMapBatchIt>(std::move(input), fn, spec, num_threads, iteration,
                                              batch_size, drop_remainder);
}

Dataset MakePrefetch(const Dataset& input, int64_t buffer_size) {
  return Dataset(std::make_shared<PrefetchNode>(input, buffer_size));
}

}  // namespace pf::data
