// Sources and the transformations that change elements (Map, Batch), run on the consumer's
// thread. The ones that choose which elements pass and in what order are in data/selection.cc;
// the threaded ones (parallel Map, Prefetch) in data/threaded.cc.
#include "placeflow/data/dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "placeflow/core/allocator.h"
#include "placeflow/data/idx.h"
#include "placeflow/data/internal.h"

namespace pf::data {

std::string SpecString(const ElementSpec& spec) {
  std::vector<std::string> parts;
  for (const ComponentSpec& c : spec)
    parts.push_back(fmt::format("{} {}", DTypeName(c.dtype), c.shape.ToString()));
  return fmt::format("({})", fmt::join(parts, ", "));
}

uint64_t MixSeed(uint64_t seed, uint64_t salt) {
  // splitmix64 of the pair: nearby seeds and salts give unrelated streams.
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (salt + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t MapContext::Seed(uint64_t seed) const {
  return MixSeed(MixSeed(seed, static_cast<uint64_t>(iteration)), static_cast<uint64_t>(index));
}

Status CheckElement(const Element& e, const ElementSpec& spec, const std::string& what) {
  if (e.size() != spec.size()) {
    return errors::InvalidArgument(what, " produced an element of ", e.size(),
                                   " components, expected ", spec.size(), " ", SpecString(spec));
  }
  for (size_t i = 0; i < e.size(); ++i) {
    if (!e[i].IsInitialized() || e[i].dtype() != spec[i].dtype ||
        !e[i].shape().IsCompatibleWith(spec[i].shape) ||
        (!spec[i].shape.unknown_rank() && e[i].rank() != spec[i].shape.rank())) {
      return errors::InvalidArgument(
          what, " produced component ", i, " as ",
          e[i].IsInitialized() ? std::string(DTypeName(e[i].dtype())) : "an empty tensor", " ",
          e[i].shape().ToString(), ", expected ", DTypeName(spec[i].dtype), " ",
          spec[i].shape.ToString(), " (element spec ", SpecString(spec), ")");
    }
  }
  return Status::OK();
}

// --- handle ---

const DatasetNode& Dataset::checked() const {
  if (!node_) throw Error(errors::FailedPrecondition("Use of an empty pf::data::Dataset handle"));
  return *node_;
}
const ElementSpec& Dataset::spec() const { return checked().spec(); }
std::string Dataset::DebugString() const { return checked().DebugString(); }
namespace {
// The iterator a Dataset handle gives: it owns the dataset graph (iterators inside it point
// into their nodes), so the iterator outlives the handles it was made from.
class OwningIterator : public Iterator {
 public:
  OwningIterator(std::shared_ptr<const DatasetNode> node, const IteratorContext& ctx)
      : node_(std::move(node)), it_(node_->MakeIterator(ctx)) {}
  StatusOr<bool> GetNext(Element* out) override { return it_->GetNext(out); }
  bool SupportsAsync() const override { return it_->SupportsAsync(); }
  void GetNextAsync(Element* out, CancellationManager* cm,
                    std::function<void(StatusOr<bool>)> done) override {
    it_->GetNextAsync(out, cm, std::move(done));
  }
  void Cancel() override { it_->Cancel(); }

 private:
  std::shared_ptr<const DatasetNode> node_;  // destroyed after it_
  std::unique_ptr<Iterator> it_;
};
}  // namespace

std::unique_ptr<Iterator> Dataset::MakeIterator(IteratorContext ctx) const {
  checked();
  return std::make_unique<OwningIterator>(node_, ctx);
}

namespace {

// --- sources ---

class TensorsNode : public DatasetNode {
 public:
  TensorsNode(Element e, ElementSpec spec, bool slices)
      : DatasetNode(std::move(spec)), e_(std::move(e)), slices_(slices) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext&) const override {
    return std::make_unique<It>(this);
  }
  std::string DebugString() const override {
    return slices_ ? fmt::format("FromTensorSlices({})", rows()) : "FromTensors";
  }
  int64_t rows() const { return slices_ ? (e_.empty() ? 0 : e_[0].dim(0)) : 1; }

 private:
  class It : public Iterator {
   public:
    explicit It(const TensorsNode* n) : n_(n) {}
    StatusOr<bool> GetNext(Element* out) override {
      if (next_ >= n_->rows()) return false;
      const int64_t r = next_++;
      if (!n_->slices_) {
        *out = n_->e_;
        return true;
      }
      Element e;
      e.reserve(n_->e_.size());
      for (const Tensor& t : n_->e_) {
        // A row view: no copy.
        PF_ASSIGN_OR_RETURN(Tensor row, t.SliceRows(r, r + 1));
        Shape s = t.shape();
        s.RemoveDim(0);
        PF_ASSIGN_OR_RETURN(Tensor v, row.Reshaped(s));
        e.push_back(std::move(v));
      }
      *out = std::move(e);
      return true;
    }

   private:
    const TensorsNode* n_;
    int64_t next_ = 0;
  };
  Element e_;
  bool slices_;
};

ElementSpec SpecOf(const Element& e, bool drop_first) {
  ElementSpec spec;
  for (const Tensor& t : e) {
    Shape s = t.shape();
    if (drop_first) s.RemoveDim(0);
    spec.push_back({t.dtype(), s});
  }
  return spec;
}

// --- Map (sequential) ---

class MapIt : public UnaryIterator {
 public:
  MapIt(std::unique_ptr<Iterator> in, const MapFn* fn, const ElementSpec* spec, int64_t iteration)
      : UnaryIterator(std::move(in)), fn_(fn), spec_(spec), iteration_(iteration) {}
  StatusOr<bool> GetNext(Element* out) override {
    Element e;
    PF_ASSIGN_OR_RETURN(bool more, input_->GetNext(&e));
    if (!more) return false;
    MapContext ctx{index_++, iteration_};
    PF_ASSIGN_OR_RETURN(Element r, RunMapFn(*fn_, std::move(e), ctx, *spec_));
    *out = std::move(r);
    return true;
  }

 private:
  const MapFn* fn_;
  const ElementSpec* spec_;
  int64_t iteration_, index_ = 0;
};

class MapNode : public UnaryNode {
 public:
  MapNode(Dataset in, MapFn fn, int parallel, ElementSpec spec)
      : UnaryNode(std::move(in), std::move(spec)), fn_(std::move(fn)), parallel_(parallel) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override {
    auto in = input().node()->MakeIterator(ctx);
    if (parallel_ <= 1) return std::make_unique<MapIt>(std::move(in), &fn_, &spec(), ctx.iteration);
    return MakeParallelMapIterator(std::move(in), &fn_, &spec(), parallel_, ctx.iteration);
  }
  // A Batch after this map runs fused with it (MakeParallelMapBatchIterator) when the map has
  // threads and its results' shapes are all known, and the batch, allocated whole up front, is
  // at most 1 GiB: Batch(1 << 30) collecting a whole dataset stays unfused.
  std::unique_ptr<Iterator> MakeBatchIterator(const IteratorContext& ctx, int64_t n,
                                              bool drop) const {
    constexpr double kMaxFusedBytes = double{1 << 30};
    double row_bytes = 0;
    for (const ComponentSpec& c : spec()) {
      if (!c.shape.IsFullyDefined()) return nullptr;
      row_bytes +=
          static_cast<double>(c.shape.num_elements()) * static_cast<double>(DTypeSize(c.dtype));
    }
    if (parallel_ <= 1 || static_cast<double>(n) * row_bytes > kMaxFusedBytes) return nullptr;
    return MakeParallelMapBatchIterator(input().node()->MakeIterator(ctx), &fn_, &spec(), parallel_,
                                        ctx.iteration, n, drop);
  }
  std::string DebugString() const override {
    return fmt::format("{} -> Map(num_parallel_calls={})", input().DebugString(), parallel_);
  }

 private:
  MapFn fn_;
  int parallel_;
};

// --- Batch ---

class BatchIt : public UnaryIterator {
 public:
  BatchIt(std::unique_ptr<Iterator> in, int64_t n, bool drop, const std::string* what)
      : UnaryIterator(std::move(in)), n_(n), drop_(drop), what_(what) {}
  StatusOr<bool> GetNext(Element* out) override {
    if (done_) return false;
    std::vector<Element> rows;
    rows.reserve(static_cast<size_t>(std::min<int64_t>(n_, 4096)));
    while (static_cast<int64_t>(rows.size()) < n_) {
      Element e;
      PF_ASSIGN_OR_RETURN(bool more, input_->GetNext(&e));
      if (!more) {
        done_ = true;
        break;
      }
      rows.push_back(std::move(e));
    }
    if (rows.empty() || (drop_ && static_cast<int64_t>(rows.size()) < n_)) return false;
    PF_ASSIGN_OR_RETURN(Element stacked, Stack(rows, *what_));
    *out = std::move(stacked);
    return true;
  }

 private:
  const int64_t n_;
  const bool drop_;
  const std::string* what_;
  bool done_ = false;
};

class BatchNode : public UnaryNode {
 public:
  BatchNode(Dataset in, int64_t n, bool drop)
      : UnaryNode(in, BatchSpec(in.spec(), n, drop)),
        n_(n),
        drop_(drop),
        what_(fmt::format("Batch({})", n)) {}
  static ElementSpec BatchSpec(ElementSpec spec, int64_t n, bool drop) {
    for (ComponentSpec& c : spec) {
      if (!c.shape.unknown_rank()) c.shape.InsertDim(0, drop ? n : -1);
    }
    return spec;
  }
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override {
    if (const auto* map = dynamic_cast<const MapNode*>(input().node().get())) {
      if (auto fused = map->MakeBatchIterator(ctx, n_, drop_)) return fused;
    }
    return std::make_unique<BatchIt>(input().node()->MakeIterator(ctx), n_, drop_, &what_);
  }
  std::string DebugString() const override {
    return fmt::format("{} -> Batch({}{})", input().DebugString(), n_,
                       drop_ ? ", drop_remainder" : "");
  }

 private:
  int64_t n_;
  bool drop_;
  std::string what_;
};

}  // namespace

void CheckPositive(int64_t v, const char* what, const char* op) {
  if (v < 1) throw Error(errors::InvalidArgument(op, ": ", what, " must be positive, got ", v));
}

StatusOr<Element> RunMapFn(const MapFn& fn, Element e, const MapContext& ctx,
                           const ElementSpec& spec) {
  StatusOr<Element> r = fn(std::move(e), ctx);
  if (!r.ok()) {
    return Status(r.status().code(), fmt::format("Map function failed on element {}: {}", ctx.index,
                                                 r.status().message()));
  }
  PF_RETURN_IF_ERROR(CheckElement(*r, spec, fmt::format("Map function (element {})", ctx.index)));
  return r;
}

StatusOr<Element> Stack(const std::vector<Element>& rows, const std::string& what) {
  const Element& first = rows.front();
  Element out;
  for (size_t c = 0; c < first.size(); ++c) {
    const Tensor& t0 = first[c];
    for (size_t r = 1; r < rows.size(); ++r) {
      const Tensor& t = rows[r][c];
      if (t.dtype() != t0.dtype() || t.shape() != t0.shape()) {
        return errors::InvalidArgument("Cannot batch tensors with different shapes in component ",
                                       c, ". First element had shape ", t0.shape().ToString(),
                                       " and element ", r, " had shape ", t.shape().ToString(),
                                       " (", what, ")");
      }
    }
    Shape s = t0.shape();
    s.InsertDim(0, static_cast<int64_t>(rows.size()));
    PF_ASSIGN_OR_RETURN(Tensor b, Tensor::Allocate(CpuAllocator(), t0.dtype(), s));  // no zeroing
    for (size_t r = 0; r < rows.size(); ++r) CopyRow(rows[r][c], static_cast<int64_t>(r), &b);
    out.push_back(std::move(b));
  }
  return out;
}

void CopyRow(const Tensor& from, int64_t row, Tensor* batch) {
  const size_t bytes = from.TotalBytes();
  char* dst = static_cast<char*>(batch->raw_data()) + static_cast<size_t>(row) * bytes;
  if (from.raw_data() == dst) return;  // written in place (MapContext::rows)
  if (!DTypeIsPod(from.dtype())) {     // strings are objects: copied one by one
    const int64_t n = from.num_elements();
    std::copy(from.data<std::string>(), from.data<std::string>() + n,
              batch->data<std::string>() + row * n);
  } else {
    std::memcpy(dst, from.raw_data(), bytes);
  }
}

// --- builders ---

Dataset Dataset::FromTensors(Element components) {
  ElementSpec spec = SpecOf(components, false);
  return Dataset(std::make_shared<TensorsNode>(std::move(components), std::move(spec), false));
}

Dataset Dataset::FromTensorSlices(Element components) {
  if (components.empty())
    throw Error(errors::InvalidArgument("FromTensorSlices needs at least one component"));
  for (size_t i = 0; i < components.size(); ++i) {
    const Tensor& t = components[i];
    if (!t.IsInitialized() || t.rank() < 1) {
      throw Error(errors::InvalidArgument("FromTensorSlices: component ", i,
                                          " must have rank >= 1, got shape ",
                                          t.shape().ToString()));
    }
    if (t.dim(0) != components[0].dim(0)) {
      throw Error(errors::InvalidArgument(
          "FromTensorSlices: all components must have the same size in the 0th dimension; "
          "component 0 has ",
          components[0].dim(0), " rows (shape ", components[0].shape().ToString(),
          ") and component ", i, " has ", t.dim(0), " (shape ", t.shape().ToString(), ")"));
    }
  }
  ElementSpec spec = SpecOf(components, true);
  return Dataset(std::make_shared<TensorsNode>(std::move(components), std::move(spec), true));
}

Dataset Dataset::FromIdx(const std::string& images_path, const std::string& labels_path) {
  MnistArrays a = LoadIdxPair(images_path, labels_path).ValueOrThrow();
  return FromTensorSlices({a.images, a.labels});
}

Dataset Dataset::Map(MapFn fn, int num_parallel_calls, ElementSpec output_spec) const {
  if (!fn) throw Error(errors::InvalidArgument("Map: the function is empty"));
  CheckPositive(num_parallel_calls, "num_parallel_calls", "Map");
  if (output_spec.empty()) output_spec = spec();
  return Dataset(
      std::make_shared<MapNode>(*this, std::move(fn), num_parallel_calls, std::move(output_spec)));
}

Dataset Dataset::Map(PlainMapFn fn, int num_parallel_calls, ElementSpec output_spec) const {
  if (!fn) throw Error(errors::InvalidArgument("Map: the function is empty"));
  return Map(MapFn([fn = std::move(fn)](Element e, const MapContext&) { return fn(std::move(e)); }),
             num_parallel_calls, std::move(output_spec));
}

Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  CheckPositive(batch_size, "batch_size", "Batch");
  return Dataset(std::make_shared<BatchNode>(*this, batch_size, drop_remainder));
}

Dataset Dataset::Prefetch(int64_t buffer_size) const {
  CheckPositive(buffer_size, "buffer_size", "Prefetch");
  return MakePrefetch(*this, buffer_size);
}

}  // namespace pf::data
