#include "placeflow/distributed/coding.h"

#include <grpcpp/support/slice.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "placeflow/graph/proto_codecs.h"

namespace pf {
namespace {

// Keeps a tensor's buffer alive while gRPC sends it; freed by gRPC's slice destructor.
void ReleaseBuffer(void* holder) { delete static_cast<std::shared_ptr<Buffer>*>(holder); }

// A string tensor's wire bytes: each string as a little-endian u64 length, then its bytes.
grpc::Slice EncodeStrings(const Tensor& t) {
  static_assert(std::endian::native == std::endian::little, "the wire is little-endian");
  size_t total = 0;
  for (const std::string& s : t.flat<std::string>()) total += sizeof(uint64_t) + s.size();
  grpc::Slice out(total);
  char* p = reinterpret_cast<char*>(const_cast<uint8_t*>(out.begin()));
  for (const std::string& s : t.flat<std::string>()) {
    const uint64_t len = s.size();
    std::memcpy(p, &len, sizeof(len));
    std::memcpy(p + sizeof(len), s.data(), s.size());
    p += sizeof(len) + s.size();
  }
  return out;
}

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
    if (part.tensor.dtype() == DT_STRING) {
      if (part.tensor.num_elements() > 0) slices.push_back(EncodeStrings(part.tensor));
      continue;
    }
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
  slice_ = offset_ = 0;
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

void TensorMeta(const Tensor& t, tensorflow::TensorProto* p) {
  p->set_dtype(DTypeToProto(t.dtype()).value());
  ShapeToProto(t.shape(), p->mutable_tensor_shape());
}

namespace {

// A tensor's dtype, shape and byte size from a header.
struct WireMeta {
  DType dtype;
  Shape shape;
  int64_t bytes;
};

StatusOr<WireMeta> ParseMeta(const tensorflow::TensorProto& meta) {
  WireMeta m;
  PF_ASSIGN_OR_RETURN(m.dtype, DTypeFromProto(meta.dtype()));
  PF_ASSIGN_OR_RETURN(m.shape, ShapeFromProto(meta.tensor_shape()));
  if (!m.shape.IsFullyDefined())
    return errors::InvalidArgument("A tensor on the wire has shape ", m.shape.ToString());
  m.bytes = static_cast<int64_t>(DTypeSize(m.dtype));
  for (int64_t d : m.shape.dims()) {
    if (d > 0 && m.bytes > INT64_MAX / d)
      return errors::InvalidArgument("A tensor on the wire of shape ", m.shape.ToString(),
                                     " and dtype ", DTypeName(m.dtype), " is too large");
    m.bytes *= d;
  }
  return m;
}

StatusOr<Tensor> NewHostTensor(const WireMeta& m) {
  Tensor t(CpuAllocator(), m.dtype, m.shape);  // not zeroed: every byte is about to be written
  if (!t.IsInitialized() && m.bytes > 0) {
    return errors::ResourceExhausted("Out of host memory receiving a tensor of shape ",
                                     m.shape.ToString(), " and dtype ", DTypeName(m.dtype));
  }
  return t;
}

// A string tensor: all its length prefixes must fit in what is left before the strings are
// made (so a header cannot make this task allocate what was never sent), and each string's
// bytes before it is sized.
StatusOr<Tensor> ReadStrings(RawReader* reader, const WireMeta& m) {
  const int64_t n = m.shape.num_elements();
  if (static_cast<uint64_t>(n) > reader->remaining() / sizeof(uint64_t)) {
    return errors::Internal("A raw message ends before the ", n,
                            " length prefixes of a string tensor of shape ", m.shape.ToString(),
                            " (", reader->remaining(), " bytes left)");
  }
  Tensor t(DT_STRING, m.shape);
  std::string* out = t.data<std::string>();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t len = 0;
    // The strings before this one may have taken the bytes its length prefix needed.
    if (!reader->Read(&len, sizeof(len))) {
      return errors::Internal("A raw message ends before the length of string ", i,
                              " of a string tensor of shape ", m.shape.ToString());
    }
    if (len > reader->remaining()) {
      return errors::Internal("A raw message ends inside string ", i,
                              " of a string tensor of shape ", m.shape.ToString(),
                              ": its length says ", len, " bytes, ", reader->remaining(),
                              " are left");
    }
    out[i].resize(len);
    reader->Read(out[i].data(), len);
  }
  return t;
}

}  // namespace

StatusOr<Tensor> NewTensorFor(const tensorflow::TensorProto& meta) {
  PF_ASSIGN_OR_RETURN(WireMeta m, ParseMeta(meta));
  if (m.dtype == DT_STRING) {
    return errors::InvalidArgument(
        "A string tensor on the wire is read whole (ReadTensor), not into a new buffer");
  }
  return NewHostTensor(m);
}

StatusOr<Tensor> ReadTensor(RawReader* reader, const tensorflow::TensorProto& meta) {
  PF_ASSIGN_OR_RETURN(WireMeta m, ParseMeta(meta));
  if (m.dtype == DT_STRING) return ReadStrings(reader, m);
  // Checked before allocating: a header cannot make this task allocate what was never sent.
  if (static_cast<uint64_t>(m.bytes) > reader->remaining()) {
    return errors::Internal("A raw message ends before the ", m.bytes,
                            " bytes of a tensor of shape ", m.shape.ToString());
  }
  PF_ASSIGN_OR_RETURN(Tensor t, NewHostTensor(m));
  if (!reader->Read(t.raw_data(), t.TotalBytes())) {
    return errors::Internal("A raw message ends before the ", t.TotalBytes(),
                            " bytes of a tensor of shape ", t.shape().ToString());
  }
  return t;
}

}  // namespace pf
