// MakeIterator and IteratorGetNext: the kernels, the iterator resource and the builder.
#include "placeflow/data/iterator_ops.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "placeflow/devices/device.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/graph/op_registry.h"

namespace pf::data {
namespace {

// The dtypes a dataset component may have, in the order of IteratorGetNext's output lists.
const DType kGroups[] = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL, DT_UINT8, DT_STRING};

// Output index of each component: its dtype's list, then its place among that dtype's.
StatusOr<std::vector<int>> ComponentOutputs(const ElementSpec& spec) {
  for (const ComponentSpec& c : spec) {
    if (std::find(std::begin(kGroups), std::end(kGroups), c.dtype) == std::end(kGroups))
      return errors::InvalidArgument("A dataset component of dtype ", DTypeName(c.dtype),
                                     " cannot be an IteratorGetNext output");
  }
  std::vector<int> where(spec.size());
  int base = 0;
  for (DType t : kGroups) {
    for (size_t i = 0; i < spec.size(); ++i)
      if (spec[i].dtype == t) where[i] = base++;
  }
  return where;
}

// Datasets by id: a graph's MakeIterator nodes name theirs by id (attrs hold no C++ objects);
// the graph's extension removes them when the graph goes.
class DatasetRegistry {
 public:
  static DatasetRegistry& Global() {
    static DatasetRegistry* r = new DatasetRegistry();
    return *r;
  }
  int64_t Add(std::shared_ptr<const DatasetNode> node) {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t id = next_++;
    nodes_[id] = std::move(node);
    return id;
  }
  void Remove(int64_t id) {
    std::shared_ptr<const DatasetNode> gone;  // destroyed outside the lock
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(id);
    if (it == nodes_.end()) return;
    gone = std::move(it->second);
    nodes_.erase(it);
  }
  std::shared_ptr<const DatasetNode> Find(int64_t id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(id);
    return it == nodes_.end() ? nullptr : it->second;
  }

 private:
  mutable std::mutex mu_;
  int64_t next_ = 1;
  std::map<int64_t, std::shared_ptr<const DatasetNode>> nodes_;
};

struct GraphDatasets {
  std::vector<int64_t> ids;
  ~GraphDatasets() {
    for (int64_t id : ids) DatasetRegistry::Global().Remove(id);
  }
};

// The iterator of one MakeIterator/IteratorGetNext pair on one device (one session).
class IteratorResource : public Resource {
 public:
  // A fresh iterator over `node` for the next pass; the previous one stops first.
  void Reset(const std::shared_ptr<const DatasetNode>& node) {
    std::shared_ptr<Iterator> old;
    {
      std::lock_guard<std::mutex> lock(mu_);
      old = std::move(it_);
    }
    if (old) {
      // Its threads stop; a waiting GetNext ends Cancelled. A synchronous GetNext in progress
      // finishes first (iterators are not thread-safe).
      std::lock_guard<std::mutex> lock(sync_mu_);
      old->Cancel();
    }
    old.reset();
    IteratorContext ctx;
    std::lock_guard<std::mutex> lock(mu_);
    ctx.iteration = passes_++;
    node_ = node;  // keeps the dataset alive as long as its iterator
    it_ = Dataset(node).MakeIterator(ctx);
  }
  std::shared_ptr<Iterator> current() {
    std::lock_guard<std::mutex> lock(mu_);
    return it_;
  }
  // Serialises GetNext on iterators that are not thread-safe.
  std::mutex& sync_mu() { return sync_mu_; }
  ~IteratorResource() override {
    if (it_) it_->Cancel();
  }

