// gRPC plumbing shared by servers and client sessions: channels (no message size limit,
// keepalive so a vanished peer is noticed), credentials (insecure, or TLS with mutual
// authentication), the cluster token in request metadata, and status conversion.
//
//   auto channel = pf::NewChannel("localhost:2222", options).ValueOrThrow();
//   grpc::ClientContext ctx;  pf::AddToken(&ctx, options);
//   pf::Status s = pf::FromGrpc(stub->GetStatus(&ctx, req, &resp), "GetStatus to /job:ps/...");
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "placeflow/core/status.h"
#include "placeflow/executor/session.h"

namespace pf {

inline constexpr char kTokenMetadataKey[] = "pf-cluster-token";

// A status from a failed call, prefixed with `what` (which task, which call) unless a server
// made it (ToGrpc); its code and Reason (core/status.h) survive the trip.
Status FromGrpc(const grpc::Status& s, std::string_view what);
grpc::Status ToGrpc(const Status& s);
// Made by a server's ToGrpc, not by the transport (a connection refused is not).
bool IsRemoteError(const grpc::Status& s);
inline constexpr std::string_view kRemoteDetails = "remote";

// The process-wide channel to `address` with these credentials (made on first use). Each
// `stream` is a connection of its own (stream 0 is the one every other call shares).
StatusOr<std::shared_ptr<grpc::Channel>> NewChannel(const std::string& address,
                                                    const ClusterOptions& options, int stream = 0);
StatusOr<std::shared_ptr<grpc::ServerCredentials>> NewServerCredentials(
    const ClusterOptions& options);
// Extra channel and server arguments: unlimited message sizes, keepalive pings.
void SetCommonArguments(grpc::ChannelArguments* args);
void SetCommonArguments(grpc::ServerBuilder* builder);

void AddToken(grpc::ClientContext* ctx, const ClusterOptions& options);
// True when the server has no token or the call carries it; else finishes the call's `reactor`
// with Unauthenticated (logged) and returns false:
//   auto* reactor = ctx->DefaultReactor();
//   if (!Authorized(ctx, reactor, options.token, "GetStatus")) return reactor;
bool Authorized(grpc::CallbackServerContext* ctx, grpc::ServerUnaryReactor* reactor,
                const std::string& token, std::string_view method);

}  // namespace pf
