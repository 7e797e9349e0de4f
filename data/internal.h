// Pieces the dataset implementation files share (not part of the API).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "placeflow/data/dataset.h"

namespace pf::data {

// A transformation of one input dataset.
class UnaryNode : public DatasetNode {
 public:
  UnaryNode(Dataset input, ElementSpec spec) : DatasetNode(std::move(spec)), input_(input) {}
  const Dataset& input() const { return input_; }

 private:
  Dataset input_;
};

// An iterator over one input iterator; cancelling it cancels the input.
class UnaryIterator : public Iterator {
 public:
  explicit UnaryIterator(std::unique_ptr<Iterator> input) : input_(std::move(input)) {}
  void Cancel() override { input_->Cancel(); }

 protected:
  std::unique_ptr<Iterator> input_;
};

// fn on e, its errors and result checked against spec (naming the element).
StatusOr<Element> RunMapFn(const MapFn& fn, Element e, const MapContext& ctx,
                           const ElementSpec& spec);
// Throws InvalidArgument "<op>: <what> must be positive, got <v>" when v < 1.
void CheckPositive(int64_t v, const char* what, const char* op);
// Stacks rows (all with equal shapes, else the ragged-batch error naming `what`).
StatusOr<Element> Stack(const std::vector<Element>& rows, const std::string& what);
// `from` into row `row` of `batch` (a tensor of [rows] + from's shape and dtype); nothing when
// `from` already is that row (a map function wrote it in place).
void CopyRow(const Tensor& from, int64_t row, Tensor* batch);

// data/threaded.cc
std::unique_ptr<Iterator> MakeParallelMapIterator(std::unique_ptr<Iterator> input, const MapFn* fn,
                                                  const ElementSpec* spec, int num_threads,
                                                  int64_t iteration);
// Map(fn, num_threads).Batch(batch_size, drop_remainder) in one: each worker writes its result
// into its row of the batch. For a spec whose shapes are all fully defined.
std::unique_ptr<Iterator> MakeParallelMapBatchIterator(std::unique_ptr<Iterator> input,
                                                       const MapFn* fn, const ElementSpec* spec,
                                                       int num_threads, int64_t iteration,
                                                       int64_t batch_size, bool drop_remainder);
Dataset MakePrefetch(const Dataset& input, int64_t buffer_size);

}  // namespace pf::data
