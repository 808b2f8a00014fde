// Status and Result<T>: how expected failures travel as values.
//
// A Status is a code plus a human message. Each layer that passes an error upward
// prefixes what it was doing ("load job exp-42/7: rocksdb: IO error ..."), so the final
// message reads as a path from the user's action to the cause. Bugs are not Statuses:
// broken invariants abort through ORCH_CHECK (base/check.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "base/check.h"

namespace orch {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller's input is wrong (spec, flag, message)
  kNotFound,         // a named thing does not exist
  kAlreadyExists,
  kFailedPrecondition,
  kUnavailable,  // a peer or resource is temporarily unreachable
  kDataLoss,     // stored or received bytes are corrupt
  kIoError,      // the operating system refused (disk, file, pipe)
  kInternal,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns this status with "context: " in front of the message. OK stays OK.
  Status WithContext(std::string_view context) const;

  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  friend bool operator==(const Status&, const Status&) = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status NotFound(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status IoError(std::string message) {
  return Status(StatusCode::kIoError, std::move(message));
}
inline Status Internal(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

// Either a value or a non-OK Status. Accessing the value of an error is a bug and aborts.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    ORCH_CHECK(!std::get<Status>(state_).ok()) << "Result built from an OK Status";
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }

  T& value() & { return Checked(); }
  const T& value() const& { return const_cast<Result*>(this)->Checked(); }
  T&& value() && { return std::move(Checked()); }
  T* operator->() { return &Checked(); }
  const T* operator->() const { return &const_cast<Result*>(this)->Checked(); }
  T& operator*() & { return Checked(); }
  const T& operator*() const& { return const_cast<Result*>(this)->Checked(); }

 private:
  T& Checked() {
    ORCH_CHECK(ok()) << "value() of an error Result: " << std::get<Status>(state_).ToString();
    return std::get<T>(state_);
  }

  std::variant<T, Status> state_;
};

}  // namespace orch

#define ORCH_STATUS_CONCAT_INNER(a, b) a##b
#define ORCH_STATUS_CONCAT(a, b) ORCH_STATUS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` is not OK.
#define ORCH_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::orch::Status orch_status_ = (expr);        \
    if (!orch_status_.ok()) return orch_status_; \
  } while (false)

// `ORCH_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result or returns its error.
#define ORCH_ASSIGN_OR_RETURN(lhs, expr) \
  ORCH_ASSIGN_OR_RETURN_IMPL(ORCH_STATUS_CONCAT(orch_result_, __LINE__), lhs, expr)
#define ORCH_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