 private:
  std::mutex mu_, sync_mu_;
  std::shared_ptr<const DatasetNode> node_;
  std::shared_ptr<Iterator> it_;
  int64_t passes_ = 0;
};

StatusOr<std::shared_ptr<IteratorResource>> FindResource(OpKernelContext* ctx, const Node& node) {
  const std::string& name = node.attr<std::string>("shared_name");
  std::shared_ptr<Resource> r = ctx->device()->resource_mgr()->LookupOrCreate(
      "iterator:" + name, [] { return std::make_shared<IteratorResource>(); });
  auto it = std::dynamic_pointer_cast<IteratorResource>(r);
  if (!it) return errors::Internal("Resource 'iterator:", name, "' is not an iterator");
  return it;
}

class MakeIteratorOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(auto r, FindResource(ctx, node()));
    auto ds = DatasetRegistry::Global().Find(node().attr<int64_t>("dataset_id"));
    if (!ds) {
      return errors::FailedPrecondition("The dataset of iterator '",
                                        node().attr<std::string>("shared_name"),
                                        "' no longer exists (its graph was destroyed)");
    }
    r->Reset(ds);
    return Status::OK();
  }
};

class IteratorGetNextOp : public OpKernel {
 public:
  explicit IteratorGetNextOp(const Node& n) : OpKernel(n) {
    auto spec = DecodeSpec(n.attr<std::vector<int64_t>>("output_types"),
                           n.attr<std::vector<int64_t>>("output_shapes"));
    if (spec.ok()) spec_ = *spec;
    auto where = ComponentOutputs(spec_);
    if (where.ok()) where_ = *where;
  }
  bool IsAsync() const override { return true; }
  bool IsExpensive() const override { return false; }
  Status Compute(OpKernelContext*) override { return errors::Internal("asynchronous"); }

  void ComputeAsync(OpKernelContext* ctx, std::function<void(Status)> done) override {
    auto r = FindResource(ctx, node());
    if (!r.ok()) return done(r.status());
    std::shared_ptr<Iterator> it = (*r)->current();
    if (!it) {
      return done(errors::FailedPrecondition(
          "GetNext() failed because the iterator has not been initialized. Ensure that you have "
          "run the initializer operation for this iterator before getting the next element."));
    }
    auto element = std::make_shared<Element>();
    if (!it->SupportsAsync()) {
      StatusOr<bool> more = false;
      {
        std::lock_guard<std::mutex> lock((*r)->sync_mu());
        more = it->GetNext(element.get());
      }
      return done(Finish(ctx, more, *element));
    }
    // Completed on this thread (ready at once) or by the pipeline's thread, which must go back
    // to its work: the rest of the step then continues on the device's pool.
    const std::thread::id caller = std::this_thread::get_id();
    auto returned = std::make_shared<std::atomic<bool>>(false);
    it->GetNextAsync(
        element.get(), ctx->cancellation(),
        [this, ctx, element, done, caller, returned](StatusOr<bool> more) {
          Status s = Finish(ctx, more, *element);
          element->clear();
          if (!returned->load() && std::this_thread::get_id() == caller) {
            done(s);
          } else {
            ctx->device()->intra_op_pool()->Schedule([done, s = std::move(s)] { done(s); });
          }
        });
    returned->store(true);
  }

 private:
  Status Finish(OpKernelContext* ctx, const StatusOr<bool>& more, Element& e) const {
    if (!more.ok()) return more.status();
    if (!*more) return errors::OutOfRange("End of sequence");
    PF_RETURN_IF_ERROR(CheckElement(
        e, spec_, "The dataset of iterator '" + node().attr<std::string>("shared_name") + "'"));
    for (size_t i = 0; i < e.size(); ++i)
      PF_RETURN_IF_ERROR(ctx->SetOutput(where_[i], std::move(e[i])));
    return Status::OK();
  }
  ElementSpec spec_;
  std::vector<int> where_;  // component -> output index
};

