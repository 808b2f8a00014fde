// RunTable: every run (one attempt of a job on one agent) and the leases of the
// runs in flight.
//
// A run in flight (assigned or running) holds a lease that expires at an
// absolute time on the coordinator's clock; heartbeats that list the run renew
// it. Runs that ended (finished, lost, cancelled) stay known so that late
// results are recognised and stored under their own id. Pure: time is passed
// in.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coordinator/options.h"
#include "store/records.h"

namespace orch::coordinator {

struct RunEntry {
  std::string id;
  std::string job_id;
  std::string agent_id;
  std::string host_fingerprint_id;  // the fingerprint the agent registered with
  Millis lease_expiry{0};
  store::RunState state = store::RunState::kAssigned;
  Millis assigned_at{0};
  Millis ended_at{0};          // when it left flight; 0 while in flight
  bool refused = false;        // its agent refused it before it started
  bool finish_stored = false;  // its RunFinished is stored; chunks may be missing

  bool InFlight() const {
    return state == store::RunState::kAssigned || state == store::RunState::kRunning;
  }
  store::RunRecord ToRecord() const;
};

class RunTable final {
 public:
  // Adds a run; an in-flight one holds its lease from now on.
  void Add(RunEntry run);
  RunEntry* Find(std::string_view id);
  const RunEntry* Find(std::string_view id) const;

  // Sets the run's lease to expire at `expiry`. Precondition: the run is in
  // flight.
  void Renew(RunEntry& run, Millis expiry);
  // Moves the run out of flight (its lease is released) into `state`, ended at `at`
  // (when it was in flight).
  void End(RunEntry& run, store::RunState state, Millis at);
  void Start(RunEntry& run) { run.state = store::RunState::kRunning; }

  // Runs in flight whose lease expired at or before `now`, earliest first.
  std::vector<std::string> Expired(Millis now) const;
  std::optional<Millis> NextExpiry() const;

  // Runs in flight on `agent`, in id order.
  std::vector<std::string> InFlightOn(std::string_view agent) const;
  std::int32_t CountOn(std::string_view agent) const;

  std::size_t size() const { return runs_.size(); }

 private:
  std::unordered_map<std::string, RunEntry> runs_;
  std::set<std::pair<Millis, std::string>> leases_;                     // in-flight runs by expiry
  std::map<std::string, std::set<std::string>, std::less<>> by_agent_;  // in flight
};

}  // namespace orch::coordinator
