// The worker service over gRPC: each handler checks the cluster token, decodes the request,
// calls the task's Worker (distributed/worker.h) and encodes its answer. RunGraph and
// RecvTensor are raw (a header and tensor bytes as slices, distributed/coding.h). Every handler
// uses gRPC's callback API: a RunGraph or a RecvTensor waiting for its value holds no thread.
//
//   pf::GrpcWorkerService service(&worker);
//   builder.RegisterService(&service);
#pragma once

#include "placeflow/distributed/rpc.grpc.pb.h"
#include "placeflow/distributed/worker.h"

namespace pf {

class GrpcWorkerService final : public rpc::WorkerService::WithRawCallbackMethod_RunGraph<
                                    rpc::WorkerService::WithRawCallbackMethod_RecvTensor<
                                        rpc::WorkerService::CallbackService>> {
 public:
  explicit GrpcWorkerService(Worker* worker) : worker_(worker) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* ctx,
                                      const rpc::GetStatusRequest* req,
                                      rpc::GetStatusResponse* resp) override;
  grpc::ServerUnaryReactor* RegisterGraph(grpc::CallbackServerContext* ctx,
                                          const rpc::RegisterGraphRequest* req,
                                          rpc::RegisterGraphResponse* resp) override;
  grpc::ServerUnaryReactor* DeregisterGraph(grpc::CallbackServerContext* ctx,
                                            const rpc::DeregisterGraphRequest* req,
                                            rpc::DeregisterGraphResponse* resp) override;
  grpc::ServerUnaryReactor* RunGraph(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                     grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* AbortStep(grpc::CallbackServerContext* ctx,
                                      const rpc::AbortStepRequest* req,
                                      rpc::AbortStepResponse* resp) override;
  grpc::ServerUnaryReactor* CleanupStep(grpc::CallbackServerContext* ctx,
                                        const rpc::CleanupStepRequest* req,
                                        rpc::CleanupStepResponse* resp) override;
  grpc::ServerUnaryReactor* RecvTensor(grpc::CallbackServerContext* ctx,
                                       const grpc::ByteBuffer* req,
                                       grpc::ByteBuffer* resp) override;

 private:
  Worker* worker_;
};

}  // namespace pf
