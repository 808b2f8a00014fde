#include "store/store_check.h"

#include <filesystem>
#include <utility>

#include "store/codec.h"
#include "store/record_owners.h"
#include "store/rocksdb_db.h"

namespace orch::store {
namespace {

// Walks the tables once each, in an order that learns whose each record is before
// the tables that need it (jobs -> plan, runs -> job).
class TableChecker {
 public:
  TableChecker(KvEngine& engine, StoreCheckReport& report) : engine_(engine), report_(report) {}

  void Run() {
    Walk(Table::kPlanJobs, [&](std::string_view key, std::string_view) {
      if (!owners_.NotePlanJob(key)) Problem("", Table::kPlanJobs, key, "malformed key");
    });
    Walk(Table::kPlans, [&](std::string_view key, std::string_view value) {
      Check(std::string(key), Table::kPlans, key, DecodePlan(Describe(Table::kPlans, key), value));
    });
    Walk(Table::kJobs, [&](std::string_view key, std::string_view value) {
      Result<JobRecord> job = DecodeJob(Describe(Table::kJobs, key), value);
      Check(job.ok() ? job->experiment : owners_.ExperimentOfJob(key), Table::kJobs, key, job);
    });
    Walk(Table::kRuns, [&](std::string_view key, std::string_view value) {
      Result<RunRecord> run = DecodeRun(Describe(Table::kRuns, key), value);
      std::string job = owners_.NoteRun(key, value);
      Check(owners_.ExperimentOfJob(job), Table::kRuns, key, run);
    });
    Walk(Table::kChunks, [&](std::string_view key, std::string_view value) {
      Check(owners_.ExperimentOfRun(PrefixId(key)), Table::kChunks, key,
            DecodeChunkCount(Describe(Table::kChunks, key), value));
    });
    Walk(Table::kDigests, [&](std::string_view key, std::string_view value) {
      if (value.empty()) {
        Problem(owners_.ExperimentOfRun(PrefixId(key)), Table::kDigests, key, "empty digest");
      }
    });
    Walk(Table::kHosts, [&](std::string_view key, std::string_view value) {
      if (value.empty()) Problem("", Table::kHosts, key, "empty fingerprint");
    });
    Walk(Table::kEvents, [&](std::string_view key, std::string_view value) {
      Check("", Table::kEvents, key, DecodeEvent(Describe(Table::kEvents, key), value));
    });
    Walk(Table::kBundles, [&](std::string_view key, std::string_view value) {
      Result<BundleRecord> bundle = DecodeBundle(Describe(Table::kBundles, key), value);
      Check(bundle.ok() ? bundle->experiment : "", Table::kBundles, key, bundle);
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

  KvEngine& engine_;
  StoreCheckReport& report_;
  RecordOwners owners_;  // learned while walking plan_jobs, then runs
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
