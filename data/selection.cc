// The transformations that choose which input elements pass and in what order, leaving each
// element as it is: Shuffle, Repeat, Take, Skip, Shard and Interleave. Sources, Map and Batch are
// in data/dataset.cc.
#include <fmt/format.h>

#include <limits>
#include <random>

#include "placeflow/data/dataset.h"
#include "placeflow/data/internal.h"

namespace pf::data {
namespace {

// --- Shuffle ---

class ShuffleIt : public UnaryIterator {
 public:
  ShuffleIt(std::unique_ptr<Iterator> in, int64_t buffer_size, uint64_t seed)
      : UnaryIterator(std::move(in)), buffer_size_(buffer_size), rng_(seed) {}
  StatusOr<bool> GetNext(Element* out) override {
    while (!input_done_ && static_cast<int64_t>(buffer_.size()) < buffer_size_) {
      Element e;
      PF_ASSIGN_OR_RETURN(bool more, input_->GetNext(&e));
      if (!more) {
        input_done_ = true;
        break;
      }
      buffer_.push_back(std::move(e));
    }
    if (buffer_.empty()) return false;
    const size_t i = rng_() % buffer_.size();
    *out = std::move(buffer_[i]);
    // The next input element takes the slot; at the end, the last buffered one does.
    Element next;
    bool more = false;
    if (!input_done_) {
      PF_ASSIGN_OR_RETURN(more, input_->GetNext(&next));
      if (!more) input_done_ = true;
    }
    if (more) {
      buffer_[i] = std::move(next);
    } else {
      if (i + 1 != buffer_.size()) buffer_[i] = std::move(buffer_.back());
      buffer_.pop_back();
    }
    return true;
  }

 private:
  const int64_t buffer_size_;
  std::mt19937_64 rng_;
  std::vector<Element> buffer_;
  bool input_done_ = false;
};

class ShuffleNode : public UnaryNode {
 public:
  ShuffleNode(Dataset in, int64_t buffer, uint64_t seed, bool reshuffle)
      : UnaryNode(in, in.spec()), buffer_(buffer), seed_(seed), reshuffle_(reshuffle) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override {
    const uint64_t seed = MixSeed(seed_, reshuffle_ ? static_cast<uint64_t>(ctx.iteration) : 0);
    return std::make_unique<ShuffleIt>(input().node()->MakeIterator(ctx), buffer_, seed);
  }
  std::string DebugString() const override {
    return fmt::format("{} -> Shuffle({})", input().DebugString(), buffer_);
  }

 private:
  int64_t buffer_;
  uint64_t seed_;
  bool reshuffle_;
};

// --- Repeat, Take, Skip, Shard ---

class RepeatIt : public Iterator {
 public:
  RepeatIt(const Dataset* in, int64_t count, IteratorContext ctx)
      : in_(in), count_(count), ctx_(ctx) {}
  StatusOr<bool> GetNext(Element* out) override {
    while (count_ < 0 || pass_ < count_) {
      if (!current_) current_ = in_->MakeIterator(PassContext());
      PF_ASSIGN_OR_RETURN(bool more, current_->GetNext(out));
      if (more) {
        produced_in_pass_ = true;
        return true;
      }
      current_.reset();
      ++pass_;
      // An empty input repeated forever would spin: end instead (as TensorFlow does).
      if (!produced_in_pass_) return false;
      produced_in_pass_ = false;
    }
    return false;
  }
  void Cancel() override {
    if (current_) current_->Cancel();
  }

 private:
  IteratorContext PassContext() const {
    IteratorContext c = ctx_;
    c.iteration = static_cast<int64_t>(static_cast<uint64_t>(ctx_.iteration) * 1000003u +
                                       static_cast<uint64_t>(pass_));
    return c;
  }
  const Dataset* in_;
  const int64_t count_;
  const IteratorContext ctx_;
  int64_t pass_ = 0;
  bool produced_in_pass_ = false;
  std::unique_ptr<Iterator> current_;
};

class RepeatNode : public UnaryNode {
 public:
  RepeatNode(Dataset in, int64_t count) : UnaryNode(in, in.spec()), count_(count) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override {
    return std::make_unique<RepeatIt>(&input(), count_, ctx);
  }
  std::string DebugString() const override {
    return fmt::format("{} -> Repeat({})", input().DebugString(), count_);
  }

 private:
  int64_t count_;
};

// Take, Skip and Shard: which input positions pass.
class SelectIt : public UnaryIterator {
 public:
  SelectIt(std::unique_ptr<Iterator> in, int64_t skip, int64_t take, int64_t stride)
      : UnaryIterator(std::move(in)), skip_(skip), take_(take), stride_(stride) {}
  StatusOr<bool> GetNext(Element* out) override {
    for (; skipped_ < skip_; ++skipped_) {
      Element e;
      PF_ASSIGN_OR_RETURN(bool more, input_->GetNext(&e));
      if (!more) return false;
    }
    if (take_ >= 0 && taken_ >= take_) return false;
    PF_ASSIGN_OR_RETURN(bool more, input_->GetNext(out));
    if (!more) return false;
    ++taken_;
    skipped_ -= stride_ - 1;  // the next stride - 1 inputs are skipped
    return true;
  }

 private:
  int64_t skip_, take_, stride_, skipped_ = 0, taken_ = 0;
};

class SelectNode : public UnaryNode {
 public:
  SelectNode(Dataset in, std::string name, int64_t skip, int64_t take, int64_t stride)
      : UnaryNode(in, in.spec()),
        name_(std::move(name)),
        skip_(skip),
        take_(take),
        stride_(stride) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override {
    return std::make_unique<SelectIt>(input().node()->MakeIterator(ctx), skip_, take_, stride_);
  }
  std::string DebugString() const override {
    return fmt::format("{} -> {}", input().DebugString(), name_);
  }

