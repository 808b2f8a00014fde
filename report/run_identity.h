// Who and what produced a run, as the quorum, the conflicts and `orch report --by-host`
// name it: its contributor, agent, host fingerprint id and fingerprint class
// (fingerprint/fingerprint_class.h), and the identity of its digest stream.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "base/status.h"
#include "fingerprint/fingerprint.h"
#include "report/run_source.h"
#include "store/records.h"

namespace orch::report {

struct RunIdentity {
  std::string run_id = {};
  std::string job_id = {};
  std::string agent_id = {};
  std::string contributor = {};  // the bundle's key name, or "lab" (report/job_runs.h)
  std::string host = {};         // host fingerprint id; empty when none was recorded
  // Empty when the run's host fingerprint is not recorded or not readable: without it two
  // runs cannot be shown to have run on identical machines.
  std::string fingerprint_class = {};
};

// A digest stream's identity: the hash report/pair_compare.h gives each side (every
// position's raw-row hash and tokens) and its length. Equal identities: bit-identical.
struct StreamIdentity {
  std::uint64_t hash = 0;
  std::uint64_t length = 0;
  friend auto operator<=>(const StreamIdentity&, const StreamIdentity&) = default;
};

// Computes identities, reading each fingerprint once. Borrows `source` for its lifetime.
class RunIdentities {
 public:
  explicit RunIdentities(RunSource& source) : source_(source) {}

  RunIdentity Of(const store::RunRecord& run);

 private:
  // The parsed fingerprint; null when the id is empty, not stored or does not parse.
  const fingerprint::Fingerprint* Load(const std::string& id);

  RunSource& source_;
  std::map<std::string, std::optional<fingerprint::Fingerprint>> fingerprints_;
};

}  // namespace orch::report
