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
bool ReadsShapeOnly(const Edge& e) { return e.dst->op_def().shape_only_input(e.dst_input); }

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

// Replaces `group` (its last node last) by a node made from `spec`, which gets the group's
// control inputs from outside it, the last node's consumers and control successors, and the
// inputs in `shape_uses` (each reads the fused node's output of its edge's index); it runs where
// the last node ran and has the last node's outputs unless `spec` names its own. Records the
// removed nodes in *replaced_by (the last maps to the new node) and returns the Fusion.
Fusion ReplaceGroup(Partitions::Part* part, const std::vector<Node*>& group, NodeSpec spec,
                    const std::vector<Edge>& shape_uses, std::vector<std::string> fused_ops,
                    std::unordered_map<const Node*, Node*>* replaced_by) {
  Graph& g = *part->graph;
  Node* last = group.back();
  for (const Node* n : group) {
    for (Node* c : n->control_inputs()) {
      if (std::find(group.begin(), group.end(), c) == group.end() &&
          std::find(spec.control_inputs.begin(), spec.control_inputs.end(), c) ==
              spec.control_inputs.end())
        spec.control_inputs.push_back(c);
    }
  }
  spec.name = last->name();
  if (spec.output_dtypes.empty()) {
    for (int i = 0; i < last->num_outputs(); ++i) {
      spec.output_dtypes.push_back(last->output_dtype(i));
      spec.output_shapes.push_back(last->output_shape(i));
    }
  }
  spec.requested_device = last->requested_device();
  spec.colocation = last->colocation_group();
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
  for (const Edge& e : shape_uses) g.UpdateEdge(Output(fused, e.src_output), e.dst, e.dst_input);
  Fusion f;
  f.op = fused->op();
  f.fused_ops = std::move(fused_ops);
  for (Node* n : group) f.fused.push_back(n->name());
  for (auto it = group.rbegin(); it != group.rend(); ++it) {
    (*replaced_by)[*it] = *it == last ? fused : nullptr;
    g.RemoveNode(*it);
  }
  *std::find(part->nodes.begin(), part->nodes.end(), last) = fused;
  return f;
}

// MatMul -> BiasAdd [-> Relu] as one _FusedMatMul (oneDNN's matmul with post-ops).
void FuseMatMuls(Partitions::Part* part, const std::set<Output>& fetched,
                 std::unordered_map<const Node*, Node*>* replaced_by, std::vector<Fusion>* done) {
  const OpDef* fused_def = OpRegistry::Global()->Find("_FusedMatMul");
  if (fused_def == nullptr) return;
  const std::string& device_type = part->device->device_type();
  const std::vector<Node*> nodes = part->nodes;
  for (Node* matmul : nodes) {
    if (replaced_by->count(matmul) || matmul->op() != "MatMul") continue;
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
    std::vector<std::string> fused_ops = {"BiasAdd"};
    if (relu != nullptr) fused_ops.push_back("Relu");

    NodeSpec spec;
    spec.op_def = fused_def;
    spec.attrs = {{"T", matmul->attr<DType>("T")},
                  {"transpose_a", matmul->attr<bool>("transpose_a")},
                  {"transpose_b", matmul->attr<bool>("transpose_b")},
                  {"fused_ops", fused_ops}};
    if (KernelRegistry::Global()->Find("_FusedMatMul", device_type, spec.attrs) == nullptr)
      continue;  // e.g. a GPU: the patterns stay as they are
    spec.inputs = {matmul->input(0), matmul->input(1), bias};
    done->push_back(
        ReplaceGroup(part, group, std::move(spec), shape_uses, std::move(fused_ops), replaced_by));
  }
}

// The input of an Apply op that takes the gradient ("grad", or "delta" for gradient descent).
int GradientInput(const Node& apply) {
  const std::vector<ArgDef>& args = apply.op_def().inputs();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name == "grad" || args[i].name == "delta") return static_cast<int>(i);
  }
  return -1;
}

