#include "store/store_check.h"

#include <filesystem>
#include <map>
#include <utility>

#include "store/codec.h"
#include "store/rocksdb_db.h"

namespace orch::store {
namespace {

// The id of an IdPrefix-keyed key (plan_jobs, chunks, digests); empty when malformed.
std::string PrefixId(std::string_view key) {
  if (key.empty() || static_cast<uint8_t>(key[0]) + 1u > key.size()) return "";
  return std::string(key.substr(1, static_cast<uint8_t>(key[0])));
}

// Walks the tables once each, in an order that learns whose each record is before
// the tables that need it (jobs -> plan, runs -> job).
class TableChecker {
 public:
  TableChecker(KvEngine& engine, StoreCheckReport& report) : engine_(engine), report_(report) {}

  void Run() {
    Walk(Table::kPlanJobs, [&](std::string_view key, std::string_view) {
      std::string plan = PrefixId(key);
      if (plan.empty()) return Problem("", Table::kPlanJobs, key, "malformed key");
      plan_of_job_[std::string(JobIdOfPlanJobKey(key, plan))] = plan;
    });
    Walk(Table::kPlans, [&](std::string_view key, std::string_view value) {
      Check(std::string(key), Table::kPlans, key, DecodePlan(Describe(Table::kPlans, key), value));
    });
    Walk(Table::kJobs, [&](std::string_view key, std::string_view value) {
      Result<JobRecord> job = DecodeJob(Describe(Table::kJobs, key), value);
      Check(job.ok() ? job->plan_id : PlanOfJob(key), Table::kJobs, key, job);
    });
    Walk(Table::kRuns, [&](std::string_view key, std::string_view value) {
      Result<RunRecord> run = DecodeRun(Describe(Table::kRuns, key), value);
      std::optional<std::string> job = run.ok() ? run->job_id : PeekRunJobId(value);
      if (job) job_of_run_[std::string(key)] = *job;
      Check(job ? PlanOfJob(*job) : "", Table::kRuns, key, run);
    });
    Walk(Table::kChunks, [&](std::string_view key, std::string_view value) {
      Check(PlanOfRun(PrefixId(key)), Table::kChunks, key,
            DecodeChunkCount(Describe(Table::kChunks, key), value));
    });
    Walk(Table::kDigests, [&](std::string_view key, std::string_view value) {
      if (value.empty()) Problem(PlanOfRun(PrefixId(key)), Table::kDigests, key, "empty digest");
    });
    Walk(Table::kHosts, [&](std::string_view key, std::string_view value) {
      if (value.empty()) Problem("", Table::kHosts, key, "empty fingerprint");
    });
    Walk(Table::kEvents, [&](std::string_view key, std::string_view value) {
      Check("", Table::kEvents, key, DecodeEvent(Describe(Table::kEvents, key), value));
    });
    Walk(Table::kBundles, [&](std::string_view key, std::string_view value) {
      Result<BundleRecord> bundle = DecodeBundle(Describe(Table::kBundles, key), value);
      Check(bundle.ok() ? bundle->plan_id : "", Table::kBundles, key, bundle);
    });
    Walk(Table::kSigners, [&](std::string_view key, std::string_view value) {
      Check("", Table::kSigners, key, DecodeSigner(Describe(Table::kSigners, key), value));
    });
  }

 private:
  static std::string Describe(Table table, std::string_view key) { return DescribeKey(table, key); }

  template <typename Visit>
  void Walk(Table table, Visit visit) {
    Status scan = engine_.Scan(table, "", "", [&](std::string_view key, std::string_view value) {
      ++report_.records;
      visit(key, value);
      return true;
    });
    if (!scan.ok()) report_.problems.push_back({"", std::string(TableName(table)), scan.message()});
  }

  template <typename Decoded>
  void Check(const std::string& experiment, Table table, std::string_view key,
             const Result<Decoded>& decoded) {
    if (!decoded.ok()) Problem(experiment, table, key, decoded.status().message());
  }

  void Problem(const std::string& experiment, Table table, std::string_view key,
               const std::string& what) {
    report_.problems.push_back({experiment, Describe(table, key), what});
  }

  std::string PlanOfJob(std::string_view job) const {
    auto it = plan_of_job_.find(std::string(job));
    return it == plan_of_job_.end() ? "" : it->second;
  }
  std::string PlanOfRun(const std::string& run) const {
    auto it = job_of_run_.find(run);
    return it == job_of_run_.end() ? "" : PlanOfJob(it->second);
  }

  KvEngine& engine_;
  StoreCheckReport& report_;
  std::map<std::string, std::string> plan_of_job_;  // from the plan_jobs index
  std::map<std::string, std::string> job_of_run_;
};

}  // namespace

Result<StoreCheckReport> CheckRocksDbStore(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return NotFound("no store at " + path);
  StoreCheckReport report;
  report.path = path;
  Result<std::unique_ptr<RocksDb>> db = OpenDb(path, DbOpenSettings{.role = DbRole::kReadOnly});
  if (!db.ok()) {
    if (db.status().code() == StatusCode::kNotFound) return db.status();
    report.problems.push_back({"", "open", db.status().message()});
    return report;
  }
  Status checksums = FromRocks((*db)->db->VerifyChecksum());
  if (!checksums.ok()) report.problems.push_back({"", "checksums", checksums.message()});
  std::unique_ptr<KvEngine> engine = MakeReadOnlyRocksDbEngine(std::move(db).value());
  TableChecker(*engine, report).Run();
  return report;
}

}  // namespace orch::store
