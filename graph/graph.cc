#include "placeflow/graph/graph.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "placeflow/graph/op_registry.h"

namespace pf {

DType Output::dtype() const { return node->output_dtype(index); }
const Shape& Output::shape() const { return node->output_shape(index); }
std::string Output::name() const { return fmt::format("{}:{}", node->name(), index); }
bool Output::operator<(const Output& o) const {
  return node->id() != o.node->id() ? node->id() < o.node->id() : index < o.index;
}

const std::string& Operation::name() const { return node->name(); }

const std::string& Node::op() const { return op_def_->name(); }
DType Node::input_dtype(int i) const { return inputs_[i].dtype(); }

namespace {

// The argument of `args` that tensor i belongs to, list arguments expanded (nullptr past them).
const ArgDef* ArgOf(const Node& node, const std::vector<ArgDef>& args, int i) {
  int first = 0;
  for (const ArgDef& arg : args) {
    int n = arg.number_attr.empty() ? 1 : static_cast<int>(node.attr<int64_t>(arg.number_attr));
    if (i < first + n) return &arg;
    first += n;
  }
  return nullptr;
}

}  // namespace

bool Node::IsRefInput(int i) const {
  const ArgDef* arg = ArgOf(*this, op_def_->inputs(), i);
  return arg != nullptr && arg->is_ref;
}
const ArgDef* Node::input_arg(int i) const { return ArgOf(*this, op_def_->inputs(), i); }
const ArgDef* Node::output_arg(int i) const { return ArgOf(*this, op_def_->outputs(), i); }

const Node* ReferencedVariable(const Output& o) {
  for (Output cur = o;; cur = cur.node->input(0)) {
    if (cur.node->op_def().is_variable()) return cur.node;
    // A while loop brings a variable in through an Enter, a cond through a Switch (TensorFlow's
    // RefEnter, RefSwitch): every output of theirs is the reference.
    const ControlFlowKind kind = cur.node->op_def().control_flow();
    if (kind == ControlFlowKind::kEnter || kind == ControlFlowKind::kSwitch) continue;
    if (cur.index != 0 || cur.node->num_inputs() == 0 || !cur.node->IsRefInput(0)) return nullptr;
  }
}

StatusOr<TensorName> ParseTensorName(std::string_view name) {
  TensorName t;
  std::string_view node = name;
  if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) {
    node = name.substr(0, colon);
    const std::string_view digits = name.substr(colon + 1);
    const char* end = digits.data() + digits.size();
    auto [ptr, ec] = std::from_chars(digits.data(), end, t.index);
    if (digits.empty() || !std::isdigit(static_cast<unsigned char>(digits[0])) ||
        ec != std::errc() || ptr != end) {
      return errors::InvalidArgument("The name '", name,
                                     "' looks like a Tensor name, but its index is not a number");
    }
  }
  if (node.empty()) return errors::InvalidArgument("The tensor name '", name, "' has no node name");
  t.node = std::string(node);
  return t;
}

bool Node::IsStateful() const { return op_def_->stateful(); }

std::string Node::DebugString() const {
  std::vector<std::string> ins;
  for (const Output& o : inputs_) ins.push_back(o.name());
  for (const Node* c : control_inputs_) ins.push_back("^" + c->name());
  return fmt::format("{} ({}) inputs: [{}] device: {}", name_, op(), fmt::join(ins, ", "),
                     assigned_device_.empty() ? requested_device_ : assigned_device_);
}

Node* Graph::AddNode(NodeSpec spec) {
  auto node = std::make_unique<Node>();
  Node* n = node.get();
  n->id_ = static_cast<int>(nodes_.size());
  n->name_ = std::move(spec.name);
  n->op_def_ = spec.op_def;
  n->attrs_ = std::move(spec.attrs);
  n->inputs_ = std::move(spec.inputs);
  n->output_dtypes_ = std::move(spec.output_dtypes);
  n->output_shapes_ = std::move(spec.output_shapes);
  n->requested_device_ = std::move(spec.requested_device);
  n->colocation_ = std::move(spec.colocation);
  name_counts_.try_emplace(n->name_, 0);
  by_name_[n->name_] = n;
  nodes_.push_back(std::move(node));
  node_ptrs_.push_back(n);
  for (int i = 0; i < n->num_inputs(); ++i) {
    Output src = n->inputs_[i];
    src.node->out_edges_.push_back(Edge{src.node, src.index, n, i});
  }
  for (Node* c : spec.control_inputs) AddControlEdge(c, n);
  return n;
}

void Graph::AddControlEdge(Node* src, Node* dst) {
  for (Node* c : dst->control_inputs_) {
    if (c == src) return;
  }
  dst->control_inputs_.push_back(src);
  src->out_edges_.push_back(Edge{src, -1, dst, -1});
}

void Graph::UpdateEdge(Output new_src, Node* dst, int dst_input) {
  Output& old = dst->inputs_[dst_input];
  auto& edges = old.node->out_edges_;
  edges.erase(std::find_if(edges.begin(), edges.end(), [&](const Edge& e) {
    return e.dst == dst && e.dst_input == dst_input;
  }));
  old = new_src;
  new_src.node->out_edges_.push_back(Edge{new_src.node, new_src.index, dst, dst_input});
}

void Graph::RemoveNode(Node* n) {
  auto drop_edges_to = [n](Node* src) {
    auto& edges = src->out_edges_;
    edges.erase(
        std::remove_if(edges.begin(), edges.end(), [n](const Edge& e) { return e.dst == n; }),
        edges.end());
  };
  for (const Output& in : n->inputs_) drop_edges_to(in.node);
  for (Node* c : n->control_inputs_) drop_edges_to(c);
  for (const Edge& e : n->out_edges_) {
    auto& controls = e.dst->control_inputs_;
    if (e.IsControl()) controls.erase(std::find(controls.begin(), controls.end(), n));
  }
  // A rewrite may have given the name to the node that replaces this one already.
  if (auto it = by_name_.find(n->name_); it != by_name_.end() && it->second == n) {
    by_name_.erase(it);
    name_counts_.erase(n->name_);
  }
  node_ptrs_.erase(std::find(node_ptrs_.begin(), node_ptrs_.end(), n));
  // The storage stays (ids are indices into it); only the node's contents go.
  *n = Node();
}

Node* Graph::FindNode(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

bool Graph::IsNameUsed(std::string_view name) const {
  return name_counts_.count(std::string(name)) > 0;
}

std::string Graph::UniqueName(const std::string& base) {
  auto it = name_counts_.find(base);
  if (it == name_counts_.end()) {
    name_counts_[base] = 0;
    return base;
  }
  int& count = it->second;
  std::string candidate;
  do {
    candidate = fmt::format("{}_{}", base, ++count);
  } while (name_counts_.count(candidate) > 0);
  name_counts_[candidate] = 0;
  return candidate;
}

const std::vector<Output>& Graph::GetCollection(const std::string& key) const {
  static const std::vector<Output> kEmpty;
  auto it = collections_.find(key);
  return it == collections_.end() ? kEmpty : it->second;
}

}  // namespace pf
