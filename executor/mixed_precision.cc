#include "placeflow/executor/mixed_precision.h"

#include <fmt/format.h>

#include <cstdlib>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "placeflow/devices/device.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/graph/op_registry.h"

namespace pf {
namespace {

enum class Color : uint8_t { kNone, kAllow, kInfer, kClear, kDeny };

// TensorFlow's lists (auto_mixed_precision_lists.h), for the ops placeflow has.
Color ListOf(std::string_view op) {
  static const std::unordered_map<std::string_view, Color> lists = [] {
    std::unordered_map<std::string_view, Color> m;
    for (std::string_view op :
         {"MatMul", "BatchMatMul", "BatchMatMulV2", "Conv2D", "Conv2DBackpropInput",
          "Conv2DBackpropFilter", "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
          "DepthwiseConv2dNativeBackpropFilter"})
      m[op] = Color::kAllow;
    for (std::string_view op :
         {"Exp", "Expm1", "L2Loss", "Log", "Log1p", "LogSoftmax", "Mean", "Pow", "Softmax",
          "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits", "Sum",
          "MeanSquaredError", "MeanSquaredErrorGrad", "SigmoidCrossEntropyWithLogits"})
      m[op] = Color::kDeny;
    for (std::string_view op : {"Add",
                                "AddN",
                                "AddV2",
                                "AvgPool",
                                "AvgPoolGrad",
                                "BiasAdd",
                                "BiasAddGrad",
                                "Div",
                                "Elu",
                                "EluGrad",
                                "Erf",
                                "FusedBatchNorm",
                                "FusedBatchNormGrad",
                                "LeakyRelu",
                                "LeakyReluGrad",
                                "Mul",
                                "RealDiv",
                                "Reciprocal",
                                "Rsqrt",
                                "Sigmoid",
                                "SigmoidGrad",
                                "Softplus",
                                "SoftplusGrad",
                                "Sqrt",
                                "Square",
                                "SquaredDifference",
                                "Sub",
                                "Tanh",
                                "TanhGrad"})
      m[op] = Color::kInfer;
    for (std::string_view op :
         {"Abs",        "ArgMax",       "ArgMin",       "BroadcastTo", "Concat",    "ConcatV2",
          "ExpandDims", "Fill",         "Floor",        "Gather",      "GatherV2",  "Identity",
          "Max",        "MaxPool",      "MaxPoolGrad",  "Maximum",     "Min",       "Minimum",
          "Neg",        "OnesLike",     "Pack",         "Pad",         "PadV2",     "Relu",
          "Relu6",      "Relu6Grad",    "ReluGrad",     "Reshape",     "Select",    "SelectV2",
          "Shape",      "Sign",         "Slice",        "Snapshot",    "Split",     "SplitV",
          "Squeeze",    "StopGradient", "StridedSlice", "Tile",        "Transpose", "Unpack",
          "ZerosLike"})
      m[op] = Color::kClear;
    return m;
  }();
  auto it = lists.find(op);
  return it == lists.end() ? Color::kNone : it->second;
}

bool IsTArg(const ArgDef* arg) { return arg != nullptr && arg->type == "T"; }

// A float32 edge that converting both ends would make 16-bit: the source's output and the
// destination's input are of type T.
bool IsTEdge(const Edge& e) {
  return !e.IsControl() && e.src->output_dtype(e.src_output) == DT_FLOAT &&
         IsTArg(e.src->output_arg(e.src_output)) && IsTArg(e.dst->input_arg(e.dst_input));
}

class Painter {
 public:
  Painter(Partitions::Part* part, DType target, const std::set<Output>& fetched)
      : part_(part), target_(target) {
    for (Node* n : part->nodes) {
      const Color c = ListOf(n->op());
      if (c == Color::kDeny) color_[n] = c;
      if (c != Color::kNone && c != Color::kDeny && Convertible(*n, fetched)) color_[n] = c;
    }
  }

  MixedPrecisionReport Run() {
    PropagateDeny();
    AllowBetweenAllow();
    for (bool changed = true; changed;) {
      PropagateAllowThroughClear();
      changed = target_ == DT_BFLOAT16 && AllowInferAfterAllow();
    }
    return Rewrite();
  }