 private:
  std::string name_;
  int64_t skip_, take_, stride_;
};

// --- Interleave ---

class InterleaveIt : public UnaryIterator {
 public:
  InterleaveIt(std::unique_ptr<Iterator> in, const InterleaveFn* fn, const ElementSpec* spec,
               int64_t cycle, int64_t block, IteratorContext ctx)
      : UnaryIterator(std::move(in)),
        fn_(fn),
        spec_(spec),
        block_(block),
        ctx_(ctx),
        current_(cycle) {}
  StatusOr<bool> GetNext(Element* out) override {
    const size_t cycle = current_.size();
    while (!input_done_ || open_ > 0) {
      std::unique_ptr<Iterator>& slot = current_[index_];
      if (slot) {
        PF_ASSIGN_OR_RETURN(bool more, slot->GetNext(out));
        if (more) {
          PF_RETURN_IF_ERROR(CheckElement(*out, *spec_, "An Interleave function's dataset"));
          if (++in_block_ == block_) Advance(cycle);
          return true;
        }
        slot.reset();
        --open_;
        Advance(cycle);
      } else if (!input_done_) {
        Element e;
        PF_ASSIGN_OR_RETURN(bool more, input_->GetNext(&e));
        if (!more) {
          input_done_ = true;
          continue;
        }
        StatusOr<Dataset> d = (*fn_)(e);
        if (!d.ok()) return d.status();
        slot = d->MakeIterator(ctx_);
        ++open_;
      } else {
        Advance(cycle);
      }
    }
    return false;
  }
  void Cancel() override {
    UnaryIterator::Cancel();
    for (auto& it : current_)
      if (it) it->Cancel();
  }

 private:
  void Advance(size_t cycle) {
    in_block_ = 0;
    index_ = (index_ + 1) % cycle;
  }
  const InterleaveFn* fn_;
  const ElementSpec* spec_;
  const int64_t block_;
  const IteratorContext ctx_;
  std::vector<std::unique_ptr<Iterator>> current_;
  size_t index_ = 0;
  int64_t in_block_ = 0, open_ = 0;
  bool input_done_ = false;
};

class InterleaveNode : public UnaryNode {
 public:
  InterleaveNode(Dataset in, InterleaveFn fn, int64_t cycle, int64_t block, ElementSpec spec)
      : UnaryNode(std::move(in), std::move(spec)),
        fn_(std::move(fn)),
        cycle_(cycle),
        block_(block) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override {
    return std::make_unique<InterleaveIt>(input().node()->MakeIterator(ctx), &fn_, &spec(), cycle_,
                                          block_, ctx);
  }
  std::string DebugString() const override {
    return fmt::format("{} -> Interleave(cycle_length={}, block_length={})", input().DebugString(),
                       cycle_, block_);
  }

 private:
  InterleaveFn fn_;
  int64_t cycle_, block_;
};

}  // namespace

Dataset Dataset::Shuffle(int64_t buffer_size, uint64_t seed, bool reshuffle) const {
  CheckPositive(buffer_size, "buffer_size", "Shuffle");
  return Dataset(std::make_shared<ShuffleNode>(*this, buffer_size, seed, reshuffle));
}

Dataset Dataset::Repeat(int64_t count) const {
  if (count < -1) throw Error(errors::InvalidArgument("Repeat: count must be >= -1, got ", count));
  return Dataset(std::make_shared<RepeatNode>(*this, count));
}

Dataset Dataset::Take(int64_t count) const {
  if (count < -1) throw Error(errors::InvalidArgument("Take: count must be >= -1, got ", count));
  return Dataset(std::make_shared<SelectNode>(*this, fmt::format("Take({})", count), 0, count, 1));
}

Dataset Dataset::Skip(int64_t count) const {
  if (count < -1) throw Error(errors::InvalidArgument("Skip: count must be >= -1, got ", count));
  // Skip(-1) skips everything, as TensorFlow's.
  const int64_t skip = count < 0 ? std::numeric_limits<int64_t>::max() : count;
  return Dataset(std::make_shared<SelectNode>(*this, fmt::format("Skip({})", count), skip, -1, 1));
}

Dataset Dataset::Shard(int64_t num_shards, int64_t index) const {
  CheckPositive(num_shards, "num_shards", "Shard");
  if (index < 0 || index >= num_shards) {
    throw Error(
        errors::InvalidArgument("Shard: index must be in [0, ", num_shards, "), got ", index));
  }
  return Dataset(std::make_shared<SelectNode>(
      *this, fmt::format("Shard({}, {})", num_shards, index), index, -1, num_shards));
}

Dataset Dataset::Interleave(InterleaveFn fn, int64_t cycle_length, int64_t block_length) const {
  if (!fn) throw Error(errors::InvalidArgument("Interleave: the function is empty"));
  CheckPositive(cycle_length, "cycle_length", "Interleave");
  CheckPositive(block_length, "block_length", "Interleave");
  checked();
  // The element spec comes from the datasets fn makes: ask fn for the first input element's.
  auto probe = MakeIterator();
  Element first;
  StatusOr<bool> more = probe->GetNext(&first);
  ElementSpec spec;
  if (more.ok() && *more) {
    StatusOr<Dataset> d = fn(first);
    if (!d.ok()) throw Error(d.status());
    spec = d->spec();
  }
  probe->Cancel();
  return Dataset(
      std::make_shared<InterleaveNode>(*this, std::move(fn), cycle_length, block_length, spec));
}

}  // namespace pf::data
