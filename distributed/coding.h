// The raw framing of the cluster runtime's RunGraph and RecvTensor messages: a small protobuf
// header followed by tensor bytes that go out as gRPC slices pointing at the tensors' own
// buffers and come in copied once, from the received slices straight into new tensors. Each
// tensor's dtype and shape travel in the header as a TensorProto without content (graphs and
// the rest use graph/graph_def.h's codecs). A DT_STRING tensor's bytes are its strings in order,
// each as a little-endian u64 length and then its bytes (copied once into the message: strings
// are not one buffer).
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

namespace tensorflow {
class TensorProto;
}  // namespace tensorflow

namespace pf {

// A raw message: [u32 header length][header][the bytes of each part, in order]. The parts are
// gRPC slices pointing into the tensors' own buffers, which they keep alive until sent. A
// DT_STRING part is always whole (offset and size are ignored): its encoding is copied.
struct TensorRange {
  Tensor tensor;
  int64_t offset = 0;
  int64_t size = -1;  // -1: to the end
};
grpc::ByteBuffer EncodeRaw(const google::protobuf::MessageLite& header,
                           const std::vector<TensorRange>& parts);

// Reads a raw message: Open parses the header, Read copies the following bytes in order.
// Malformed input is an error, never a crash.
class RawReader {
 public:
  Status Open(const grpc::ByteBuffer* wire, google::protobuf::MessageLite* header);
  size_t remaining() const { return remaining_; }
  bool Read(void* dst, size_t n);  // false when fewer than n bytes are left

 private:
  std::vector<grpc::Slice> slices_;
  size_t slice_ = 0, offset_ = 0, remaining_ = 0;
};

// A tensor's dtype and shape for a header (its bytes follow the header). `t` in host memory.
void TensorMeta(const Tensor& t, tensorflow::TensorProto* meta);
// A host tensor (not zeroed) of the dtype and shape in `meta`, to be filled with raw bytes:
// InvalidArgument for a shape that is not fully defined or too large, and for DT_STRING (whose
// bytes are not its buffer: ReadTensor reads it whole).
StatusOr<Tensor> NewTensorFor(const tensorflow::TensorProto& meta);
// A tensor of `meta`'s dtype and shape from the reader's next bytes: an error, before
// allocating, when fewer bytes are left than the tensor needs (for strings: than its length
// prefixes need, then than each string's length says).
StatusOr<Tensor> ReadTensor(RawReader* reader, const tensorflow::TensorProto& meta);

}  // namespace pf
