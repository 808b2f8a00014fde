// DriverQuarantine: which drivers an agent stops offering because they fail
// every run at start-up (docs/agent.md, "Quarantine"). Pure: it is told how
// each run ended and says whether that run put its driver in quarantine.
//
// A run is a start-up fault when it failed (status failed: not succeeded,
// timed out or cancelled), produced no record, ended within `fast` of its
// launch, and the driver sent no deterministic typed error (invalid_job,
// invalid_combination, model_missing, sha256_mismatch: those are errors of the
// job, not of the driver; coordinator/failure_kind.h has the same list). A
// driver whose last `faults_in_a_row` runs were all start-up faults is
// quarantined for the life of the agent. A run that is not a fault resets the
// count, except a cancelled one, which says nothing about the driver.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "protocol/messages.h"

namespace orch::agent {

struct RunEnding {
  protocol::RunStatus status = protocol::RunStatus::kFailed;
  std::uint64_t records = 0;
  std::string error_code = {};       // the driver's typed error; empty without one
  std::chrono::milliseconds ran{0};  // from launch to exit
  std::string error = {};            // RunFinished.error, for the reason
};

struct DriverQuarantineOptions {
  int faults_in_a_row = 3;
  std::chrono::milliseconds fast{5000};
};

// Whether `ending` is a start-up fault of its driver (see above).
bool IsStartupFault(const RunEnding& ending, std::chrono::milliseconds fast);

class DriverQuarantine final {
 public:
  explicit DriverQuarantine(DriverQuarantineOptions options) : options_(options) {}

  // Notes how a run of `driver` ended. True when this run quarantined it (once
  // per driver; later runs of a quarantined driver change nothing).
  bool Observe(const std::string& driver, const RunEnding& ending);

  bool quarantined(const std::string& driver) const { return reasons_.contains(driver); }
  // Why `driver` is quarantined ("3 runs in a row failed within 5000 ms of
  // launch without a record; the last: ..."); empty when it is not.
  std::string reason(const std::string& driver) const;

 private:
  DriverQuarantineOptions options_;
  std::map<std::string, int> faults_;  // consecutive start-up faults per driver
  std::map<std::string, std::string> reasons_;
};

}  // namespace orch::agent
