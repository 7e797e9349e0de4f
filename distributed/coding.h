// Wire coding of the cluster runtime: tensors, shapes and partition graphs to and from the
// protobuf messages of distributed/rpc.proto, and raw messages (RunGraph, RecvTensor): a small
// protobuf header followed by tensor bytes that go out as gRPC slices pointing at the tensors'
// own buffers and come in copied once, from the received slices straight into new tensors.
//
//   grpc::ByteBuffer wire = pf::EncodeRaw(header, {{tensor}});
//   pf::RawReader r;
//   PF_RETURN_IF_ERROR(r.Open(&wire, &header));
//   PF_ASSIGN_OR_RETURN(pf::Tensor t, pf::ReadTensor(&r, header.feed(0)));
#pragma once

#include <google/protobuf/message_lite.h>
#include <grpcpp/support/byte_buffer.h>

#include <memory>
#include <vector>

#include "placeflow/core/tensor.h"
#include "placeflow/distributed/rpc.pb.h"
#include "placeflow/graph/graph.h"

namespace pf {

void ShapeToProto(const Shape& s, rpc::ShapeProto* p);
StatusOr<Shape> ShapeFromProto(const rpc::ShapeProto& p);
// `t` must be in host memory. Copies the bytes into the message.
void TensorToProto(const Tensor& t, rpc::TensorProto* p);
StatusOr<Tensor> TensorFromProto(const rpc::TensorProto& p);

// Every node of `graph` (an already placed partition) with its attrs, inputs, control inputs,
// output types and shapes; `runs` tells which nodes the executor runs (not the _Args).
void GraphToProto(const Graph& graph, const std::vector<Node*>& runs, rpc::GraphProto* p);
// Rebuilds a partition graph (nodes in the proto's order, which is topological). Errors name
// the node and the op, e.g. an op this task's build does not have.
StatusOr<std::unique_ptr<Graph>> GraphFromProto(const rpc::GraphProto& p, std::vector<Node*>* runs);

// A raw message: [u32 header length][header][the bytes of each part, in order]. The parts are
// gRPC slices pointing into the tensors' own buffers, which they keep alive until sent.
struct TensorRange {
  Tensor tensor;
  int64_t offset = 0;
  int64_t size = -1;  // -1: to the end
};
grpc::ByteBuffer EncodeRaw(const google::protobuf::MessageLite& header,
                           const std::vector<TensorRange>& parts);

// Reads a raw message: Open parses the header, Read copies the following bytes in order.
class RawReader {
 public:
  Status Open(const grpc::ByteBuffer* wire, google::protobuf::MessageLite* header);
  size_t remaining() const { return remaining_; }
  bool Read(void* dst, size_t n);  // false when fewer than n bytes are left

 private:
  std::vector<grpc::Slice> slices_;
  size_t slice_ = 0, offset_ = 0, remaining_ = 0;
};

// Tensors in raw messages: the header holds dtype and shape (a TensorProto without content),
// the bytes follow it.
void TensorMeta(const Tensor& t, rpc::TensorProto* p);
StatusOr<Tensor> ReadTensor(RawReader* reader, const rpc::TensorProto& meta);
// A host tensor (not zeroed) of a dtype and shape from the wire.
StatusOr<Tensor> NewTensorFor(int32_t dtype, const rpc::ShapeProto& shape);

// Parses "node:index" (or "node", index 0) against `graph`.
StatusOr<Output> FindOutput(const Graph& graph, const std::string& name);

}  // namespace pf
