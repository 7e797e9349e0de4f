// Executor::Create: the layout of a partition (items, edges, frames, initial pending counts),
// built once per signature.
#include <cstdlib>
#include <cstring>

#include "placeflow/executor/executor_state.h"
#include "placeflow/executor/frames.h"

namespace pf {
namespace {

// Read when an executor is built (once per signature), so a process can switch modes.
bool SequentialMode() {
  const char* env = std::getenv("PF_EXECUTOR");
  return env != nullptr && std::strcmp(env, "sequential") == 0;
}

}  // namespace

Status Executor::Layout::AddItem(size_t i, const ExecutorSpec& spec, const KernelSource& kernels,
                                 bool sequential, const ItemIndex& item_of,
                                 const FeedIndex& feed_index) {
  const Node* n = spec.nodes[i];
  Item& it = items[i];
  it.node = n;
  auto dev = spec.device.find(n);
  if (dev == spec.device.end()) return errors::Internal("Node '", n->name(), "' was not placed");
  it.device = dev->second;
  PF_ASSIGN_OR_RETURN(it.kernel, kernels(*n, it.device));
  // With no pool threads (or PF_EXECUTOR=sequential) everything runs inline on the caller.
  it.expensive = it.kernel->IsExpensive() && !sequential && pool->num_threads() > 0;
  Frame& frame = frames[it.frame];
  it.input_base = frame.num_slots;
  it.num_inputs = n->num_inputs();
  frame.num_slots += it.num_inputs;
  it.static_shapes = true;
  for (int o = 0; o < n->num_outputs(); ++o) {
    it.output_shapes.push_back(n->output_shape(o));
    it.output_dtypes.push_back(n->output_dtype(o));
    it.static_shapes = it.static_shapes && n->output_shape(o).IsFullyDefined();
  }
  it.initial_pending = 0;
  for (int k = 0; k < n->num_inputs(); ++k)
    PF_RETURN_IF_ERROR(AddInput(&it, k, item_of, feed_index));
  int controls = 0;
  for (const Node* c : n->control_inputs()) controls += item_of.count(c) ? 1 : 0;
  it.initial_pending += controls;
  // A Merge waits for its control inputs and one live data input (executor/frames.cc).
  if (it.kind == ControlFlowKind::kMerge) it.initial_pending = 2 * controls + 1;
  return Status::OK();
}

Status Executor::Layout::AddInput(Item* it, int k, const ItemIndex& item_of,
                                  const FeedIndex& feed_index) {
  const Node* n = it->node;
  const Output& src = n->input(k);
  it->input_shapes.push_back(src.shape());
  // A fed input may replace a constant whose value the static shape came from (the
  // session feeds through _Arg copies, so which one is not known here): always recheck.
  it->static_shapes = it->static_shapes && src.shape().IsFullyDefined() && !feed_index.count(src);
  if (n->IsRefInput(k)) {
    const Node* var = ReferencedVariable(src);
    if (var == nullptr) {
      return errors::InvalidArgument("Input ", k, " of node '", n->name(),
                                     "' must be a variable reference, but comes from '",
                                     src.node->name(), "' (", src.node->op(), ")");
    }
    it->ref_inputs.resize(n->num_inputs(), nullptr);
    it->ref_inputs[k] = it->device->resource_mgr()->LookupOrCreateVar(var->name());
  }
  auto fed = feed_index.find(src);
  if (fed != feed_index.end()) {
    feed_slots[fed->second].push_back(it->input_base + k);
    return Status::OK();
  }
  if (!item_of.count(src.node)) {
    return errors::Internal("Input '", src.name(), "' of node '", n->name(),
                            "' is neither fed nor in the subgraph");
  }
  ++it->initial_pending;
  return Status::OK();
}

void Executor::Layout::AddOutEdges(const ExecutorSpec& spec, const ItemIndex& item_of,
                                   const FeedIndex& feed_index) {
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const Node* n = spec.nodes[i];
    for (const Edge& e : n->out_edges()) {
      auto dst = item_of.find(e.dst);
      if (dst == item_of.end()) continue;
      if (e.IsControl()) {
        items[i].out_control.push_back(dst->second);
      } else if (!feed_index.count(Output(e.src, e.src_output))) {
        const Item& d = items[dst->second];
        items[i].out_edges.push_back(
            {e.src_output, dst->second, d.local, d.input_base + e.dst_input});
      }
    }
  }
}

Status Executor::Layout::AddFetches(const ExecutorSpec& spec, const ItemIndex& item_of,
                                    const FeedIndex& feed_index) {
  num_fetches = static_cast<int>(spec.fetches.size());
  for (size_t f = 0; f < spec.fetches.size(); ++f) {
    const Output& o = spec.fetches[f];
    auto fed = feed_index.find(o);
    if (fed != feed_index.end()) {
      feed_fetches[fed->second].push_back(static_cast<int>(f));
      continue;
    }
    auto it = item_of.find(o.node);
    if (it == item_of.end())
      return errors::Internal("Fetch '", o.name(), "' is not in the subgraph");
    items[it->second].out_edges.push_back({o.index, -1, -1, static_cast<int>(f)});
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<Executor>> Executor::Create(const ExecutorSpec& spec,
                                                     const KernelSource& kernels) {
  auto layout = std::make_unique<Layout>();
  layout->pool = spec.pool != nullptr ? spec.pool : ThreadPool::Default();
  layout->own_pool = spec.own_pool && spec.pool != nullptr;
  layout->small_step_ns = spec.small_step_us * 1000;
  layout->devices = spec.devices;
  const bool sequential = SequentialMode();
  Layout::ItemIndex item_of;
  for (size_t i = 0; i < spec.nodes.size(); ++i) item_of[spec.nodes[i]] = static_cast<int>(i);
  Layout::FeedIndex feed_index;
  for (size_t i = 0; i < spec.feeds.size(); ++i) feed_index[spec.feeds[i]] = static_cast<int>(i);
  layout->feed_slots.resize(spec.feeds.size());
  layout->feed_fetches.resize(spec.feeds.size());
  layout->items.resize(spec.nodes.size());
  PF_RETURN_IF_ERROR(BuildFrames(spec, item_of, feed_index, layout.get()));
  for (size_t i = 0; i < spec.nodes.size(); ++i)
    PF_RETURN_IF_ERROR(layout->AddItem(i, spec, kernels, sequential, item_of, feed_index));
  layout->AddOutEdges(spec, item_of, feed_index);
  PF_RETURN_IF_ERROR(layout->AddFetches(spec, item_of, feed_index));
  for (int i : layout->frames[0].items) {
    if (layout->items[i].initial_pending == 0) layout->roots.push_back(i);
  }
  return std::unique_ptr<Executor>(new Executor(std::move(layout)));
}

}  // namespace pf
