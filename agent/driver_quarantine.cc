#include "agent/driver_quarantine.h"

#include <array>
#include <string_view>

namespace orch::agent {
namespace {

// Typed errors that depend only on the job and its model
// (docs/driver-protocol.md; the coordinator's list in
// coordinator/failure_kind.cc).
constexpr std::array<std::string_view, 4> kJobErrorCodes = {"invalid_job", "invalid_combination",
                                                            "model_missing", "sha256_mismatch"};

bool IsJobError(const std::string& code) {
  for (std::string_view job_code : kJobErrorCodes) {
    if (code == job_code) return true;
  }
  return false;
}

// The first line of `error`, at most 300 characters.
std::string Headline(const std::string& error) {
  std::string line = error.substr(0, error.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

}  // namespace

bool IsStartupFault(const RunEnding& ending, std::chrono::milliseconds fast) {
  return ending.status == protocol::RunStatus::kFailed && ending.records == 0 &&
         ending.ran < fast && !IsJobError(ending.error_code);
}

bool DriverQuarantine::Observe(const std::string& driver, const RunEnding& ending) {
  if (quarantined(driver) || ending.status == protocol::RunStatus::kCancelled) {
    return false;
  }
  if (!IsStartupFault(ending, options_.fast)) {
    faults_[driver] = 0;
    return false;
  }
  if (++faults_[driver] < options_.faults_in_a_row) return false;
  reasons_[driver] = std::to_string(faults_[driver]) + " runs in a row failed within " +
                     std::to_string(options_.fast.count()) +
                     " ms of launch without a record; the last: " + Headline(ending.error);
  return true;
}

std::string DriverQuarantine::reason(const std::string& driver) const {
  auto it = reasons_.find(driver);
  return it == reasons_.end() ? "" : it->second;
}

}  // namespace orch::agent