PF_REGISTER_OP(OpDef("MakeIterator")
                   .RequiredAttr("shared_name")
                   .RequiredAttr("dataset_id")
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn(NoOutputsShape));
// The outputs: one list per dtype, in kGroups' order (the op schema has no list(type)); the
// builder hands them back in component order (ComponentOutputs).
OpDef GetNextDef() {
  OpDef def("IteratorGetNext");
  for (DType t : kGroups) {
    const std::string name(DTypeName(t));
    def.OutputList(name + "_components", name, "num_" + name).Attr("num_" + name, int64_t{0});
  }
  return def.RequiredAttr("shared_name")
      .RequiredAttr("output_types")
      .RequiredAttr("output_shapes")
      .SetStateful()
      .SetNotDifferentiable()
      .SetShapeFn([](ShapeContext& c) {
        PF_ASSIGN_OR_RETURN(ElementSpec spec,
                            DecodeSpec(c.attr<std::vector<int64_t>>("output_types"),
                                       c.attr<std::vector<int64_t>>("output_shapes")));
        PF_ASSIGN_OR_RETURN(std::vector<int> where, ComponentOutputs(spec));
        for (size_t i = 0; i < spec.size(); ++i) c.set_output(where[i], spec[i].shape);
        return Status::OK();
      });
}
PF_REGISTER_OP(GetNextDef());
PF_REGISTER_KERNEL(KernelDef("MakeIterator", kDeviceCpu), MakeIteratorOp);
PF_REGISTER_KERNEL(KernelDef("IteratorGetNext", kDeviceCpu), IteratorGetNextOp);

}  // namespace

std::vector<int64_t> EncodeShapes(const ElementSpec& spec) {
  // Per component: its rank (-1: unknown), then its dims.
  std::vector<int64_t> out;
  for (const ComponentSpec& c : spec) {
    out.push_back(c.shape.rank());
    for (int64_t d : c.shape.dims()) out.push_back(d);
  }
  return out;
}

StatusOr<ElementSpec> DecodeSpec(const std::vector<int64_t>& types,
                                 const std::vector<int64_t>& shapes) {
  ElementSpec spec;
  size_t pos = 0;
  for (int64_t t : types) {
    if (pos >= shapes.size())
      return errors::InvalidArgument("output_shapes holds fewer shapes than output_types");
    const int64_t rank = shapes[pos++];
    Shape s = Shape::Unknown();
    if (rank >= 0) {
      if (pos + rank > shapes.size()) return errors::InvalidArgument("output_shapes is truncated");
      PF_ASSIGN_OR_RETURN(s, Shape::FromDims(std::span<const int64_t>(shapes.data() + pos, rank)));
      pos += rank;
    }
    spec.push_back({static_cast<DType>(t), s});
  }
  if (pos != shapes.size())
    return errors::InvalidArgument("output_shapes holds more shapes than output_types");
  return spec;
}

GraphIterator MakeIterator(const Scope& scope, const Dataset& dataset, const std::string& name) {
  const ElementSpec& spec = dataset.spec();
  Graph* g = scope.graph();
  const int64_t id = DatasetRegistry::Global().Add(dataset.node());
  g->GetOrCreateExtension<GraphDatasets>()->ids.push_back(id);
  Scope s = scope.NewSubScope(name);
  GraphIterator it;
  it.shared_name = s.Qualify("iterator");
  it.initializer = NodeBuilder(s, "MakeIterator")
                       .Attr("shared_name", it.shared_name)
                       .Attr("dataset_id", id)
                       .Finalize();
  std::vector<int64_t> types;
  for (const ComponentSpec& c : spec) types.push_back(static_cast<int64_t>(c.dtype));
  const std::vector<int> where = ComponentOutputs(spec).ValueOrThrow();
  const Scope colocated = s.ColocateWith(it.initializer);  // NodeBuilder keeps a reference
  NodeBuilder b(colocated, "IteratorGetNext");
  for (DType t : kGroups) {
    const int64_t n = std::count_if(spec.begin(), spec.end(),
                                    [t](const ComponentSpec& c) { return c.dtype == t; });
    b.Attr("num_" + std::string(DTypeName(t)), n);
  }
  Node* next = b.Attr("shared_name", it.shared_name)
                   .Attr("output_types", types)
                   .Attr("output_shapes", EncodeShapes(spec))
                   .Finalize();
  for (size_t i = 0; i < spec.size(); ++i) it.next.push_back(Output(next, where[i]));
  return it;
}

}  // namespace pf::data
