#include "placeflow/distributed/coding.h"

#include <grpcpp/support/slice.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "placeflow/graph/op_registry.h"

namespace pf {

void ShapeToProto(const Shape& s, rpc::ShapeProto* p) {
  p->set_unknown_rank(s.unknown_rank());
  if (s.unknown_rank()) return;
  for (int64_t d : s.dims()) p->add_dim(d);
}

StatusOr<Shape> ShapeFromProto(const rpc::ShapeProto& p) {
  if (p.unknown_rank()) return Shape::Unknown();
  return Shape::FromDims(std::span<const int64_t>(p.dim().data(), p.dim().size()));
}

namespace {

StatusOr<DType> CheckedDType(int32_t value) {
  if (value == DT_STRING) {
    return errors::Unimplemented(
        "A string tensor cannot cross between tasks: DT_STRING is not encoded on the wire");
  }
  if (value <= DT_INVALID || value > DT_UINT8)
    return errors::InvalidArgument("Unknown dtype ", value, " on the wire");
  return static_cast<DType>(value);
}

StatusOr<Tensor> NewHostTensor(DType dtype, const Shape& shape) {
  if (!shape.IsFullyDefined())
    return errors::InvalidArgument("A tensor on the wire has shape ", shape.ToString());
  Tensor t(CpuAllocator(), dtype, shape);  // not zeroed: every byte is about to be written
  if (!t.IsInitialized() && shape.num_elements() > 0) {
    return errors::ResourceExhausted("Out of host memory receiving a tensor of shape ",
                                     shape.ToString(), " and dtype ", DTypeName(dtype));
  }
  return t;
}

void AttrToProto(const AttrValue& v, rpc::AttrProto* p) {
  std::visit(
      [p](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          p->set_b(x);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          p->set_i(x);
        } else if constexpr (std::is_same_v<T, float>) {
          p->set_f(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          p->set_s(x);
        } else if constexpr (std::is_same_v<T, DType>) {
          p->set_type(x);
        } else if constexpr (std::is_same_v<T, Shape>) {
          ShapeToProto(x, p->mutable_shape());
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          auto* ints = p->mutable_ints();  // set even when empty: the oneof says which
          for (int64_t i : x) ints->add_v(i);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          auto* strings = p->mutable_strings();
          for (const std::string& s : x) strings->add_v(s);
        } else {
          static_assert(std::is_same_v<T, Tensor>);
          TensorToProto(x, p->mutable_tensor());
        }
      },
      v);
}

StatusOr<AttrValue> AttrFromProto(const rpc::AttrProto& p) {
  switch (p.value_case()) {
    case rpc::AttrProto::kB:
      return AttrValue(p.b());
    case rpc::AttrProto::kI:
      return AttrValue(static_cast<int64_t>(p.i()));
    case rpc::AttrProto::kF:
      return AttrValue(p.f());
    case rpc::AttrProto::kS:
      return AttrValue(p.s());
    case rpc::AttrProto::kType: {
      PF_ASSIGN_OR_RETURN(DType t, CheckedDType(p.type()));
      return AttrValue(t);
    }
    case rpc::AttrProto::kShape: {
      PF_ASSIGN_OR_RETURN(Shape s, ShapeFromProto(p.shape()));
      return AttrValue(s);
    }
    case rpc::AttrProto::kInts:
      return AttrValue(std::vector<int64_t>(p.ints().v().begin(), p.ints().v().end()));
    case rpc::AttrProto::kStrings:
      return AttrValue(std::vector<std::string>(p.strings().v().begin(), p.strings().v().end()));
    case rpc::AttrProto::kTensor: {
      PF_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(p.tensor()));
      return AttrValue(t);
    }
    default:
      return errors::InvalidArgument("An attribute on the wire has no value");
  }
}

}  // namespace

void TensorToProto(const Tensor& t, rpc::TensorProto* p) {
  p->set_dtype(t.dtype());
  ShapeToProto(t.shape(), p->mutable_shape());
  if (t.TotalBytes() > 0) p->set_content(t.raw_data(), t.TotalBytes());
}