// Apply<Opt>(.., AddN(t0, t1, ..), ..) as one _FusedApply<Opt>: the gradient's sum is made
// chunk by chunk inside the update (ops/train/apply_kernel.h). A term that is a Mul by a
// scalar (the gradient of an L2 regulariser, w * c) is absorbed too.
void FuseGradientSums(Partitions::Part* part, const std::set<Output>& fetched,
                      std::unordered_map<const Node*, Node*>* replaced_by,
                      std::vector<Fusion>* done) {
  const std::string& device_type = part->device->device_type();
  const std::vector<Node*> nodes = part->nodes;
  for (Node* apply : nodes) {
    if (replaced_by->count(apply) || !apply->op().starts_with("Apply")) continue;
    const OpDef* fused_def = OpRegistry::Global()->Find("_Fused" + apply->op());
    const int grad = GradientInput(*apply);
    if (fused_def == nullptr || grad < 0 || apply->input(grad).node->op() != "AddN") continue;
    Node* addn = apply->input(grad).node;
    std::vector<Edge> shape_uses;
    int at = -1;
    if (SoleConsumer(Output(addn, 0), {apply->op()}, fetched, &shape_uses, &at) != apply ||
        at != grad || !shape_uses.empty())
      continue;
    std::vector<Output> terms, scales;
    std::vector<int64_t> scaled_terms;
    std::vector<Node*> group;
    for (int j = 0; j < addn->num_inputs(); ++j) {
      const Output t = addn->input(j);
      int k = -1;
      std::vector<Edge> mul_shape_uses;
      if (t.node->op() == "Mul" && !replaced_by->count(t.node) &&
          SoleConsumer(t, {"AddN"}, fetched, &mul_shape_uses, &k) == addn &&
          mul_shape_uses.empty()) {
        const Node& mul = *t.node;
        const int s = mul.input(1).shape() == Shape{}   ? 1
                      : mul.input(0).shape() == Shape{} ? 0
                                                        : -1;
        if (s >= 0 && mul.input(1 - s).dtype() == t.dtype()) {
          terms.push_back(mul.input(1 - s));
          scales.push_back(mul.input(s));
          scaled_terms.push_back(j);
          group.push_back(t.node);
          continue;
        }
      }
      terms.push_back(t);
    }
    group.push_back(addn);
    group.push_back(apply);

    NodeSpec spec;
    spec.op_def = fused_def;
    spec.attrs = apply->attrs();
    spec.attrs["N"] = static_cast<int64_t>(terms.size()) - 1;
    spec.attrs["K"] = static_cast<int64_t>(scales.size());
    spec.attrs["scaled_terms"] = scaled_terms;
    if (KernelRegistry::Global()->Find(fused_def->name(), device_type, spec.attrs) == nullptr)
      continue;  // e.g. a GPU
    spec.inputs = apply->inputs();
    spec.inputs[grad] = terms[0];
    spec.inputs.insert(spec.inputs.end(), terms.begin() + 1, terms.end());
    spec.inputs.insert(spec.inputs.end(), scales.begin(), scales.end());
    std::vector<std::string> fused_ops = {"AddN"};
    if (!scales.empty()) fused_ops.insert(fused_ops.begin(), "Mul");
    done->push_back(
        ReplaceGroup(part, group, std::move(spec), {}, std::move(fused_ops), replaced_by));
  }
}

bool IsNhwcFloat(const Node& bn) {
  return bn.attr<std::string>("data_format") == "NHWC" && bn.attr<DType>("T") == DT_FLOAT;
}

// FusedBatchNorm -> Relu | Relu6 as one _FusedBatchNormEx that writes y once, activated. Other
// readers of the batch norm's output may be the activation's gradient (its features input) or
// read only its shape: they read the fused node's output instead (the gradient's mask is the
// same from the activation's output: ops/nn/batch_norm_nhwc.h); its other outputs (the
// statistics) move to the fused node's.
void FuseBatchNormActivations(Partitions::Part* part, const std::set<Output>& fetched,
                              std::unordered_map<const Node*, Node*>* replaced_by,
                              std::vector<Fusion>* done) {
  const std::string& device_type = part->device->device_type();
  const std::vector<Node*> nodes = part->nodes;
  for (Node* bn : nodes) {
    if (replaced_by->count(bn) || bn->op() != "FusedBatchNorm" || !IsNhwcFloat(*bn)) continue;
    bool outputs_fetched = false;
    for (int i = 0; i < bn->num_outputs(); ++i) outputs_fetched |= fetched.count(Output(bn, i)) > 0;
    if (outputs_fetched) continue;
    Node* act = nullptr;
    std::vector<Edge> moved, grads;  // to the fused node's outputs
    bool fusable = true;
    for (const Edge& e : bn->out_edges()) {
      if (e.IsControl()) {
        fusable = false;
      } else if (e.src_output != 0 || ReadsShapeOnly(e)) {
        moved.push_back(e);
      } else if ((e.dst->op() == "Relu" || e.dst->op() == "Relu6") && e.dst_input == 0 &&
                 act == nullptr) {
        act = e.dst;
      } else if ((e.dst->op() == "ReluGrad" || e.dst->op() == "Relu6Grad") && e.dst_input == 1) {
        grads.push_back(e);
      } else {
        fusable = false;
      }
    }
    if (!fusable || act == nullptr || replaced_by->count(act)) continue;
    const std::string& mode = act->op();
    const char* grad_op = mode == "Relu" ? "ReluGrad" : "Relu6Grad";
    if (std::any_of(grads.begin(), grads.end(),
                    [&](const Edge& e) { return e.dst->op() != grad_op; }))
      continue;
    NodeSpec spec;
    spec.op_def = OpRegistry::Global()->Find("_FusedBatchNormEx");
    spec.attrs = bn->attrs();
    spec.attrs["activation_mode"] = mode;
    if (KernelRegistry::Global()->Find("_FusedBatchNormEx", device_type, spec.attrs) == nullptr)
      continue;  // e.g. a GPU
    spec.inputs = bn->inputs();
    // The fused node has the batch norm's outputs, not the activation's (the last node's).
    for (int i = 0; i < bn->num_outputs(); ++i) {
      spec.output_dtypes.push_back(bn->output_dtype(i));
      spec.output_shapes.push_back(bn->output_shape(i));
    }
    moved.insert(moved.end(), grads.begin(), grads.end());
    done->push_back(ReplaceGroup(part, {bn, act}, std::move(spec), moved, {mode}, replaced_by));
  }
}

