// ORCH_CHECK: assertions for invariants that only a bug can break.
//
// A failed check prints "file:line: check failed: cond: message" to stderr and aborts.
// Expected failures (bad input, I/O) are Status values instead (base/status.h).
#pragma once

#include <sstream>

namespace orch::internal {

// Collects the streamed message and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `ORCH_CHECK(x) << ...` be a void expression in both branches of ?:.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace orch::internal

#define ORCH_CHECK(condition)                 \
  (condition) ? (void)0                       \
              : ::orch::internal::Voidify() & \
                    ::orch::internal::CheckFailure(__FILE__, __LINE__, #condition)