StatusOr<Tensor> TensorFromProto(const rpc::TensorProto& p) {
  PF_ASSIGN_OR_RETURN(DType dtype, CheckedDType(p.dtype()));
  PF_ASSIGN_OR_RETURN(Shape shape, ShapeFromProto(p.shape()));
  PF_ASSIGN_OR_RETURN(Tensor t, NewHostTensor(dtype, shape));
  if (p.content().size() != t.TotalBytes()) {
    return errors::InvalidArgument("A tensor of shape ", shape.ToString(), " and dtype ",
                                   DTypeName(dtype), " came with ", p.content().size(),
                                   " bytes instead of ", t.TotalBytes());
  }
  if (t.TotalBytes() > 0) std::memcpy(t.raw_data(), p.content().data(), t.TotalBytes());
  return t;
}

namespace {

// The graph's nodes, each after its inputs: GraphFromProto resolves inputs by name as it goes,
// and a rewrite (the remapper's fused node, added last) may feed nodes made before it.
std::vector<const Node*> InputsFirst(const Graph& graph) {
  std::vector<const Node*> order;
  std::unordered_set<const Node*> done;
  std::vector<std::pair<const Node*, bool>> stack;  // (node, its inputs are already queued)
  for (const Node* root : graph.nodes()) {
    stack.emplace_back(root, false);
    while (!stack.empty()) {
      auto [n, expanded] = stack.back();
      stack.pop_back();
      if (done.count(n)) continue;
      if (expanded) {
        done.insert(n);
        order.push_back(n);
        continue;
      }
      stack.emplace_back(n, true);
      for (const Output& in : n->inputs()) {
        if (!done.count(in.node)) stack.emplace_back(in.node, false);
      }
      for (const Node* c : n->control_inputs()) {
        if (!done.count(c)) stack.emplace_back(c, false);
      }
    }
  }
  return order;
}

}  // namespace

void GraphToProto(const Graph& graph, const std::vector<Node*>& runs, rpc::GraphProto* p) {
  std::unordered_set<const Node*> running(runs.begin(), runs.end());
  for (const Node* n : InputsFirst(graph)) {
    rpc::NodeProto* np = p->add_node();
    np->set_name(n->name());
    np->set_op(n->op());
    for (const Output& in : n->inputs()) np->add_input(in.name());
    for (const Node* c : n->control_inputs()) np->add_input("^" + c->name());
    for (const auto& [name, value] : n->attrs()) AttrToProto(value, &(*np->mutable_attr())[name]);
    np->set_device(n->assigned_device());
    for (int i = 0; i < n->num_outputs(); ++i) {
      np->add_output_dtype(n->output_dtype(i));
      ShapeToProto(n->output_shape(i), np->add_output_shape());
    }
    np->set_runs(running.count(n) > 0);
  }
}

StatusOr<Output> FindOutput(const Graph& graph, const std::string& name) {
  PF_ASSIGN_OR_RETURN(TensorName t, ParseTensorName(name));
  Node* n = graph.FindNode(t.node);
  const int index = t.index;
  if (n == nullptr || index >= n->num_outputs())
    return errors::InvalidArgument("Tensor '", name, "' is not in the registered graph");
  return Output(n, index);
}

StatusOr<std::unique_ptr<Graph>> GraphFromProto(const rpc::GraphProto& p,
                                                std::vector<Node*>* runs) {
  auto graph = std::make_unique<Graph>();
  for (const rpc::NodeProto& np : p.node()) {
    NodeSpec spec;
    spec.name = np.name();
    spec.op_def = OpRegistry::Global()->Find(np.op());
    if (spec.op_def == nullptr) {
      return errors::NotFound("Node '", np.name(), "' needs op '", np.op(),
                              "', which this task's placeflow does not have");
    }
    for (const auto& [name, value] : np.attr()) {
      auto attr = AttrFromProto(value);
      if (!attr.ok()) {
        return attr.status().WithSuffix(
            fmt::format(" (attr '{}' of node '{}' ({}))", name, np.name(), np.op()));
      }
      spec.attrs[name] = std::move(attr).value();
    }
    for (const std::string& in : np.input()) {
      if (!in.empty() && in[0] == '^') {
        Node* c = graph->FindNode(in.substr(1));
        if (c == nullptr)
          return errors::InvalidArgument("Node '", np.name(), "': unknown control input ", in);
        spec.control_inputs.push_back(c);
      } else {
        PF_ASSIGN_OR_RETURN(Output o, FindOutput(*graph, in));
        spec.inputs.push_back(o);
      }
    }
    for (int i = 0; i < np.output_dtype_size(); ++i) {
      PF_ASSIGN_OR_RETURN(DType t, CheckedDType(np.output_dtype(i)));
      spec.output_dtypes.push_back(t);
      PF_ASSIGN_OR_RETURN(Shape s, ShapeFromProto(np.output_shape(i)));
      spec.output_shapes.push_back(s);
    }
    spec.requested_device = np.device();
    Node* n = graph->AddNode(std::move(spec));
    n->set_assigned_device(np.device());
    if (np.runs()) runs->push_back(n);
  }
  return graph;
}

