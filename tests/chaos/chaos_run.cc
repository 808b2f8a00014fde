#include "tests/chaos/chaos_run.h"

#include <iostream>
#include <thread>

#include <gtest/gtest.h>

namespace orch::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kPollInterval = 150ms;

}  // namespace

bool RunInFlight(const nlohmann::json& status, const std::string& agent) {
  for (const nlohmann::json& job : status.value("jobs", nlohmann::json::array())) {
    std::string state = job.value("state", "");
    if (state != "running" && state != "assigned") continue;
    if (agent.empty() || job.value("agent", "") == agent) return true;
  }
  return false;
}

bool AgentConnected(const nlohmann::json& status, const std::string& id) {
  for (const nlohmann::json& agent : status.value("agents", nlohmann::json::array())) {
    if (agent.value("id", "") == id) return agent.value("state", "") == "up";
  }
  return false;
}

ChaosRun::ChaosRun(ChaosCluster& cluster, ChaosSchedule& schedule, ExpectedExperiment experiment,
                   int delay_ms)
    : cluster_(cluster),
      schedule_(schedule),
      experiment_(std::move(experiment)),
      delay_ms_(delay_ms),
      ledger_(experiment_.experiment),
      start_(Clock::now()) {}

void ChaosRun::Submit(const std::string& spec) {
  if (!spec.empty()) return cluster_.SubmitSpec(experiment_.experiment, spec);
  cluster_.Submit(experiment_.experiment, experiment_.jobs, experiment_.positions, delay_ms_);
}

bool ChaosRun::Poll() {
  std::optional<nlohmann::json> status = cluster_.Status();
  if (!status) return false;
  ledger_.Observe(*status);
  last_status_ = std::move(status);
  return true;
}

void ChaosRun::Watch(std::chrono::milliseconds duration) {
  auto deadline = Clock::now() + duration;
  while (Clock::now() < deadline) {
    auto next = Clock::now() + kPollInterval;
    Poll();
    std::this_thread::sleep_until(std::min(next, deadline));
  }
}

void ChaosRun::Pause(std::chrono::milliseconds duration) { std::this_thread::sleep_for(duration); }

bool ChaosRun::WatchUntil(const std::function<bool(const nlohmann::json&)>& done,
                          std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    auto next = Clock::now() + kPollInterval;
    if (Poll() && done(*last_status_)) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_until(next);
  }
}

bool ChaosRun::WaitForAMomentMidRun(const std::string& agent, int max_ms) {
  bool done = false;
  bool in_flight = WatchUntil(
      [&](const nlohmann::json& status) {
        done = ledger_.total() > 0 && ledger_.last_count() == ledger_.total();
        return done || RunInFlight(status, agent);
      },
      30s);
  if (!in_flight || done) return false;
  Watch(schedule_.Between(0ms, std::chrono::milliseconds(max_ms)));
  return ledger_.last_count() != ledger_.total();
}

bool ChaosRun::WaitForAllSucceeded(std::chrono::milliseconds timeout) {
  return WatchUntil(
      [&](const nlohmann::json&) {
        return ledger_.total() == experiment_.jobs && ledger_.last_count() == experiment_.jobs;
      },
      timeout);
}

void ChaosRun::Note(const std::string& what) {
  auto at = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_);
  std::cout << "[chaos] " << experiment_.experiment << " +" << at.count() << " ms (succeeded "
            << ledger_.last_count() << "/" << experiment_.jobs << "): " << what << std::endl;
}

void ChaosRun::Fault(const std::string& what) {
  ++faults_;
  Note(what);
}

void ChaosRun::StopAndCheck() {
  EXPECT_GT(faults_, 0) << schedule_.Repeat() << ": the experiment ended before any fault";
  std::string logs = cluster_.Logs();
  cluster_.StopAll();
  std::string notes;
  std::vector<std::string> problems =
      CheckChaosInvariants(cluster_.data_dir().string(), experiment_, ledger_, &notes);
  Note("store: " + notes);
  for (const std::string& problem : problems)
    ADD_FAILURE() << schedule_.Repeat() << ": " << problem;
  if (!problems.empty()) ADD_FAILURE() << schedule_.Repeat() << ": logs\n" << logs;
}

}  // namespace orch::testing
