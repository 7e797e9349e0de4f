#include "placeflow/distributed/step_rendezvous.h"

#include <algorithm>
#include <atomic>

#include "placeflow/devices/copy_registry.h"
#include "placeflow/distributed/coding.h"
#include "placeflow/distributed/rpc.pb.h"
#include "placeflow/distributed/rpc_util.h"
#include "placeflow/graph/proto_codecs.h"

namespace pf {
namespace {

// The tensor a key names, with the loop iteration when it has one: "tensor;frame:iteration"
// (graph/rendezvous.h, executor/executor_state.h).
std::string TensorOfKey(const std::string& key) {
  size_t at = 0;
  for (int field = 0; field < 3 && at != std::string::npos; ++field) at = key.find(';', at + 1);
  return at == std::string::npos ? key : key.substr(at + 1);
}
constexpr char kRecvTensorMethod[] = "/pf.rpc.WorkerService/RecvTensor";
// Large tensors travel in chunks of this size over up to kStreams connections per peer.
constexpr int64_t kChunkBytes = int64_t{8} << 20;
constexpr int kStreams = 4;
}  // namespace

StatusOr<std::shared_ptr<grpc::GenericStub>> PeerChannels::Stub(const std::string& job, int task,
                                                                int stream, std::string* address) {
  PF_ASSIGN_OR_RETURN(*address, cluster_.TaskAddress(job, task));
  std::lock_guard<std::mutex> lock(mu_);
  auto& stub = stubs_[{*address, stream}];
  if (!stub) {
    PF_ASSIGN_OR_RETURN(auto channel, NewChannel(*address, options_, stream));
    stub = std::make_shared<grpc::GenericStub>(channel);
  }
  return stub;
}

struct StepRendezvous::Call {
  std::shared_ptr<grpc::ClientContext> ctx = std::make_shared<grpc::ClientContext>();
  grpc::ByteBuffer request, response;
};

// A RecvTensor response: its header and a reader positioned at its bytes.
struct StepRendezvous::Chunk {
  rpc::RecvTensorHeader header;
  RawReader reader;
  // Copies the bytes to their place in `t`: exactly the chunk at `offset` that was asked for.
  Status ReadInto(const Tensor& t, int64_t offset) {
    const int64_t total = static_cast<int64_t>(t.TotalBytes());
    const int64_t want = std::min(kChunkBytes, total - offset);
    const int64_t n = static_cast<int64_t>(reader.remaining());
    Shape shape;
    if (auto parsed = ShapeFromProto(header.tensor().tensor_shape()); parsed.ok()) shape = *parsed;
    DType dtype = DT_INVALID;
    if (auto parsed = DTypeFromProto(header.tensor().dtype()); parsed.ok()) dtype = *parsed;
    if (t.dtype() != dtype || shape != t.shape() || header.offset() != offset || n != want) {
      return errors::Internal("A RecvTensor response holds ", n, " bytes at ", header.offset(),
                              " of a ", DTypeName(dtype), " ", shape.ToString(),
                              " tensor; expected ", want, " bytes at ", offset, " of a ",
                              DTypeName(t.dtype()), " ", t.shape().ToString());
    }
    return reader.Read(static_cast<char*>(t.raw_data()) + offset, n)
               ? Status::OK()
               : errors::Internal("A RecvTensor response is truncated");
  }
};

Status StepRendezvous::Send(const std::string& key, const Tensor& value) {
  return local_.Send(key, value);
}

void StepRendezvous::RecvAsync(const std::string& key, DoneCallback done) {
  // Keys start with the sending device's full name, "/job:J/replica:0/task:T/device:...".
  if (key.compare(0, task_name_.size(), task_name_) == 0 &&
      key.compare(task_name_.size(), 8, "/device:") == 0)
    return local_.RecvAsync(key, std::move(done));
  DeviceName src;
  DeviceName::Parse(Rendezvous::SendDevice(key), &src);
  PullFromPeer(src, key, std::move(done));
}

void StepRendezvous::StartAbort(const Status& status) {
  std::vector<std::shared_ptr<grpc::ClientContext>> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_.ok()) aborted_ = status.ok() ? errors::Aborted("Step aborted") : status;
    for (auto& [ptr, ctx] : in_flight_) calls.push_back(ctx);
  }
  local_.StartAbort(status);
  for (auto& c : calls) c->TryCancel();
}