namespace {

// Keeps a tensor's buffer alive while gRPC sends it; freed by gRPC's slice destructor.
void ReleaseBuffer(void* holder) { delete static_cast<std::shared_ptr<Buffer>*>(holder); }

}  // namespace

grpc::ByteBuffer EncodeRaw(const google::protobuf::MessageLite& header,
                           const std::vector<TensorRange>& parts) {
  std::string prefix(4, '\0');
  const uint32_t header_len = static_cast<uint32_t>(header.ByteSizeLong());
  std::memcpy(prefix.data(), &header_len, 4);
  header.AppendToString(&prefix);
  std::vector<grpc::Slice> slices;
  slices.emplace_back(prefix);
  for (const TensorRange& part : parts) {
    const int64_t total = static_cast<int64_t>(part.tensor.TotalBytes());
    const int64_t offset = std::clamp<int64_t>(part.offset, 0, total);
    const int64_t len = part.size >= 0 ? std::min(part.size, total - offset) : total - offset;
    if (len <= 0) continue;
    auto* holder = new std::shared_ptr<Buffer>(part.tensor.buffer());
    slices.emplace_back(static_cast<char*>(part.tensor.raw_data()) + offset,
                        static_cast<size_t>(len), &ReleaseBuffer, holder);
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

bool RawReader::Read(void* dst, size_t n) {
  char* out = static_cast<char*>(dst);
  if (n > remaining_) return false;
  remaining_ -= n;
  while (n > 0 && slice_ < slices_.size()) {
    size_t take = std::min(n, slices_[slice_].size() - offset_);
    std::memcpy(out, slices_[slice_].begin() + offset_, take);
    out += take;
    n -= take;
    offset_ += take;
    if (offset_ == slices_[slice_].size()) {
      ++slice_;
      offset_ = 0;
    }
  }
  return n == 0;
}

Status RawReader::Open(const grpc::ByteBuffer* wire, google::protobuf::MessageLite* header) {
  if (!wire->Dump(&slices_).ok()) return errors::Internal("Cannot read a raw message");
  remaining_ = wire->Length();
  uint32_t len = 0;
  std::string header_bytes;
  if (!Read(&len, 4) || len > remaining_) return errors::Internal("A raw message is malformed");
  header_bytes.resize(len);
  if (!Read(header_bytes.data(), len) || !header->ParseFromString(header_bytes))
    return errors::Internal("A raw message's header is malformed");
  return Status::OK();
}

void TensorMeta(const Tensor& t, rpc::TensorProto* p) {
  p->set_dtype(t.dtype());
  ShapeToProto(t.shape(), p->mutable_shape());
}

StatusOr<Tensor> NewTensorFor(int32_t dtype, const rpc::ShapeProto& shape) {
  PF_ASSIGN_OR_RETURN(DType d, CheckedDType(dtype));
  PF_ASSIGN_OR_RETURN(Shape s, ShapeFromProto(shape));
  return NewHostTensor(d, s);
}

StatusOr<Tensor> ReadTensor(RawReader* reader, const rpc::TensorProto& meta) {
  PF_ASSIGN_OR_RETURN(Tensor t, NewTensorFor(meta.dtype(), meta.shape()));
  if (!reader->Read(t.raw_data(), t.TotalBytes())) {
    return errors::Internal("A raw message ends before the ", t.TotalBytes(),
                            " bytes of a tensor of shape ", t.shape().ToString());
  }
  return t;
}

}  // namespace pf
