// Datasets in a graph (TensorFlow's make_initializable_iterator): an iterator resource in the
// CPU device's ResourceMgr (one per session), an initializer op that (re)starts it, and an
// IteratorGetNext node whose outputs are the element's components, with the dataset's dtypes
// and static shapes. The model reads them directly: the batch tensor the pipeline made is the
// tensor the next op reads (no feed, no copy).
//
//   pf::data::GraphIterator it = pf::data::MakeIterator(root, train_ds, "train_iter");
//   Output logits = Model(it.next[0]);  ...  loss uses it.next[1]
//   sess.Run({}, {}, {it.initializer});            // each epoch
//   try { for (;;) sess.Run({}, {loss}, {train_op}); }
//   catch (const pf::Error& e) { if (e.code() != pf::Code::kOutOfRange) throw; }  // "End of
//   sequence"
//
// IteratorGetNext is an asynchronous kernel: an element that is ready is returned at once; else
// (a Prefetch on top of the pipeline) the pipeline's thread completes it when the element is
// there, and no executor thread waits. Without a Prefetch on top, the element is computed on the
// executor's thread. Each re-initialisation starts a new pass (MapContext::iteration, Shuffle's
// reshuffle_each_iteration); the previous iterator's threads stop first. Closing the session
// stops every pipeline thread. Feeding the IteratorGetNext outputs (or placeholders) still works.
#pragma once

#include <string>
#include <vector>

#include "placeflow/data/dataset.h"
#include "placeflow/graph/scope.h"

namespace pf::data {

struct GraphIterator {
  Operation initializer;     // MakeIterator: run before the first element and for each new pass
  std::vector<Output> next;  // IteratorGetNext's outputs, one per component
  std::string shared_name;   // the resource's name in the device's ResourceMgr
};

// Nodes "<name>/MakeIterator" and "<name>/IteratorGetNext" (name scope made unique), colocated;
// they have CPU kernels only. The dataset lives as long as the graph.
GraphIterator MakeIterator(const Scope& scope, const Dataset& dataset,
                           const std::string& name = "Iterator");

// The ElementSpec that IteratorGetNext's attrs encode (for tests and tools).
std::vector<int64_t> EncodeShapes(const ElementSpec& spec);
StatusOr<ElementSpec> DecodeSpec(const std::vector<int64_t>& types,
                                 const std::vector<int64_t>& shapes);

}  // namespace pf::data
