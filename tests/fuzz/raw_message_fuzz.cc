// The raw framing of RunGraph and RecvTensor from network bytes (distributed/coding.h): the
// input, cut into up to three gRPC slices where its first byte says, is read as a RunGraph
// request and each of its feeds as a tensor (strings as length-prefixed bytes). Errors are fine; a
// crash, an allocation the bytes do not pay for, or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>

#include "placeflow/distributed/coding.h"
#include "placeflow/distributed/rpc.pb.h"
#include "placeflow/io/proto/graph.pb.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t cut = data[0];
  ++data;
  --size;
  std::vector<grpc::Slice> slices;
  const size_t a = std::min(size, cut % 17), b = std::min(size, a + cut / 17);
  for (auto [from, to] : {std::pair{size_t{0}, a}, {a, b}, {b, size}}) {
    if (to > from) slices.emplace_back(data + from, to - from);
  }
  grpc::ByteBuffer wire(slices.data(), slices.size());
  pf::RawReader reader;
  pf::rpc::RunGraphRequest header;
  if (!reader.Open(&wire, &header).ok()) return 0;
  CHECK(reader.remaining() <= size);
  for (const tensorflow::TensorProto& meta : header.feed()) {
    const size_t before = reader.remaining();
    auto t = pf::ReadTensor(&reader, meta);
    if (!t.ok()) break;
    size_t wire_bytes = t->TotalBytes();
    if (t->dtype() == pf::DT_STRING) {  // each string: a u64 length, then its bytes
      wire_bytes = 0;
      for (const std::string& s : t->flat<std::string>()) wire_bytes += 8 + s.size();
    }
    CHECK(before - reader.remaining() == wire_bytes);
  }
  return 0;
}
