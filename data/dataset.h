// Input pipelines (TensorFlow's tf.data): a Dataset is a cheap, immutable handle to a node of a
// dataset graph; an Iterator pulls its elements, each a tuple of tensors (std::vector<Tensor>).
//
//   using pf::data::Dataset;
//   Dataset train = Dataset::FromIdx(dir + "/train-images-idx3-ubyte.gz",
//                                    dir + "/train-labels-idx1-ubyte.gz")  // ([784] f32, [] i32)
//                       .Shuffle(60000, /*seed=*/1)
//                       .Batch(100, /*drop_remainder=*/true)
//                       .Prefetch(2);
//   auto it = train.MakeIterator();
//   std::vector<pf::Tensor> batch;
//   while (it->GetNext(&batch).ValueOrThrow()) { ... }   // batch[0]: [100, 784], batch[1]: [100]
//
// In a graph, pf::data::MakeIterator (data/iterator_ops.h) gives an initializer and the
// IteratorGetNext outputs. Builders throw pf::Error for static mistakes (a batch of 0, slices
// of different lengths); GetNext returns errors (a ragged batch, a failing map function) naming
// the dataset and the element.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"
#include "placeflow/io/record_io.h"

namespace pf {
class CancellationManager;
}

namespace pf::data {

using Element = std::vector<Tensor>;

// A component's dtype and static shape (-1 dims: known only at run time, as a last batch's).
struct ComponentSpec {
  DType dtype = DT_FLOAT;
  Shape shape;
  bool operator==(const ComponentSpec& o) const { return dtype == o.dtype && shape == o.shape; }
};
using ElementSpec = std::vector<ComponentSpec>;
std::string SpecString(const ElementSpec& spec);  // "(float [784], int32 [])"

// Pulls elements. Not thread-safe unless said: one consumer at a time (the graph's iterator
// resource serialises its callers).
class Iterator {
 public:
  virtual ~Iterator() = default;
  // The next element into *out: true; false at the end (out untouched); an error otherwise.
  // After the end or an error every later call returns the same.
  virtual StatusOr<bool> GetNext(Element* out) = 0;
  // Whether GetNextAsync completes without waiting on this thread (a Prefetch on top).
  virtual bool SupportsAsync() const { return false; }
  // Calls done exactly once: on this thread when an element (or the end, or an error) is ready,
  // else later from a pipeline thread. `out` must stay valid until then. `cm` (may be null):
  // the step's cancellation, which completes a waiting call with its status. Thread-safe in
  // iterators that SupportsAsync. Default: GetNext on this thread.
  virtual void GetNextAsync(Element* out, CancellationManager* cm,
                            std::function<void(StatusOr<bool>)> done) {
    done(GetNext(out));
  }
  // Stops background threads (theirs and their inputs'); later calls return Cancelled. Safe to
  // call more than once; the destructor of an iterator that owns threads calls it.
  virtual void Cancel() {}
};

// What a map function may use to draw random numbers reproducibly: the element's position in
// this pass over the map's input and the pass's number (the epoch: how many iterators over the
// dataset came before, counted per graph iterator resource).
struct MapContext {
  int64_t index = 0;
  int64_t iteration = 0;
  // A seed for this element, from `seed` (the same at every thread count).
  uint64_t Seed(uint64_t seed) const;
  // Map and batch fused (docs/data.md): this element's row of the batch, one tensor per
  // component of the map's output spec. A map function may write its result into them and
  // return them, which saves copying the result into the batch. Null otherwise.
  const Element* rows = nullptr;
};
using MapFn = std::function<StatusOr<Element>(Element, const MapContext&)>;
// A simpler map function, without the context.
using PlainMapFn = std::function<StatusOr<Element>(Element)>;

class Dataset;
using InterleaveFn = std::function<StatusOr<Dataset>(const Element&)>;

// State handed to every iterator of a pipeline when it is made.
struct IteratorContext {
  int64_t iteration = 0;  // see MapContext::iteration
};

class DatasetNode;

class Dataset {
 public:
  Dataset() = default;  // empty handle: every builder method throws
  explicit Dataset(std::shared_ptr<const DatasetNode> node) : node_(std::move(node)) {}

