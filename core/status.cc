#include "placeflow/core/status.h"

namespace pf {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kCancelled:
      return "Cancelled";
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kNotFound:
      return "NotFound";
    case Code::kAlreadyExists:
      return "AlreadyExists";
    case Code::kFailedPrecondition:
      return "FailedPrecondition";
    case Code::kResourceExhausted:
      return "ResourceExhausted";
    case Code::kOutOfRange:
      return "OutOfRange";
    case Code::kUnimplemented:
      return "Unimplemented";
    case Code::kInternal:
      return "Internal";
    case Code::kAborted:
      return "Aborted";
    case Code::kDeadlineExceeded:
      return "DeadlineExceeded";
    case Code::kUnavailable:
      return "Unavailable";
    case Code::kUnauthenticated:
      return "Unauthenticated";
    case Code::kDataLoss:
      return "DataLoss";
  }
  return "Unknown";
}

std::string_view ReasonName(Reason reason) {
  switch (reason) {
    case Reason::kNone:
      return "none";
    case Reason::kGraphNotRegistered:
      return "graph_not_registered";
    case Reason::kStaleIncarnation:
      return "stale_incarnation";
    case Reason::kTaskRestarted:
      return "task_restarted";
    case Reason::kUninitializedVariable:
      return "uninitialized_variable";
  }
  return "unknown";
}

Status::Status(Code code, std::string message) {
  if (code != Code::kOk) state_ = std::make_shared<const State>(State{code, std::move(message)});
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return ok() ? kEmpty : state_->message;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return fmt::format("{}: {}", CodeName(code()), message());
}

Status Status::WithReason(Reason reason) const {
  if (ok()) return *this;
  Status out;
  out.state_ = std::make_shared<const State>(State{code(), message(), reason});
  return out;
}

Status Status::WithSuffix(std::string_view suffix) const {
  if (ok()) return *this;
  return Status(code(), message() + std::string(suffix)).WithReason(reason());
}

}  // namespace pf
