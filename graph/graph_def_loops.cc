#include "placeflow/graph/graph_def_loops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string_view>

#include "placeflow/graph/op_registry.h"
#include "placeflow/io/proto/graph.pb.h"

namespace pf::internal {
namespace {

namespace tfp = ::tensorflow;

ControlFlowKind KindOf(const std::string& op) {
  const OpDef* def = OpRegistry::Global()->Find(op);
  return def == nullptr ? ControlFlowKind::kNone : def->control_flow();
}

std::string Where(const tfp::NodeDef& nd) {
  return fmt::format("GraphDef node '{}' (op: '{}')", nd.name(), nd.op());
}

// The error for nodes left pending by Kahn's algorithm: walks from the first of them up its
// pending inputs until a node repeats, which is on a cycle, and names that cycle in dataflow
// order ("a -> b -> a").
Status CycleError(const tfp::GraphDef& def, const std::vector<std::vector<int>>& producers,
                  const std::vector<int>& pending) {
  int cur = 0;
  while (pending[cur] == 0) ++cur;
  std::vector<int> path;
  std::vector<int> seen_at(def.node_size(), -1);
  while (seen_at[cur] < 0) {
    seen_at[cur] = static_cast<int>(path.size());
    path.push_back(cur);
    for (int p : producers[cur]) {
      if (pending[p] > 0) {  // an input not yet ordered: every pending node has one
        cur = p;
        break;
      }
    }
  }
  // path[seen_at[cur]..] walks the cycle against the edges (path[j + 1] feeds path[j], cur
  // feeds path.back()): name it the other way round, from cur to cur.
  std::vector<std::string> names = {def.node(cur).name()};
  for (size_t k = path.size() - 1; k > static_cast<size_t>(seen_at[cur]); --k)
    names.push_back(def.node(path[k]).name());
  names.push_back(def.node(cur).name());
  if (names.size() > 9) {
    names.erase(names.begin() + 4, names.end() - 4);
    names.insert(names.begin() + 4, "...");
  }
  return errors::InvalidArgument("GraphDef has a cycle through node '", def.node(cur).name(),
                                 "' (op: '", def.node(cur).op(),
                                 "'): ", fmt::format("{}", fmt::join(names, " -> ")),
                                 "; only a while loop's back edge (NextIteration -> Merge) may "
                                 "close a cycle");
}

}  // namespace

StatusOr<InputRef> ParseInput(const std::string& s) {
  InputRef r;
  std::string_view v = s;
  if (!v.empty() && v[0] == '^') {
    r.control = true;
    v.remove_prefix(1);
  }
  if (r.control) {
    if (v.empty()) return errors::InvalidArgument("malformed input '", s, "'");
    r.node = std::string(v);
    return r;
  }
  auto t = ParseTensorName(v);
  if (!t.ok()) return errors::InvalidArgument("malformed input '", s, "': ", t.status().message());
  r.node = std::move(t->node);
  r.index = t->index;
  return r;
}

StatusOr<std::vector<int>> InputsFirst(const tfp::GraphDef& def, InputRefs* inputs) {
  std::unordered_map<std::string, int> index;
  for (int i = 0; i < def.node_size(); ++i) {
    if (!index.emplace(def.node(i).name(), i).second)
      return errors::InvalidArgument("GraphDef has two nodes named '", def.node(i).name(), "'");
  }
  std::vector<int> pending(def.node_size(), 0);
  std::vector<std::vector<int>> consumers(def.node_size()), producers(def.node_size());
  for (int i = 0; i < def.node_size(); ++i) {
    const tfp::NodeDef& nd = def.node(i);
    const bool merge = KindOf(nd.op()) == ControlFlowKind::kMerge;
    auto& refs = (*inputs)[nd.name()];
    for (const std::string& s : nd.input()) {
      auto r = ParseInput(s);
      if (!r.ok()) return errors::InvalidArgument(Where(nd), ": ", r.status().message());
      auto it = index.find(r->node);
      if (it == index.end())
        return errors::NotFound(Where(nd), ": input '", s, "' names no node of the GraphDef");
      r->back_edge = merge && !r->control &&
                     KindOf(def.node(it->second).op()) == ControlFlowKind::kNextIteration;
      refs.push_back(*r);
      if (r->back_edge) continue;  // wired once the NextIteration is in
      ++pending[i];
      consumers[it->second].push_back(i);
      producers[i].push_back(it->second);
    }
  }
  std::vector<int> order;
  for (int i = 0; i < def.node_size(); ++i)
    if (pending[i] == 0) order.push_back(i);
  for (size_t k = 0; k < order.size(); ++k) {
    for (int c : consumers[order[k]])
      if (--pending[c] == 0) order.push_back(c);
  }
  if (order.size() != static_cast<size_t>(def.node_size()))
    return CycleError(def, producers, pending);
  return order;
}

bool HasBackEdges(const std::vector<InputRef>& refs) {
  for (const InputRef& r : refs)
    if (r.back_edge) return true;
  return false;
}

Status StandInForBackEdges(const std::string& where, std::vector<Output>* data) {
  const Output* stand_in = nullptr;
  for (const Output& o : *data) {
    if (o.node != nullptr) {
      stand_in = &o;
      break;
    }
  }
  if (stand_in == nullptr) {
    return errors::InvalidArgument(where,
                                   ": every data input comes from a NextIteration; a loop's "
                                   "Merge takes its Enter first");
  }
  const Output value = *stand_in;
  for (Output& o : *data)
    if (o.node == nullptr) o = value;
  return Status();
}

Status CloseBackEdges(const std::vector<InputRef>& refs, const std::string& where,
                      const std::function<Node*(const std::string&)>& find, Node* dst,
                      Graph* graph) {
  int k = 0;  // the data input's position
  for (const InputRef& r : refs) {
    if (r.control) continue;
    if (r.back_edge) {
      Node* src = find(r.node);
      if (r.index >= src->num_outputs()) {
        return errors::InvalidArgument(where, ": back edge '", r.node, ":", r.index, "' but '",
                                       r.node, "' has ", src->num_outputs(), " outputs");
      }
      const Output from(src, r.index);
      if (from.dtype() != dst->input(k).dtype()) {
        return errors::InvalidArgument(where, ": back edge '", from.name(), "' is ",
                                       DTypeName(from.dtype()), ", its other inputs ",
                                       DTypeName(dst->input(k).dtype()));
      }
      graph->UpdateEdge(from, dst, k);
    }
    ++k;
  }
  return Status();
}

}  // namespace pf::internal
