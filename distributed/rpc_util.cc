#include "placeflow/distributed/rpc_util.h"

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "placeflow/core/logging.h"

namespace pf {
namespace {

StatusOr<std::string> ReadPem(const std::string& path, std::string_view what) {
  std::ifstream in(path);
  if (!in) return errors::NotFound("Cannot read the TLS ", what, " file '", path, "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool UsesTls(const ClusterOptions& o) {
  return !o.tls_ca_file.empty() || !o.tls_cert_file.empty() || !o.tls_key_file.empty();
}

Status CheckTlsComplete(const ClusterOptions& o) {
  if (o.tls_ca_file.empty() || o.tls_cert_file.empty() || o.tls_key_file.empty()) {
    return errors::InvalidArgument(
        "TLS needs all of tls_ca_file, tls_cert_file and tls_key_file (mutual authentication)");
  }
  return Status::OK();
}

// Large tensors: big HTTP/2 frames and flow-control windows, big socket reads (the defaults,
// 16 KiB frames and a window grown by probing, cost throughput on multi-MiB messages).
template <typename Set>
void SetTransferArguments(Set set) {
  if (const char* e = std::getenv("PF_GRPC_NO_TUNING"); e && *e == '1') return;
  set(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16 * 1024 * 1024 - 1);
  set(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 * 1024 * 1024);
  set("grpc.experimental.tcp_read_chunk_size", 4 * 1024 * 1024);
  set("grpc.experimental.tcp_max_read_chunk_size", 16 * 1024 * 1024);
  set(GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, 16 * 1024 * 1024);
}

}  // namespace

Status FromGrpc(const grpc::Status& s, std::string_view what) {
  if (s.ok()) return Status::OK();
  Code code = Code::kInternal;
  switch (s.error_code()) {
    case grpc::StatusCode::CANCELLED:
      code = Code::kCancelled;
      break;
    case grpc::StatusCode::INVALID_ARGUMENT:
      code = Code::kInvalidArgument;
      break;
    case grpc::StatusCode::NOT_FOUND:
      code = Code::kNotFound;
      break;
    case grpc::StatusCode::ALREADY_EXISTS:
      code = Code::kAlreadyExists;
      break;
    case grpc::StatusCode::FAILED_PRECONDITION:
      code = Code::kFailedPrecondition;
      break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      code = Code::kResourceExhausted;
      break;
    case grpc::StatusCode::OUT_OF_RANGE:
      code = Code::kOutOfRange;
      break;
    case grpc::StatusCode::UNIMPLEMENTED:
      code = Code::kUnimplemented;
      break;
    case grpc::StatusCode::ABORTED:
      code = Code::kAborted;
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      code = Code::kDeadlineExceeded;
      break;
    case grpc::StatusCode::UNAVAILABLE:
      code = Code::kUnavailable;
      break;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      code = Code::kUnauthenticated;
      break;
    case grpc::StatusCode::DATA_LOSS:
      code = Code::kDataLoss;
      break;
    default:
      break;
  }
  // A remote error already carries its node and device; only transport errors need `what`.
  if (!IsRemoteError(s)) return Status(code, fmt::format("{}: {}", what, s.error_message()));
  Reason reason = Reason::kNone;
  const std::string details = s.error_details();  // a copy: error_details() returns one
  if (details.size() > kRemoteDetails.size() + 1) {
    const std::string name = details.substr(kRemoteDetails.size() + 1);
    for (int r = 1; r <= static_cast<int>(kLastReason); ++r) {
      if (ReasonName(static_cast<Reason>(r)) == name) reason = static_cast<Reason>(r);
    }
  }
  return Status(code, s.error_message()).WithReason(reason);
}

bool IsRemoteError(const grpc::Status& s) {
  const std::string details = s.error_details();  // a copy: error_details() returns one
  return details.substr(0, kRemoteDetails.size()) == kRemoteDetails &&
         (details.size() == kRemoteDetails.size() || details[kRemoteDetails.size()] == ' ');
}

grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (s.code()) {
    case Code::kCancelled:
      code = grpc::StatusCode::CANCELLED;
      break;
    case Code::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case Code::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case Code::kAlreadyExists:
      code = grpc::StatusCode::ALREADY_EXISTS;
      break;
    case Code::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case Code::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    case Code::kOutOfRange:
      code = grpc::StatusCode::OUT_OF_RANGE;
      break;
    case Code::kUnimplemented:
      code = grpc::StatusCode::UNIMPLEMENTED;
      break;
    case Code::kAborted:
      code = grpc::StatusCode::ABORTED;
      break;
    case Code::kDeadlineExceeded:
      code = grpc::StatusCode::DEADLINE_EXCEEDED;
      break;
    case Code::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case Code::kUnauthenticated:
      code = grpc::StatusCode::UNAUTHENTICATED;
      break;
    case Code::kDataLoss:
      code = grpc::StatusCode::DATA_LOSS;
      break;
    default:
      break;
  }
  // The details say "remote" (the message already names the node and device), then the
  // reason by name when there is one: "remote stale_incarnation".
  std::string details(kRemoteDetails);
  if (s.reason() != Reason::kNone) details += " " + std::string(ReasonName(s.reason()));
  return grpc::Status(code, s.message(), details);
}

void SetCommonArguments(grpc::ChannelArguments* args) {
  args->SetMaxReceiveMessageSize(-1);
  args->SetMaxSendMessageSize(-1);
  // A peer that vanishes without closing its connection (a host gone) is noticed in seconds.
  args->SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args->SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args->SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Keep pinging during a long silent call (a step waiting on a slow task): by default gRPC
  // stops after two pings without data, and a vanished host would then never be noticed.
  args->SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Reconnect quickly once a restarted task is back (the default backoff grows to 2 minutes).
  args->SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args->SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args->SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  SetTransferArguments([args](const char* k, int v) { args->SetInt(k, v); });
}

void SetCommonArguments(grpc::ServerBuilder* builder) {
  SetTransferArguments([builder](const char* k, int v) { builder->AddChannelArgument(k, v); });
  builder->SetMaxReceiveMessageSize(-1);
  builder->SetMaxSendMessageSize(-1);
  // Two servers on one port would split the clients between them: a busy port is an error.
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
}

StatusOr<std::shared_ptr<grpc::Channel>> NewChannel(const std::string& address,
                                                    const ClusterOptions& options, int stream) {
  // One channel per (address, credentials) for the life of the process, as TensorFlow's
  // channel cache. Besides reusing connections, this keeps gRPC 1.51 from tearing its callback
  // completion queue down inside one of that queue's own threads (a channel whose last
  // reference drops in a callback does that, and aborts: grpc/grpc#32584).
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::shared_ptr<grpc::Channel>>();
  const std::string key = fmt::format("{}|{}|{}|{}|{}", address, options.tls_ca_file,
                                      options.tls_cert_file, options.tls_key_file, stream);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache->find(key); it != cache->end()) return it->second;
  grpc::ChannelArguments args;
  SetCommonArguments(&args);
  if (stream > 0) {
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // its own TCP connection
    args.SetInt("pf.stream", stream);
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (UsesTls(options)) {
    PF_RETURN_IF_ERROR(CheckTlsComplete(options));
    grpc::SslCredentialsOptions ssl;
    PF_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(options.tls_ca_file, "CA"));
    PF_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadPem(options.tls_cert_file, "certificate"));
    PF_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPem(options.tls_key_file, "key"));
    creds = grpc::SslCredentials(ssl);
  }
  auto channel = grpc::CreateCustomChannel(address, creds, args);
  (*cache)[key] = channel;
  return channel;
}

