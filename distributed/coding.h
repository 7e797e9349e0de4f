// Wire coding of the cluster runtime: tensors, shapes and partition graphs to and from the
// protobuf messages of distributed/rpc.proto, and the raw RecvTensor response. A RecvTensor
// response is [u32 header length][RecvTensorHeader][tensor bytes]: the bytes go out as a gRPC
// slice that points at the tensor's own buffer (kept alive until gRPC is done with it), and
// come in copied once, from the received slices straight into a new tensor.
//
//   grpc::ByteBuffer wire = pf::EncodeRecvTensorResponse(tensor);
//   PF_ASSIGN_OR_RETURN(pf::Tensor t, pf::DecodeRecvTensorResponse(&wire));
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

grpc::ByteBuffer EncodeRecvTensorResponse(const Tensor& t);
StatusOr<Tensor> DecodeRecvTensorResponse(grpc::ByteBuffer* wire);

// Parses "node:index" (or "node", index 0) against `graph`.
StatusOr<Output> FindOutput(const Graph& graph, const std::string& name);

}  // namespace pf