  // One element: `components`.
  static Dataset FromTensors(Element components);
  // One element per row: component i's row r is element r's component i; every component
  // must have the same first dimension.
  static Dataset FromTensorSlices(Element components);
  // MNIST / Fashion-MNIST IDX files (gzip or plain): elements (float [rows*cols] scaled to
  // [0, 1], int32 [] label). The files are read when the dataset is built.
  static Dataset FromIdx(const std::string& images_path, const std::string& labels_path);
  // The records of TFRecord files, file after file, as DT_STRING scalars (TensorFlow's
  // TFRecordDataset; parse them with a Map). Errors name the file and offset (io/record_io.h);
  // skip_corrupt skips records with a wrong data CRC (counted and logged per file).
  static Dataset FromTFRecord(std::vector<std::string> files,
                              io::Compression compression = io::Compression::kNone,
                              bool skip_corrupt = false);
  // Each file name of `files` (a DT_STRING vector, or names) as a DT_STRING scalar element: the
  // input of an Interleave over files.
  static Dataset FromFileNames(std::vector<std::string> files);

  // fn on each element, on num_parallel_calls threads (1: on the consumer's thread); the output
  // order is the input order at every thread count. `output_spec`: what fn returns (default:
  // the input's spec).
  Dataset Map(MapFn fn, int num_parallel_calls = 1, ElementSpec output_spec = {}) const;
  Dataset Map(PlainMapFn fn, int num_parallel_calls = 1, ElementSpec output_spec = {}) const;
  // TensorFlow's buffer shuffle: the first buffer_size elements fill a buffer; each output is a
  // uniformly chosen buffer element, whose slot the next input element takes. With
  // reshuffle_each_iteration every pass (each Repeat, each re-initialisation) draws a new
  // order from (seed, pass); otherwise each pass repeats the first.
  Dataset Shuffle(int64_t buffer_size, uint64_t seed, bool reshuffle_each_iteration = true) const;
  // Stacks n consecutive elements (component shapes must agree: a ragged batch is an error
  // naming the component and the shapes). The last batch may be short unless drop_remainder.
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  // Prepares up to buffer_size elements ahead on a background thread.
  Dataset Prefetch(int64_t buffer_size) const;
  // The dataset count times (-1: forever).
  Dataset Repeat(int64_t count = -1) const;
  Dataset Take(int64_t count) const;  // the first count elements (-1: all)
  Dataset Skip(int64_t count) const;  // all but the first count elements (-1: none)
  // Elements index, index + num_shards, index + 2 * num_shards, ...
  Dataset Shard(int64_t num_shards, int64_t index) const;
  // TensorFlow's interleave: fn maps each input element (a file name) to a dataset; up to
  // cycle_length of them are open at once, and block_length consecutive elements are taken from
  // each in turn; an exhausted one is replaced by the next input element's dataset.
  Dataset Interleave(InterleaveFn fn, int64_t cycle_length, int64_t block_length = 1) const;

  std::unique_ptr<Iterator> MakeIterator(IteratorContext ctx = {}) const;
  const ElementSpec& spec() const;
  // The pipeline, innermost first: "FromIdx -> Shuffle(60000) -> Batch(100) -> Prefetch(2)".
  std::string DebugString() const;
  const std::shared_ptr<const DatasetNode>& node() const { return node_; }

 private:
  const DatasetNode& checked() const;
  std::shared_ptr<const DatasetNode> node_;
};

// A node of the dataset graph. Immutable once built (MakeIterator may be called from any
// thread, any number of times).
class DatasetNode {
 public:
  explicit DatasetNode(ElementSpec spec) : spec_(std::move(spec)) {}
  virtual ~DatasetNode() = default;
  virtual std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const = 0;
  virtual std::string DebugString() const = 0;
  const ElementSpec& spec() const { return spec_; }

 private:
  ElementSpec spec_;
};

// The seed of pass `salt` from `seed` (splitmix64): Shuffle draws pass p's order from
// std::mt19937_64(MixSeed(seed, p)) (p = 0 for every pass without reshuffle_each_iteration).
uint64_t MixSeed(uint64_t seed, uint64_t salt);

// Checks `e` against `spec` (count, dtypes, compatible shapes); the error names `what`.
Status CheckElement(const Element& e, const ElementSpec& spec, const std::string& what);

}  // namespace pf::data