// Whether `bng` (a FusedBatchNormGrad) differentiates `fwd` (a batch norm): the same x and scale,
// and fwd's reserve spaces.
bool Differentiates(const Node& bng, Node* fwd) {
  return bng.input(1) == fwd->input(0) && bng.input(2) == fwd->input(1) &&
         bng.input(3) == Output(fwd, 3) && bng.input(4) == Output(fwd, 4);
}

// ReluGrad | Relu6Grad -> FusedBatchNormGrad (its y_backprop) as one _FusedBatchNormGradEx that
// masks the incoming gradient as it reads it, at the pre-activation it recomputes from x (it
// takes the forward pass's offset as a sixth input). Only behind a _FusedBatchNormEx of the same
// activation that the gradient differentiates, whose kernel computed the pre-activation's very
// bits the same way: the activation's tensor is not read again.
void FuseBatchNormGradActivations(Partitions::Part* part, const std::set<Output>& fetched,
                                  std::unordered_map<const Node*, Node*>* replaced_by,
                                  std::vector<Fusion>* done) {
  const std::string& device_type = part->device->device_type();
  const std::vector<Node*> nodes = part->nodes;
  for (Node* bng : nodes) {
    if (replaced_by->count(bng) || bng->op() != "FusedBatchNormGrad" || !IsNhwcFloat(*bng))
      continue;
    Node* act_grad = bng->input(0).node;
    if (replaced_by->count(act_grad) ||
        (act_grad->op() != "ReluGrad" && act_grad->op() != "Relu6Grad"))
      continue;
    const std::string mode = act_grad->op() == "ReluGrad" ? "Relu" : "Relu6";
    Node* fwd = act_grad->input(1).node;
    if (fwd->op() != "_FusedBatchNormEx" || act_grad->input(1).index != 0 ||
        fwd->attr<std::string>("activation_mode") != mode || !Differentiates(*bng, fwd))
      continue;
    std::vector<Edge> shape_uses;
    int at = -1;
    if (SoleConsumer(Output(act_grad, 0), {"FusedBatchNormGrad"}, fetched, &shape_uses, &at) !=
            bng ||
        at != 0)
      continue;
    NodeSpec spec;
    spec.op_def = OpRegistry::Global()->Find("_FusedBatchNormGradEx");
    spec.attrs = bng->attrs();
    spec.attrs["activation_mode"] = mode;
    if (KernelRegistry::Global()->Find("_FusedBatchNormGradEx", device_type, spec.attrs) == nullptr)
      continue;
    spec.inputs = bng->inputs();
    spec.inputs[0] = act_grad->input(0);
    spec.inputs.push_back(fwd->input(2));  // the offset
    done->push_back(
        ReplaceGroup(part, {act_grad, bng}, std::move(spec), shape_uses, {mode}, replaced_by));
  }
}

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
  std::unordered_map<const Node*, Node*> replaced_by;  // removed copy -> fused node (or null)
  FuseMatMuls(part, fetched, &replaced_by, &done);
  FuseGradientSums(part, fetched, &replaced_by, &done);
  FuseBatchNormActivations(part, fetched, &replaced_by, &done);
  FuseBatchNormGradActivations(part, fetched, &replaced_by, &done);
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
