// Status and StatusOr: how internal code reports errors; pf::Error is what the public API throws.
//
//   pf::Status s = pf::errors::InvalidArgument("bad shape ", shape);
//   if (!s.ok()) return s;
//   pf::StatusOr<int> v = Parse(text);
//   PF_ASSIGN_OR_RETURN(int n, Parse(text));
//   pf::ThrowIfError(s);   // at the API boundary: throws pf::Error
#pragma once

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace pf {

enum class Code {
  kOk = 0,
  kCancelled,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kResourceExhausted,
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kAborted,
  kDeadlineExceeded,
  kUnavailable,      // a task or service cannot be reached (retrying may help)
  kUnauthenticated,  // a request without valid credentials (cluster token, TLS)
  kDataLoss,         // unrecoverable data corruption (a bad CRC in a record file)
};

std::string_view CodeName(Code code);

// Why an error happened, where a caller recovers differently for it: carried with the Status
// (and across the wire, distributed/rpc_util.h), so that no caller matches message text.
enum class Reason : uint8_t {
  kNone = 0,
  kGraphNotRegistered,     // a task does not know the graph handle (it restarted since)
  kStaleIncarnation,       // a tensor names a task's earlier incarnation (it restarted since)
  kTaskRestarted,          // a task was found restarted (its state is gone)
  kUninitializedVariable,  // a variable was read before it was initialised or restored
};
inline constexpr Reason kLastReason = Reason::kUninitializedVariable;
std::string_view ReasonName(Reason reason);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message);
  static Status OK() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return ok() ? Code::kOk : state_->code; }
  Reason reason() const { return ok() ? Reason::kNone : state_->reason; }
  // A copy carrying `reason` (an OK status stays OK).
  Status WithReason(Reason reason) const;
  const std::string& message() const;
  // "InvalidArgument: message", or "OK".
  std::string ToString() const;
  // Returns a copy with `suffix` appended to the message (used to attach node and device); the
  // code and reason stay.
  Status WithSuffix(std::string_view suffix) const;

  bool operator==(const Status& o) const { return code() == o.code() && message() == o.message(); }

 private:
  struct State {
    Code code;
    std::string message;
    Reason reason = Reason::kNone;
  };
  std::shared_ptr<const State> state_;  // null when OK: keeps the OK path allocation-free
};

// Thrown by the public API; carries the Status code.
class Error : public std::runtime_error {
 public:
  explicit Error(const Status& s) : std::runtime_error(s.ToString()), status_(s) {}
  Code code() const { return status_.code(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

inline void ThrowIfError(const Status& s) {
  if (!s.ok()) throw Error(s);
}

// Throws s (not OK) as pf::Error: the builders' failure path.
[[noreturn]] inline void ThrowError(const Status& s) { throw Error(s); }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit like absl::StatusOr
  StatusOr(Status status) : status_(std::move(status)) {
    if (status_.ok()) status_ = Status(Code::kInternal, "StatusOr built from an OK Status");
  }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // The value; throws pf::Error with the status when there is none (as absl's value() throws).
  // operator* and -> do not check: use them after ok().
  T& value() & {
    ThrowIfError(status_);
    return *value_;
  }
  const T& value() const& {
    ThrowIfError(status_);
    return *value_;
  }
  T&& value() && {
    ThrowIfError(status_);
    return std::move(*value_);
  }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  // Public-API helper: the value, or throws pf::Error.
  T ValueOrThrow() && {
    ThrowIfError(status_);
    return std::move(*value_);
  }

 private:
  Status status_;
  std::optional<T> value_;
};

// What recovery asks: did a task of the cluster restart (its graphs or its incarnation are
// gone: register again, wait for it)? Was a variable read before anyone initialised it?
inline bool IsTaskRestart(const Status& s) {
  return s.reason() == Reason::kGraphNotRegistered || s.reason() == Reason::kStaleIncarnation ||
         s.reason() == Reason::kTaskRestarted;
}
inline bool IsUninitializedVariable(const Status& s) {
  return s.reason() == Reason::kUninitializedVariable;
}

namespace errors {
#define PF_DEFINE_ERROR(Name)                                                       \
  template <typename... Args>                                                       \
  Status Name(Args&&... args) {                                                     \
    std::string msg;                                                                \
    (fmt::format_to(std::back_inserter(msg), "{}", std::forward<Args>(args)), ...); \
    return Status(Code::k##Name, std::move(msg));                                   \
  }
PF_DEFINE_ERROR(Cancelled)
PF_DEFINE_ERROR(InvalidArgument)
PF_DEFINE_ERROR(NotFound)
PF_DEFINE_ERROR(AlreadyExists)
PF_DEFINE_ERROR(FailedPrecondition)
PF_DEFINE_ERROR(ResourceExhausted)
PF_DEFINE_ERROR(OutOfRange)
PF_DEFINE_ERROR(Unimplemented)
PF_DEFINE_ERROR(Internal)
PF_DEFINE_ERROR(Aborted)
PF_DEFINE_ERROR(DeadlineExceeded)
PF_DEFINE_ERROR(Unavailable)
PF_DEFINE_ERROR(DataLoss)
PF_DEFINE_ERROR(Unauthenticated)
#undef PF_DEFINE_ERROR
// TensorFlow's text for a variable read before initialisation, with its reason.
inline Status UninitializedValue(std::string_view variable) {
  return FailedPrecondition("Attempting to use uninitialized value ", variable)
      .WithReason(Reason::kUninitializedVariable);
}
}  // namespace errors

}  // namespace pf

#define PF_CONCAT_INNER(a, b) a##b
#define PF_CONCAT(a, b) PF_CONCAT_INNER(a, b)

#define PF_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::pf::Status pf_status_ = (expr);        \
    if (!pf_status_.ok()) return pf_status_; \
  } while (0)

#define PF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

#define PF_ASSIGN_OR_RETURN(lhs, expr) \
  PF_ASSIGN_OR_RETURN_IMPL(PF_CONCAT(pf_statusor_, __LINE__), lhs, expr)