 private:
  Color ColorOf(const Node* n) const {
    auto it = color_.find(n);
    return it == color_.end() ? Color::kNone : it->second;
  }
  bool Is(const Node* n, std::initializer_list<Color> colors) const {
    const Color c = ColorOf(n);
    for (Color x : colors)
      if (c == x) return true;
    return false;
  }

  bool Convertible(const Node& n, const std::set<Output>& fetched) const {
    if (!n.HasAttr("T") || n.attr<DType>("T") != DT_FLOAT) return false;
    for (int i = 0; i < n.num_inputs(); ++i)
      if (n.IsRefInput(i)) return false;
    for (int o = 0; o < n.num_outputs(); ++o)
      if (fetched.count(Output(const_cast<Node*>(&n), o))) return false;
    AttrMap attrs = n.attrs();
    attrs["T"] = target_;
    return KernelRegistry::Global()->Find(n.op(), part_->device->device_type(), attrs) != nullptr;
  }

  // Visits the nodes reachable from `roots` over T edges (forward or backward) whose color is
  // one of `through`; returns them (the roots only when reached again).
  std::unordered_set<Node*> Reach(const std::vector<Node*>& roots, bool forward,
                                  std::initializer_list<Color> through) const {
    std::unordered_set<Node*> seen;
    std::deque<Node*> todo(roots.begin(), roots.end());
    auto visit = [&](Node* next) {
      if (Is(next, through) && seen.insert(next).second) todo.push_back(next);
    };
    while (!todo.empty()) {
      Node* n = todo.front();
      todo.pop_front();
      if (forward) {
        for (const Edge& e : n->out_edges())
          if (IsTEdge(e)) visit(e.dst);
      } else {
        for (int i = 0; i < n->num_inputs(); ++i) {
          const Output& in = n->input(i);
          if (IsTEdge(Edge{in.node, in.index, n, i})) visit(in.node);
        }
      }
    }
    return seen;
  }

  std::vector<Node*> Colored(Color c) const {
    std::vector<Node*> out;
    for (Node* n : part_->nodes)
      if (ColorOf(n) == c) out.push_back(n);
    return out;
  }

  // deny -> infer -> clear -> infer -> clear -> allow: every node on a path from a deny node to
  // an infer or deny node through clear and infer nodes becomes deny (the last clear does not).
  void PropagateDeny() {
    const std::vector<Node*> deny = Colored(Color::kDeny);
    const std::unordered_set<Node*> below = Reach(deny, true, {Color::kInfer, Color::kClear});
    std::vector<Node*> ends;
    for (Node* n : below) {
      bool feeds_deny = false;
      for (const Edge& e : n->out_edges())
        feeds_deny |= IsTEdge(e) && ColorOf(e.dst) == Color::kDeny;
      if (ColorOf(n) == Color::kInfer || feeds_deny) ends.push_back(n);
    }
    std::unordered_set<Node*> upstream = Reach(ends, false, {Color::kInfer, Color::kClear});
    for (Node* n : ends) color_[n] = Color::kDeny;
    for (Node* n : upstream)
      if (below.count(n)) color_[n] = Color::kDeny;
  }

  // Clear and infer nodes with allow nodes both above and below them become allow.
  void AllowBetweenAllow() {
    const std::vector<Node*> allow = Colored(Color::kAllow);
    const auto below = Reach(allow, true, {Color::kInfer, Color::kClear});
    const auto above = Reach(allow, false, {Color::kInfer, Color::kClear});
    for (Node* n : below)
      if (above.count(n)) color_[n] = Color::kAllow;
  }

  // Clear nodes joined to an allow node through clear nodes, in either direction, become allow.
  void PropagateAllowThroughClear() {
    const std::vector<Node*> allow = Colored(Color::kAllow);
    std::unordered_set<Node*> reached = Reach(allow, true, {Color::kClear});
    for (Node* n : Reach(allow, false, {Color::kClear})) reached.insert(n);
    while (!reached.empty()) {
      std::vector<Node*> now(reached.begin(), reached.end());
      for (Node* n : now) color_[n] = Color::kAllow;
      reached = Reach(now, true, {Color::kClear});
      for (Node* n : Reach(now, false, {Color::kClear})) reached.insert(n);
    }
  }

