#include "placeflow/executor/remapper.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "placeflow/graph/kernel.h"
#include "placeflow/graph/op_registry.h"

namespace pf {
namespace {

// An input that reads only its tensor's shape (a gradient's "like" operand): it can read the
// shape from the fused node's output instead, which has the product's shape.
bool ReadsShapeOnly(const Edge& e) {
  return (e.dst->op() == "SumToShape" || e.dst->op() == "ReduceGrad") && e.dst_input == 1;
}

// The only consumer of `o` is a node running one of `ops` on this partition; no control edge
// leaves o's node and o is not fetched. *input is the consumer's input that o feeds. Inputs that
// read only o's shape do not count: they are appended to *shape_uses.
Node* SoleConsumer(const Output& o, std::initializer_list<std::string_view> ops,
                   const std::set<Output>& fetched, std::vector<Edge>* shape_uses,
                   int* input = nullptr) {
  if (fetched.count(o) || o.node->num_outputs() != 1) return nullptr;
  Node* consumer = nullptr;
  std::vector<Edge> shape_only;
  for (const Edge& e : o.node->out_edges()) {
    if (!e.IsControl() && ReadsShapeOnly(e)) {
      shape_only.push_back(e);
      continue;
    }
    if (e.IsControl() || consumer != nullptr) return nullptr;
    consumer = e.dst;
    if (input != nullptr) *input = e.dst_input;
  }
  if (consumer == nullptr || std::find(ops.begin(), ops.end(), consumer->op()) == ops.end())
    return nullptr;
  if (input == nullptr && consumer->input(0) != o) return nullptr;
  shape_uses->insert(shape_uses->end(), shape_only.begin(), shape_only.end());
  return consumer;
}

// The bias a node adds to the product `mm` (a rank-2 [M, N] matrix), or an empty Output:
// BiasAdd's [N], or an Add whose other operand is a scalar or an [N] vector (a bias as
// TensorFlow's remapper reads an Add: broadcast along the rows).
Output BiasOf(const Node& add, int mm_input, const Output& mm) {
  if (add.op() == "BiasAdd") {
    const Shape& b = add.input(1).shape();
    return mm_input == 0 && !b.unknown_rank() && b.rank() == 1 ? add.input(1) : Output();
  }
  const Output other = add.input(1 - mm_input);
  const Shape& b = other.shape();
  if (b.unknown_rank() || b.rank() > 1 || add.output_shape(0) != mm.shape()) return Output();
  if (b.rank() == 1 && (b.dim(0) < 0 || mm.shape().unknown_rank() || b.dim(0) != mm.shape().dim(1)))
    return Output();
  return other;
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
    const Output product(matmul, 0);
    int mm_input = 0;
    std::vector<Edge> shape_uses;  // move to the fused node's output, of the same shape
    Node* bias_add = SoleConsumer(product, {"BiasAdd", "Add"}, fetched, &shape_uses, &mm_input);
    if (bias_add == nullptr || !IsRank2(product)) continue;
    const Output bias = BiasOf(*bias_add, mm_input, product);
    if (bias.node == nullptr) continue;
    std::vector<Edge> relu_shape_uses = shape_uses;
    Node* relu = SoleConsumer(Output(bias_add, 0), {"Relu"}, fetched, &relu_shape_uses);
    if (relu != nullptr) shape_uses = std::move(relu_shape_uses);
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
    spec.inputs = {matmul->input(0), matmul->input(1), bias};
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
    for (const Edge& e : shape_uses) g.UpdateEdge(Output(fused, 0), e.dst, e.dst_input);
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