StatusOr<std::shared_ptr<grpc::ServerCredentials>> NewServerCredentials(
    const ClusterOptions& options) {
  if (!UsesTls(options)) return grpc::InsecureServerCredentials();
  PF_RETURN_IF_ERROR(CheckTlsComplete(options));
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  PF_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(options.tls_ca_file, "CA"));
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  PF_ASSIGN_OR_RETURN(pair.cert_chain, ReadPem(options.tls_cert_file, "certificate"));
  PF_ASSIGN_OR_RETURN(pair.private_key, ReadPem(options.tls_key_file, "key"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(ssl);
}

void AddToken(grpc::ClientContext* ctx, const ClusterOptions& options) {
  if (!options.token.empty()) ctx->AddMetadata(kTokenMetadataKey, options.token);
}

bool Authorized(grpc::CallbackServerContext* ctx, grpc::ServerUnaryReactor* reactor,
                const std::string& token, std::string_view method) {
  if (token.empty()) return true;
  const auto& md = ctx->client_metadata();
  auto it = md.find(kTokenMetadataKey);
  if (it != md.end() && std::string_view(it->second.data(), it->second.size()) == token)
    return true;
  PF_LOG_WARN("Rejected {} from {}: {} cluster token", method, ctx->peer(),
              it == md.end() ? "no" : "wrong");
  reactor->Finish(
      grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                   "the request does not carry this cluster's token (ClusterOptions::token)"));
  return false;
}

}  // namespace pf