  // bfloat16 (TF's oneDNN mode): infer nodes below an allow node, through infer nodes.
  bool AllowInferAfterAllow() {
    const auto below = Reach(Colored(Color::kAllow), true, {Color::kInfer});
    for (Node* n : below) color_[n] = Color::kAllow;
    return !below.empty();
  }

  MixedPrecisionReport Rewrite();
  Output CastOf(const Output& src, DType to, MixedPrecisionReport* report);

  Partitions::Part* part_;
  DType target_;
  std::unordered_map<const Node*, Color> color_;
  std::map<std::pair<Output, DType>, Output> casts_;
};

Output Painter::CastOf(const Output& src, DType to, MixedPrecisionReport* report) {
  Output& cast = casts_[{src, to}];
  if (cast.node != nullptr) return cast;
  const char* tag = to == DT_HALF ? "Fp16" : to == DT_BFLOAT16 ? "Bf16" : "Fp32";
  NodeSpec spec;
  spec.name = part_->graph->UniqueName(
      fmt::format("{}-{}-CastTo{}-AutoMixedPrecision", src.node->name(), src.index, tag));
  spec.op_def = OpRegistry::Global()->Find("Cast");
  spec.attrs = {{"SrcT", src.dtype()}, {"DstT", to}};
  spec.inputs = {src};
  spec.output_dtypes = {to};
  spec.output_shapes = {src.shape()};
  Node* n = part_->graph->AddNode(std::move(spec));
  n->set_assigned_device(src.node->assigned_device());
  part_->nodes.push_back(n);
  report->casts.push_back(n->name());
  return cast = Output(n, 0);
}

MixedPrecisionReport Painter::Rewrite() {
  MixedPrecisionReport report;
  const std::vector<Node*> converted = Colored(Color::kAllow);
  for (Node* n : converted) {
    n->SetAttr("T", target_);
    for (int o = 0; o < n->num_outputs(); ++o)
      if (IsTArg(n->output_arg(o))) part_->graph->SetOutputDType(n, o, target_);
    report.converted.push_back(n->name());
  }
  // Every input of a converted node and every consumer of one gets the type it expects.
  const std::vector<Node*> nodes = part_->nodes;
  for (Node* n : nodes) {
    const bool painted = ColorOf(n) == Color::kAllow;
    for (int i = 0; i < n->num_inputs(); ++i) {
      const Output in = n->input(i);
      const bool src_painted = ColorOf(in.node) == Color::kAllow;
      if (!painted && !src_painted) continue;
      DType want = in.dtype();
      if (painted && IsTArg(n->input_arg(i))) {
        want = target_;
      } else if (src_painted && in.dtype() == target_ && IsTArg(in.node->output_arg(in.index))) {
        want = DT_FLOAT;  // what the consumer read before the rewrite
      }
      if (want != in.dtype()) part_->graph->UpdateEdge(CastOf(in, want, &report), n, i);
    }
  }
  return report;
}

}  // namespace

MixedPrecisionReport AutoMixedPrecision(Partitions::Part* part, DType target,
                                        const std::set<Output>& fetched) {
  return Painter(part, target, fetched).Run();
}

StatusOr<DType> MixedPrecisionType(const std::string& option) {
  std::string mode = option;
  if (const char* env = std::getenv("PF_AUTO_MIXED_PRECISION"); env != nullptr) mode = env;
  if (mode.empty() || mode == "off" || mode == "0") return DT_INVALID;
  if (mode == "float16" || mode == "half") return DT_HALF;
  if (mode == "bfloat16") return DT_BFLOAT16;
  return errors::InvalidArgument(
      "auto_mixed_precision '", mode, "' is not one of \"\", \"off\", \"float16\", \"bfloat16\"",
      std::getenv("PF_AUTO_MIXED_PRECISION") != nullptr ? " (from PF_AUTO_MIXED_PRECISION)" : "");
}

std::string MixedPrecisionLogLine(const MixedPrecisionReport& r, DType target,
                                  const std::string& device) {
  return fmt::format("AutoMixedPrecision: {} nodes in {}, {} Casts on {}", r.converted.size(),
                     DTypeName(target), r.casts.size(), device);
}

}  // namespace pf
