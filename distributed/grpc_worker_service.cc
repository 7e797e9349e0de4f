#include "placeflow/distributed/grpc_worker_service.h"

#include <algorithm>

#include "placeflow/distributed/coding.h"
#include "placeflow/distributed/rpc_util.h"

namespace pf {

namespace {

// A call answered at once: the token check, then `answer`'s status.
template <typename Answer>
grpc::ServerUnaryReactor* Answered(grpc::CallbackServerContext* ctx, const Worker& worker,
                                   std::string_view method, Answer answer) {
  auto* reactor = ctx->DefaultReactor();
  if (Authorized(ctx, reactor, worker.options().token, method)) reactor->Finish(ToGrpc(answer()));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* GrpcWorkerService::GetStatus(grpc::CallbackServerContext* ctx,
                                                       const rpc::GetStatusRequest*,
                                                       rpc::GetStatusResponse* resp) {
  return Answered(ctx, *worker_, "GetStatus", [&] {
    worker_->GetStatus(resp);
    return Status::OK();
  });
}

grpc::ServerUnaryReactor* GrpcWorkerService::RegisterGraph(grpc::CallbackServerContext* ctx,
                                                           const rpc::RegisterGraphRequest* req,
                                                           rpc::RegisterGraphResponse* resp) {
  return Answered(ctx, *worker_, "RegisterGraph",
                  [&] { return worker_->RegisterGraph(*req, resp); });
}

grpc::ServerUnaryReactor* GrpcWorkerService::DeregisterGraph(grpc::CallbackServerContext* ctx,
                                                             const rpc::DeregisterGraphRequest* req,
                                                             rpc::DeregisterGraphResponse*) {
  return Answered(ctx, *worker_, "DeregisterGraph", [&] {
    worker_->DeregisterGraph(*req);
    return Status::OK();
  });
}

grpc::ServerUnaryReactor* GrpcWorkerService::RunGraph(grpc::CallbackServerContext* ctx,
                                                      const grpc::ByteBuffer* request,
                                                      grpc::ByteBuffer* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!Authorized(ctx, reactor, worker_->options().token, "RunGraph")) return reactor;
  // Raw: the feeds' bytes follow the header; they are copied once, into the feed tensors.
  auto call = std::make_shared<RunGraphCall>();
  RawReader reader;
  Status read = reader.Open(request, &call->request);
  for (int k = 0; read.ok() && k < call->request.feed_size(); ++k) {
    StatusOr<Tensor> t = ReadTensor(&reader, call->request.feed(k));
    read = t.status();
    if (t.ok()) call->feeds.push_back(std::move(t).value());
  }
  if (!read.ok()) {
    reactor->Finish(ToGrpc(read));
    return reactor;
  }
  worker_->RunGraphAsync(call, [call, reactor, resp](Status s) {
    if (s.ok()) {
      std::vector<TensorRange> parts;
      for (const Tensor& t : call->fetches) {
        TensorMeta(t, call->response.add_fetch());
        parts.push_back({t});
      }
      *resp = EncodeRaw(call->response, parts);
    }
    reactor->Finish(ToGrpc(s));
  });
  return reactor;
}

grpc::ServerUnaryReactor* GrpcWorkerService::AbortStep(grpc::CallbackServerContext* ctx,
                                                       const rpc::AbortStepRequest* req,
                                                       rpc::AbortStepResponse*) {
  return Answered(ctx, *worker_, "AbortStep", [&] {
    worker_->AbortStep(*req);
    return Status::OK();
  });
}

grpc::ServerUnaryReactor* GrpcWorkerService::CleanupStep(grpc::CallbackServerContext* ctx,
                                                         const rpc::CleanupStepRequest* req,
                                                         rpc::CleanupStepResponse*) {
  return Answered(ctx, *worker_, "CleanupStep", [&] {
    worker_->CleanupStep(*req);
    return Status::OK();
  });
}

grpc::ServerUnaryReactor* GrpcWorkerService::RecvTensor(grpc::CallbackServerContext* ctx,
                                                        const grpc::ByteBuffer* req_bytes,
                                                        grpc::ByteBuffer* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!Authorized(ctx, reactor, worker_->options().token, "RecvTensor")) return reactor;
  rpc::RecvTensorRequest req;
  grpc::Slice whole;
  if (!req_bytes->TrySingleSlice(&whole).ok() && !req_bytes->DumpToSingleSlice(&whole).ok()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unreadable request"));
    return reactor;
  }
  if (!req.ParseFromArray(whole.begin(), static_cast<int>(whole.size()))) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed request"));
    return reactor;
  }
  const int64_t offset = req.offset(), max_bytes = req.max_bytes();
  worker_->RecvTensorAsync(
      req, [reactor, resp, offset, max_bytes](const Status& s, const Tensor& t) {
        if (!s.ok()) return reactor->Finish(ToGrpc(s));
        rpc::RecvTensorHeader header;
        if (!t.IsInitialized()) {  // dead: sent by a _Send whose input was
          header.set_is_dead(true);
          *resp = EncodeRaw(header, {});
          return reactor->Finish(grpc::Status::OK);
        }
        TensorMeta(t, header.mutable_tensor());
        header.set_offset(std::clamp<int64_t>(offset, 0, t.TotalBytes()));
        *resp = EncodeRaw(header, {{t, offset, max_bytes > 0 ? max_bytes : -1}});
        reactor->Finish(grpc::Status::OK);
      });
  return reactor;
}

}  // namespace pf
