#include "tests/chaos/invariant_checker.h"

#include <filesystem>
#include <map>
#include <memory>

#include "store/rocksdb_store.h"
#include "store/store_check.h"

namespace orch::testing {
namespace {

using Problems = std::vector<std::string>;

// What the event log says about one job.
struct JobHistory {
  std::vector<std::string> succeeded_runs;  // job.succeeded details, in order
  int assigned_after_success = 0;
};

void CheckStoreIsSound(const std::string& path, Problems& problems) {
  Result<store::StoreCheckReport> report = store::CheckRocksDbStore(path);
  if (!report.ok()) {
    problems.push_back("store check: " + report.status().ToString());
    return;
  }
  for (const store::StoreProblem& p : report->problems) {
    problems.push_back("store check: " + p.where + ": " + p.what);
  }
}

std::map<std::string, JobHistory> ReadHistories(store::Store& db, Problems& problems) {
  std::map<std::string, JobHistory> histories;
  Status scanned = db.ScanEvents(1, [&](const store::EventRecord& event) {
    JobHistory& h = histories[event.subject];
    if (event.kind == "job.succeeded") h.succeeded_runs.push_back(event.detail);
    if (event.kind == "job.assigned" && !h.succeeded_runs.empty()) ++h.assigned_after_success;
    return true;
  });
  if (!scanned.ok()) problems.push_back("scan events: " + scanned.ToString());
  return histories;
}

// Positions 0..positions-1, each exactly once, in the run's digests.
void CheckPositions(store::Store& db, const std::string& job, const std::string& run, int positions,
                    Problems& problems) {
  std::uint64_t next = 0;
  bool ordered = true;
  Status scanned = db.ScanDigests(run, 0, [&](std::uint64_t position, std::string_view bytes) {
    if (position != next || bytes.empty()) ordered = false;
    ++next;
    return true;
  });
  if (!scanned.ok()) problems.push_back("job " + job + ": scan digests: " + scanned.ToString());
  if (!ordered || next != static_cast<std::uint64_t>(positions)) {
    problems.push_back("job " + job + ": run " + run + " holds " + std::to_string(next) +
                       " digests" + (ordered ? "" : " with gaps, repeats or empty ones") +
                       ", expected positions 0.." + std::to_string(positions - 1) + " once each");
  }
}

void CheckJob(store::Store& db, const store::JobRecord& job, const JobHistory& history,
              bool acknowledged, const ExpectedExperiment& expected, Problems& problems) {
  const std::string what = (acknowledged ? "job " + job.id + " (orch status counted it succeeded): "
                                         : "job " + job.id + ": ");
  if (expected.max_attempts > 0 && job.attempts > expected.max_attempts) {
    problems.push_back(what + "was assigned " + std::to_string(job.attempts) +
                       " times, expected at most " + std::to_string(expected.max_attempts));
  }
  if (job.state != store::JobState::kSucceeded) {
    problems.push_back(what + "is " + std::string(store::JobStateName(job.state)) +
                       ", expected succeeded (attempts " + std::to_string(job.attempts) +
                       ", last error: " + job.last_error + ")");
    return;
  }
  Result<store::RunRecord> run = db.GetRun(job.current_run_id);
  if (!run.ok()) {
    problems.push_back(what + "current run: " + run.status().ToString());
    return;
  }
  if (run->job_id != job.id || run->state != store::RunState::kSucceeded || !run->Complete()) {
    problems.push_back(what + "current run " + run->id + " is " +
                       std::string(store::RunStateName(run->state)) + ", finished " +
                       std::to_string(run->finished) + ", chunks " +
                       std::to_string(run->chunks_received) + "/" +
                       std::to_string(run->chunks_expected) + ", expected succeeded and complete");
  }
  CheckPositions(db, job.id, run->id, expected.positions, problems);
  if (history.succeeded_runs != std::vector<std::string>{job.current_run_id}) {
    std::string runs;
    for (const std::string& r : history.succeeded_runs) runs += " " + r;
    problems.push_back(what + "job.succeeded events for runs [" + runs + " ], expected exactly [ " +
                       job.current_run_id + " ]");
  }
  if (history.assigned_after_success > 0) {
    problems.push_back(what + "assigned " + std::to_string(history.assigned_after_success) +
                       " times after it succeeded");
  }
}

std::string StaleRunNote(store::Store& db, const std::vector<store::JobRecord>& jobs) {
  std::set<std::string, std::less<>> ids;
  std::map<std::string, std::string> current;
  for (const store::JobRecord& job : jobs) {
    ids.insert(job.id);
    current[job.id] = job.current_run_id;
  }
  Result<std::vector<store::RunRecord>> runs = db.ListRunsOfJobs(ids);
  if (!runs.ok()) return "list runs: " + runs.status().ToString();
  int stale_complete = 0, other = 0;
  for (const store::RunRecord& run : *runs) {
    if (run.id == current[run.job_id]) continue;
    ++(run.Complete() && run.state == store::RunState::kSucceeded ? stale_complete : other);
  }
  return std::to_string(runs->size()) + " runs for " + std::to_string(jobs.size()) +
         " jobs; not counted: " + std::to_string(stale_complete) + " complete late results, " +
         std::to_string(other) + " failed, lost or cancelled";
}

}  // namespace

void SuccessLedger::Observe(const nlohmann::json& status) {
  for (const nlohmann::json& e : status.value("experiments", nlohmann::json::array())) {
    if (e.value("experiment", "") != experiment_) continue;
    last_count_ = e.value("succeeded", -1);
    total_ = e.value("total", -1);
    if (last_count_ < max_count_) {
      problems_.push_back("orch status counted " + std::to_string(last_count_) +
                          " succeeded after counting " + std::to_string(max_count_));
    }
    max_count_ = std::max(max_count_, last_count_);
  }
  for (const nlohmann::json& job : status.value("jobs", nlohmann::json::array())) {
    if (job.value("experiment", "") != experiment_) continue;
    std::string id = job.value("id", "");
    std::string state = job.value("state", "");
    if (state == "succeeded") {
      succeeded_.insert(id);
    } else if (succeeded_.contains(id)) {
      problems_.push_back("orch status reported job " + id + " as " + state +
                          " after reporting it succeeded");
    }
  }
}

std::vector<std::string> CheckChaosInvariants(const std::string& data_dir,
                                              const ExpectedExperiment& expected,
                                              const SuccessLedger& ledger, std::string* notes) {
  Problems problems = ledger.problems();
  const std::string path = store::RocksDbPathInDataDir(data_dir);
  CheckStoreIsSound(path, problems);
  const std::string scratch = data_dir + "-check-scratch";
  Result<std::unique_ptr<store::Store>> opened = store::OpenRocksDbStoreForReading(path, scratch);
  if (!opened.ok()) {
    problems.push_back("open store: " + opened.status().ToString());
    return problems;
  }
  store::Store& db = **opened;
  std::map<std::string, JobHistory> histories = ReadHistories(db, problems);
  Result<std::vector<store::JobRecord>> jobs = db.ListJobs(expected.experiment);
  if (!jobs.ok()) {
    problems.push_back("list jobs: " + jobs.status().ToString());
    return problems;
  }
  if (jobs->size() != static_cast<std::size_t>(expected.jobs)) {
    problems.push_back("the store holds " + std::to_string(jobs->size()) + " jobs of " +
                       expected.experiment + ", expected " + std::to_string(expected.jobs));
  }
  std::set<std::string> stored;
  for (const store::JobRecord& job : *jobs) {
    stored.insert(job.id);
    CheckJob(db, job, histories[job.id], ledger.succeeded().contains(job.id), expected, problems);
  }
  for (const std::string& id : ledger.succeeded()) {
    if (!stored.contains(id)) problems.push_back("acknowledged job " + id + " is not stored");
  }
  if (notes != nullptr) *notes = StaleRunNote(db, *jobs);
  opened->reset();
  std::error_code ec;
  std::filesystem::remove_all(scratch, ec);
  return problems;
}

}  // namespace orch::testing
