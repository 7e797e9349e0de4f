// Wire coding of the cluster runtime: tensors, shapes and partition graphs to and from the
// protobuf messages of distributed/rpc.proto, and the raw RecvTensor response. A RecvTensor
// response is [u32 header length][RecvTensorHeader][a byte range of the tensor]: the bytes go
// out as a gRPC slice that points at the tensor's own buffer (kept alive until gRPC is done
// with it), and come in copied once, from the received slices straight into the tensor.
//
//   grpc::ByteBuffer wire = pf::EncodeRecvTensorResponse(tensor, offset, max_bytes);
//   RecvTensorReader r;  PF_RETURN_IF_ERROR(r.Open(&wire));
//   Tensor t = ...(r.header()...);  PF_RETURN_IF_ERROR(r.ReadInto(t));
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <memory>

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

// Bytes [offset, offset + max_bytes) of `t` (to its end when max_bytes is 0).
grpc::ByteBuffer EncodeRecvTensorResponse(const Tensor& t, int64_t offset = 0,
                                          int64_t max_bytes = 0);

// Reads a RecvTensor response: the header, then its bytes into a tensor of that dtype and shape.
class RecvTensorReader {
 public:
  Status Open(grpc::ByteBuffer* wire);
  const rpc::RecvTensorHeader& header() const { return header_; }
  size_t num_bytes() const { return bytes_; }  // after the header
  // A host tensor of the header's dtype and shape (not zeroed).
  StatusOr<Tensor> NewTensor() const;
  // Copies the bytes to their offset in `t` (same dtype and shape as the header says).
  Status ReadInto(const Tensor& t);

 private:
  bool Read(char* dst, size_t n);
  std::vector<grpc::Slice> slices_;
  size_t slice_ = 0, offset_ = 0, bytes_ = 0;
  rpc::RecvTensorHeader header_;
};

// Parses "node:index" (or "node", index 0) against `graph`.
StatusOr<Output> FindOutput(const Graph& graph, const std::string& name);

}  // namespace pf
