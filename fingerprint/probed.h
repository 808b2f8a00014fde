// Probed<T>: a fact read from the host, or the reason it could not be read.
//
// Every field of a fingerprint is a Probed value so that a missing /proc file, an absent
// tool or a permission error leaves exactly that field unknown (with a human reason such
// as "/proc/cpuinfo: Permission denied") instead of failing the whole probe. Reasons name
// paths relative to the probed root so that the same facts give the same fingerprint.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "base/check.h"

namespace orch::fingerprint {

template <typename T>
class Probed final {
 public:
  // A default-built fact is unknown with reason "not probed".
  Probed() = default;

  static Probed Known(T value) {
    Probed p;
    p.value_ = std::move(value);
    p.reason_.clear();
    return p;
  }
  // `reason` must be non-empty: it is what a user reads instead of the value.
  static Probed Unknown(std::string reason) {
    ORCH_CHECK(!reason.empty()) << "unknown fact without a reason";
    Probed p;
    p.reason_ = std::move(reason);
    return p;
  }

  bool known() const { return value_.has_value(); }
  // Precondition: known().
  const T& value() const {
    ORCH_CHECK(known()) << "value() of an unknown fact: " << reason_;
    return *value_;
  }
  // Empty when known.
  const std::string& reason() const { return reason_; }

  friend bool operator==(const Probed&, const Probed&) = default;

 private:
  std::optional<T> value_;
  std::string reason_ = "not probed";
};

}  // namespace orch::fingerprint
