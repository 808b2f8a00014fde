// One chaos round's bookkeeping around a ChaosCluster: the experiment it runs, status
// polling that feeds the SuccessLedger while faults happen, bounded waits, and the final
// check (stop every process, open the store, CheckChaosInvariants). Every wait is bounded
// in time; polling runs `orch status` about every 150 ms.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/chaos/chaos_cluster.h"
#include "tests/chaos/chaos_schedule.h"
#include "tests/chaos/invariant_checker.h"

namespace orch::testing {

class ChaosRun {
 public:
  ChaosRun(ChaosCluster& cluster, ChaosSchedule& schedule, ExpectedExperiment experiment,
           int delay_ms);

  // `orch submit` of the experiment: a TestEngineSpec, or `spec` when not empty.
  void Submit(const std::string& spec = "");

  // Polls status for `duration`, feeding the ledger.
  void Watch(std::chrono::milliseconds duration);
  // Sleeps `duration` without asking the coordinator (it is down).
  static void Pause(std::chrono::milliseconds duration);
  // Polls until `done(status)` holds, at most `timeout`; false when it never held.
  bool WatchUntil(const std::function<bool(const nlohmann::json&)>& done,
                  std::chrono::milliseconds timeout);
  // A random moment of the experiment: waits until a run is in flight (on `agent`, when
  // not empty), then a random 0..max_ms more. False when the experiment ended first.
  bool WaitForAMomentMidRun(const std::string& agent, int max_ms);
  // Every job succeeded, per status, within `timeout`.
  bool WaitForAllSucceeded(std::chrono::milliseconds timeout);

  // Stops every process and checks the invariants; each problem is a test failure
  // naming the seed. So is a round in which no fault was injected.
  void StopAndCheck();

  // A line for the test log: what happened and when.
  void Note(const std::string& what);
  // The same for a fault about to be injected, counted: a round without any fails.
  void Fault(const std::string& what);
  int faults() const { return faults_; }
  int succeeded() const { return ledger_.last_count(); }
  std::optional<nlohmann::json> last_status() const { return last_status_; }

 private:
  bool Poll();

  ChaosCluster& cluster_;    // borrowed for the run's lifetime
  ChaosSchedule& schedule_;  // borrowed
  ExpectedExperiment experiment_;
  int delay_ms_;
  SuccessLedger ledger_;
  std::optional<nlohmann::json> last_status_;
  std::chrono::steady_clock::time_point start_;
  int faults_ = 0;
};

// Whether `status` lists a job of `experiment` in flight (assigned or running), on
// `agent` when it is not empty.
bool RunInFlight(const nlohmann::json& status, const std::string& agent);
// Whether `status` lists agent `id` as connected.
bool AgentConnected(const nlohmann::json& status, const std::string& id);

}  // namespace orch::testing
