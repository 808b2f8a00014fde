// What must hold after a chaos scenario, checked from the outside: what `orch status`
// said while the faults happened (SuccessLedger), and the store the stopped coordinator
// left behind (CheckChaosInvariants). Problems are returned as sentences, one per broken
// invariant, so a failure lists all of them at once; an empty list means every
// invariant holds.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace orch::testing {

// Remembers every job `orch status --json --jobs` reported as succeeded: acknowledged
// results that must never be lost. Notes at once when a later reply contradicts an
// earlier one (a succeeded job reported in another state, the succeeded count falling).
class SuccessLedger {
 public:
  explicit SuccessLedger(std::string experiment) : experiment_(std::move(experiment)) {}

  // One status reply (schema orch.status/1 with jobs).
  void Observe(const nlohmann::json& status);

  const std::set<std::string>& succeeded() const { return succeeded_; }
  int last_count() const { return last_count_; }  // succeeded, per the last reply; -1 before
  int total() const { return total_; }            // jobs, per the last reply; -1 before
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::string experiment_;
  std::set<std::string> succeeded_;
  int max_count_ = -1;
  int last_count_ = -1;
  int total_ = -1;
  std::vector<std::string> problems_;
};

struct ExpectedExperiment {
  std::string experiment;
  int jobs = 0;
  int positions = 0;     // every succeeded run holds positions 0..positions-1, once each
  int max_attempts = 0;  // > 0: no job was assigned more often (0: any number)
};

// Opens the store in `data_dir` (its coordinator stopped) and checks:
// - the store itself is sound (orch store check: checksums, every record decodes);
// - the experiment has `jobs` jobs, each succeeded, its current run succeeded and
//   complete (RunFinished and every announced chunk stored) with exactly the positions
//   0..N-1 once each;
// - each job succeeded exactly once: one job.succeeded event, naming its current run,
//   and no assignment after it;
// - with max_attempts, no job was assigned more often;
// - every job in `ledger` (acknowledged as succeeded) is succeeded with such a run, and
//   the ledger saw no contradiction.
// Stale runs (a run given up whose late result was stored under its own id) are allowed;
// `notes` receives one line about them when given.
std::vector<std::string> CheckChaosInvariants(const std::string& data_dir,
                                              const ExpectedExperiment& expected,
                                              const SuccessLedger& ledger,
                                              std::string* notes = nullptr);

}  // namespace orch::testing