Status StepRendezvous::aborted() {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

void StepRendezvous::RecvLocal(const std::string& key, Device* src, Device* host,
                               DoneCallback done) {
  // The local rendezvous hands a value out once; every chunk's call reads this task's copy.
  bool ready = false;
  Status status;
  Tensor value;
  {
    std::lock_guard<std::mutex> lock(mu_);
    HostCopy& copy = host_copies_[key];
    if (copy.ready) {
      ready = true;
      status = copy.status;
      value = copy.value;
    } else {
      copy.waiters.push_back(std::move(done));
      if (copy.waiters.size() > 1) return;  // the first call's receive is under way
    }
  }
  if (ready) return done(status, value);
  auto self = shared_from_this();
  local_.RecvAsync(key, [self, key, src, host](const Status& s, const Tensor& t) {
    if (!s.ok() || !t.IsInitialized() || t.InHostMemory()) return self->Finish(key, s, t);
    CopyRegistry::Global()->CopyAsync(t, src, host, [self, key](StatusOr<Tensor> h) {
      self->Finish(key, h.status(), h.ok() ? *h : Tensor());
    });
  });
}

void StepRendezvous::Finish(const std::string& key, const Status& status, const Tensor& value) {
  std::vector<DoneCallback> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    HostCopy& copy = host_copies_[key];
    copy.ready = true;
    copy.status = status;
    copy.value = value;
    waiters.swap(copy.waiters);
  }
  for (auto& w : waiters) w(status, value);
}

void StepRendezvous::PullFromPeer(const DeviceName& src, const std::string& key,
                                  DoneCallback done) {
  auto self = shared_from_this();
  Fetch(src, key, 0, 0, [self, src, key, done](Status s, Chunk* r) {
    if (s.ok() && r->header.is_dead()) return done(Status::OK(), Tensor());
    if (s.ok() && r->header.tensor().dtype() == tensorflow::DT_STRING) {  // whole, one message
      StatusOr<Tensor> strings = ReadTensor(&r->reader, r->header.tensor());
      return done(strings.status(), strings.ok() ? *strings : Tensor());
    }
    StatusOr<Tensor> t = s.ok() ? NewTensorFor(r->header.tensor()) : StatusOr<Tensor>(s);
    const int64_t have = t.ok() ? static_cast<int64_t>(r->reader.remaining()) : 0;
    if (t.ok()) s = r->ReadInto(*t, 0);
    if (!t.ok() || !s.ok()) return done(t.ok() ? s : t.status(), Tensor());
    const int64_t total = static_cast<int64_t>(t->TotalBytes());
    if (have >= total) return done(Status::OK(), *t);
    // The rest in chunks over kStreams connections at once (one TCP stream does not fill a
    // machine's copy bandwidth), each copied straight into the tensor.
    struct Gather {
      Tensor t;
      std::atomic<int> left{0};
      std::mutex mu;
      Status status;
    };
    auto g = std::make_shared<Gather>();
    g->t = *t;
    const int chunks = static_cast<int>((total - have + kChunkBytes - 1) / kChunkBytes);
    g->left = chunks;
    for (int c = 0; c < chunks; ++c) {
      const int64_t offset = have + c * kChunkBytes;
      self->Fetch(src, key, offset, c % kStreams, [g, done, offset](Status s, Chunk* r) {
        if (s.ok()) s = r->ReadInto(g->t, offset);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(g->mu);
          if (g->status.ok()) g->status = s;
        }
        if (g->left.fetch_sub(1) == 1) done(g->status, g->status.ok() ? g->t : Tensor());
      });
    }
  });
}

void StepRendezvous::Fetch(const DeviceName& src, const std::string& key, int64_t offset,
                           int stream, FetchCallback callback) {
  std::string address;
  auto stub = peers_->Stub(src.job, src.task, stream, &address);
  if (!stub.ok()) return callback(stub.status(), nullptr);
  auto call = std::make_shared<Call>();
  Status aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted = aborted_;
    if (aborted.ok()) in_flight_[call.get()] = call->ctx;
  }
  if (!aborted.ok()) return callback(aborted, nullptr);  // not under mu_: it may abort
  AddToken(call->ctx.get(), peers_->options());
  rpc::RecvTensorRequest req;
  req.set_step_id(step_id_);
  req.set_key(key);
  req.set_offset(offset);
  req.set_max_bytes(kChunkBytes);
  grpc::Slice slice(req.SerializeAsString());
  call->request = grpc::ByteBuffer(&slice, 1);
  auto self = shared_from_this();
  (*stub)->UnaryCall(
      call->ctx.get(), kRecvTensorMethod, grpc::StubOptions(), &call->request, &call->response,
      [self, call, src, key, address, callback = std::move(callback)](grpc::Status st) {
        {
          std::lock_guard<std::mutex> lock(self->mu_);
          self->in_flight_.erase(call.get());
        }
        const auto what = [&] {
          return fmt::format("RecvTensor of '{}' from /job:{}/replica:0/task:{} ({})",
                             TensorOfKey(key), src.job, src.task, address);
        };
        if (!st.ok()) return callback(FromGrpc(st, what()), nullptr);
        Chunk chunk;
        Status s = chunk.reader.Open(&call->response, &chunk.header);
        if (!s.ok()) return callback(s.WithSuffix(" (" + what() + ")"), nullptr);
        callback(Status::OK(), &chunk);
      });
}

}  // namespace pf
