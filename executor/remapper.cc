#include "placeflow/executor/remapper.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

#include "placeflow/graph/kernel.h"
#include "placeflow/graph/op_registry.h"

namespace pf {
namespace {

// The only consumer of `o` is input 0 of a node running `op` on this partition; no control edge
// leaves o's node and o is not fetched.
Node* SoleConsumer(const Output& o, const char* op, const std::set<Output>& fetched) {
  if (fetched.count(o) || o.node->num_outputs() != 1) return nullptr;
  Node* consumer = nullptr;
  for (const Edge& e : o.node->out_edges()) {
    if (e.IsControl() || consumer != nullptr) return nullptr;
    consumer = e.dst;
    if (e.dst_input != 0) return nullptr;
  }
  return consumer != nullptr && consumer->op() == op ? consumer : nullptr;
}

bool IsRank2(const Output& o) { return o.shape().unknown_rank() || o.shape().rank() == 2; }

}  // namespace

bool RemappingEnabled(bool option) {
  static const bool env_off = [] {
    const char* v = std::getenv("PF_FUSE");
    return v != nullptr && v[0] == '0';
  }();
  return option && !env_off;
}

std::string FusionLogLine(const Fusion& f, const std::string& device) {
  return fmt::format("Remapper: fused {} into {} ({} [{}]) on {}", fmt::join(f.fused, ", "),
                     f.fused.back(), f.op, fmt::join(f.fused_ops, ", "), device);
}

std::vector<Fusion> Remap(Partitions::Part* part, const std::set<Output>& fetched,
                          std::unordered_map<const Node*, Node*>* copy_of) {
  std::vector<Fusion> done;
  const OpDef* fused_def = OpRegistry::Global()->Find("_FusedMatMul");
  if (fused_def == nullptr) return done;
  Graph& g = *part->graph;
  const std::string& device_type = part->device->device_type();
  std::unordered_map<const Node*, Node*> replaced_by;  // removed copy -> fused node (or null)
  const std::vector<Node*> nodes = part->nodes;
  for (Node* matmul : nodes) {
    if (replaced_by.count(matmul) || matmul->op() != "MatMul") continue;
    Node* bias_add = SoleConsumer(Output(matmul, 0), "BiasAdd", fetched);
    if (bias_add == nullptr || !IsRank2(Output(matmul, 0))) continue;
    if (bias_add->input(1).shape().unknown_rank() || bias_add->input(1).shape().rank() != 1)
      continue;
    Node* relu = SoleConsumer(Output(bias_add, 0), "Relu", fetched);
    std::vector<Node*> group = {matmul, bias_add};
    if (relu != nullptr) group.push_back(relu);
    Node* last = group.back();

    NodeSpec spec;
    spec.name = last->name();
    spec.op_def = fused_def;
    spec.attrs = {{"T", matmul->attr<DType>("T")},
                  {"transpose_a", matmul->attr<bool>("transpose_a")},
                  {"transpose_b", matmul->attr<bool>("transpose_b")},
                  {"fused_ops", relu != nullptr ? std::vector<std::string>{"BiasAdd", "Relu"}
                                                : std::vector<std::string>{"BiasAdd"}}};
    if (KernelRegistry::Global()->Find("_FusedMatMul", device_type, spec.attrs) == nullptr)
      continue;  // e.g. a GPU: the patterns stay as they are
    spec.inputs = {matmul->input(0), matmul->input(1), bias_add->input(1)};
    for (const Node* n : group) {
      for (Node* c : n->control_inputs()) {
        if (std::find(spec.control_inputs.begin(), spec.control_inputs.end(), c) ==
            spec.control_inputs.end())
          spec.control_inputs.push_back(c);
      }
    }
    spec.output_dtypes = {last->output_dtype(0)};
    spec.output_shapes = {last->output_shape(0)};
    spec.requested_device = last->requested_device();
    spec.colocation = last->colocation_group();
    // Consumers and control successors of the last node move to the fused node.
    std::vector<Edge> out = last->out_edges();
    Node* fused = g.AddNode(std::move(spec));
    fused->set_assigned_device(last->assigned_device());
    for (const Edge& e : out) {
      if (e.IsControl()) {
        g.AddControlEdge(fused, e.dst);
      } else {
        g.UpdateEdge(Output(fused, e.src_output), e.dst, e.dst_input);
      }
    }
    Fusion f;
    f.op = "_FusedMatMul";
    f.fused_ops = fused->attr<std::vector<std::string>>("fused_ops");
    for (Node* n : group) f.fused.push_back(n->name());
    for (auto it = group.rbegin(); it != group.rend(); ++it) {
      replaced_by[*it] = *it == last ? fused : nullptr;
      g.RemoveNode(*it);
    }
    // Runs where the last node ran (its successors' order in the part does not matter).
    auto pos = std::find(part->nodes.begin(), part->nodes.end(), last);
    *pos = fused;
    done.push_back(std::move(f));
  }
  if (done.empty()) return done;
  part->nodes.erase(std::remove_if(part->nodes.begin(), part->nodes.end(),
                                   [&](Node* n) { return replaced_by.count(n) > 0; }),
                    part->nodes.end());
  for (auto it = copy_of->begin(); it != copy_of->end();) {
    auto r = replaced_by.find(it->second);
    if (r == replaced_by.end()) {
      ++it;
    } else if (r->second == nullptr) {
      it = copy_of->erase(it);
    } else {
      it->second = r->second;
      ++it;
    }
  }
  return done;
}

}  // namespace pf
