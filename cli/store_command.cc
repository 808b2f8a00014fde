#include "cli/store_command.h"

#include <stdlib.h>

#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/scratch_dir.h"
#include "store/rocksdb_store.h"
#include "store/store_backup.h"
#include "store/store_check.h"
#include "store/store_recover.h"

namespace orch::cli {
namespace {

struct StoreCommandOptions {
  std::string data_dir;
  std::string backup_dir;
  bool json = false;
};

int Fail(const std::string& command, const Status& status) {
  std::cerr << "orch store " << command << ": " << status.message() << "\n";
  return status.code() == StatusCode::kNotFound ? kExitInvalidInput : kExitError;
}

std::map<std::string, std::vector<store::StoreProblem>> ByExperiment(
    const store::StoreCheckReport& report) {
  std::map<std::string, std::vector<store::StoreProblem>> grouped;
  for (const store::StoreProblem& problem : report.problems) {
    grouped[problem.experiment].push_back(problem);
  }
  return grouped;
}

void PrintCheckJson(const store::StoreCheckReport& report) {
  nlohmann::ordered_json out = {{"schema", "orch.store-check/1"},
                                {"store", report.path},
                                {"ok", report.ok()},
                                {"records", report.records}};
  nlohmann::ordered_json experiments = nlohmann::ordered_json::array();
  nlohmann::ordered_json whole = nlohmann::ordered_json::array();
  for (const auto& [experiment, problems] : ByExperiment(report)) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const store::StoreProblem& p : problems)
      list.push_back({{"where", p.where}, {"what", p.what}});
    if (experiment.empty()) {
      whole = list;
    } else {
      experiments.push_back({{"experiment", experiment}, {"problems", list}});
    }
  }
  out["experiments"] = experiments;
  out["store_problems"] = whole;
  std::cout << out.dump(2) << "\n";
}

void PrintCheckText(const store::StoreCheckReport& report, const std::string& data_dir) {
  if (report.ok()) {
    std::cout << "store " << report.path << ": " << report.records
              << " records checked, every checksum and record sound\n";
    return;
  }
  std::cout << "store " << report.path << ": DAMAGED (" << report.problems.size() << " problems, "
            << report.records << " records read)\n";
  for (const auto& [experiment, problems] : ByExperiment(report)) {
    std::cout << (experiment.empty() ? std::string("the store as a whole")
                                     : "experiment " + experiment)
              << ": " << problems.size() << " problems\n";
    for (const store::StoreProblem& p : problems)
      std::cout << "  " << p.where << ": " << p.what << "\n";
  }
  std::cout << "Restore a backup into an empty data directory: orch store restore BACKUP "
            << data_dir << "-restored (docs/store.md)\n";
}

int RunCheck(const StoreCommandOptions& options) {
  Result<store::StoreCheckReport> report =
      store::CheckRocksDbStore(store::RocksDbPathInDataDir(options.data_dir));
  if (!report.ok()) return Fail("check", report.status());
  if (options.json) {
    PrintCheckJson(*report);
  } else {
    PrintCheckText(*report, options.data_dir);
  }
  return report->ok() ? kExitOk : kExitError;
}

int RunBackup(const StoreCommandOptions& options) {
  ScratchDir scratch("orch-store");
  if (scratch.path().empty()) return Fail("backup", IoError("cannot create a temporary folder"));
  std::string path = store::RocksDbPathInDataDir(options.data_dir);
  Result<store::BackupSummary> backup =
      store::BackupRocksDbStore(path, options.backup_dir, scratch.path());
  if (!backup.ok()) return Fail("backup", backup.status());
  std::cout << "backup " << backup->id << " of " << path << " in " << options.backup_dir << ": "
            << backup->files << " files, " << backup->bytes << " bytes, verified\n";
  return kExitOk;
}

int RunRestore(const StoreCommandOptions& options) {
  std::string path = store::RocksDbPathInDataDir(options.data_dir);
  Status restored = store::RestoreRocksDbStore(options.backup_dir, path);
  if (!restored.ok()) return Fail("restore", restored);
  std::cout << "restored the latest backup in " << options.backup_dir << " into " << path
            << "; start the coordinator with data_dir = " << options.data_dir << "\n";
  return kExitOk;
}

// DATA_DIR/rocksdb.damaged-20261203T091500Z: beside the store, named by the UTC time.
std::string SavedCopyPath(const std::string& path) {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &utc);
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();
  return p.string() + ".damaged-" + stamp;
}

const char* ReplayName(store::Replay replay) {
  return replay == store::Replay::kUpToTheDamage ? "up_to_the_damage" : "every_sound_record";
}

void PrintRecoverJson(const store::RecoveryReport& report) {
  nlohmann::ordered_json lost = nlohmann::ordered_json::array();
  for (const store::LostRecords& l : report.lost) {
    lost.push_back({{"experiment", l.experiment},
                    {"table", l.table},
                    {"count", l.count},
                    {"examples", l.examples}});
  }
  nlohmann::ordered_json wals = nlohmann::ordered_json::array();
  for (const store::DamagedWal& w : report.damaged_wals) {
    wals.push_back({{"file", w.file},
                    {"saved_as", w.saved_as},
                    {"newest", w.newest},
                    {"unreadable_bytes", w.unreadable_bytes},
                    {"unreadable_writes", w.unreadable_writes},
                    {"unreadable_first", w.unreadable_first},
                    {"unreadable_last", w.unreadable_last}});
  }
  nlohmann::ordered_json out = {{"schema", "orch.store-recover/1"},
                                {"store", report.path},
                                {"recovered", report.recovered},
                                {"current_restored", report.current_restored},
                                {"replay", ReplayName(report.replay)},
                                {"damaged_wals", wals},
                                {"wal_messages", report.wal_messages},
                                {"lost_total", report.lost_total},
                                {"lost", lost},
                                {"records_kept", report.records_kept},
                                {"saved_copy", report.saved_copy}};
  std::cout << out.dump(2) << "\n";
}

void PrintDamagedWals(const store::RecoveryReport& report) {
  for (const store::DamagedWal& w : report.damaged_wals) {
    std::cout << "Damaged WAL " << w.file << (w.newest ? " (the newest)" : " (an older WAL)")
              << ": " << w.unreadable_bytes << " bytes unreadable; ";
    if (w.unreadable_writes > 0) {
      std::cout << "LOST the " << w.unreadable_writes << " record writes they held (sequence "
                << w.unreadable_first << ".." << w.unreadable_last
                << "; unreadable, so not named; a write to a table flushed since is kept)";
    } else {
      std::cout << "no sound record follows them to tell how many writes they held";
    }
    std::cout << ". Kept as " << w.saved_as << "\n";
  }
}

void PrintLost(const store::RecoveryReport& report) {
  if (report.lost.empty()) {
    std::cout << (report.replay == store::Replay::kUpToTheDamage
                      ? "No readable record lay beyond the damage: only the damaged bytes above "
                        "were dropped.\n"
                      : "Every readable record was replayed (the damage is in an older WAL): only "
                        "the damaged bytes above were dropped.\n");
    return;
  }
  std::cout << "LOST " << report.lost_total << " records that lay beyond the damage:\n";
  std::string shown;
  for (const store::LostRecords& l : report.lost) {
    std::string whose =
        l.experiment.empty() ? "the store as a whole" : "experiment " + l.experiment;
    if (whose != shown) std::cout << "  " << whose << ":\n";
    shown = whose;
    std::cout << "    " << l.count << " " << l.table << " (e.g. " << l.examples.front() << ")\n";
  }
}

void PrintRecoverText(const store::RecoveryReport& report) {
  if (!report.recovered) {
    std::cout << "store " << report.path
              << " opens strictly: nothing to recover, nothing changed\n";
    return;
  }
  if (!report.current_restored.empty()) {
    std::cout << "store " << report.path << ": CURRENT was missing; wrote it again naming "
              << report.current_restored
              << " (it reads completely and the store opens through it)\n";
  }
  if (!report.damaged_wals.empty()) {
    std::cout << "store " << report.path << ": "
              << (report.replay == store::Replay::kUpToTheDamage
                      ? "replayed up to the first damaged WAL record\n"
                      : "replayed every sound WAL record, skipping the damaged ones\n");
    for (const std::string& message : report.wal_messages)
      std::cout << "  rocksdb: " << message << "\n";
    PrintDamagedWals(report);
    PrintLost(report);
  }
  std::cout << report.records_kept << " records kept; the store now opens strictly.\n"
            << "The damaged store is saved as " << report.saved_copy
            << " (remove it once satisfied).\n"
            << "Start the coordinator: a job whose result was lost runs again when its lease "
               "expires.\n";
}

int RunRecover(const StoreCommandOptions& options) {
  std::string path = store::RocksDbPathInDataDir(options.data_dir);
  Result<store::RecoveryReport> report = store::RecoverRocksDbStore(path, SavedCopyPath(path));
  if (!report.ok()) return Fail("recover", report.status());
  if (options.json) {
    PrintRecoverJson(*report);
  } else {
    PrintRecoverText(*report);
  }
  return kExitOk;
}

}  // namespace

void RegisterStoreCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<StoreCommandOptions>();  // shared with the callbacks below
  CLI::App* store = app.add_subcommand(
      "store", "Check, back up, restore and recover a coordinator's store (docs/store.md).");
  store->require_subcommand(1);

  CLI::App* check = store->add_subcommand(
      "check",
      "Verify every checksum of DATA_DIR/rocksdb and decode every record; report damage by\n"
      "experiment. Reads only. Exit status: 0 sound, 1 damaged, 2 no store there.");
  check->add_option("DATA_DIR", options->data_dir, "the coordinator's data directory")->required();
  check->add_flag("--json", options->json, "print JSON (schema orch.store-check/1)");
  check->callback([options, &exit_code] { exit_code = RunCheck(*options); });

  CLI::App* backup = store->add_subcommand(
      "backup",
      "Add a verified backup of DATA_DIR/rocksdb to DEST (a backup directory; later backups\n"
      "share unchanged files). Works while the coordinator runs. Exit status: 0 done, 1\n"
      "failed, 2 no store there.");
  backup->add_option("DATA_DIR", options->data_dir, "the coordinator's data directory")->required();
  backup->add_option("DEST", options->backup_dir, "the backup directory")->required();
  backup->callback([options, &exit_code] { exit_code = RunBackup(*options); });

  CLI::App* restore = store->add_subcommand(
      "restore",
      "Restore the latest backup in BACKUP into DATA_DIR/rocksdb, which must not exist or be\n"
      "empty (nothing is overwritten). Exit status: 0 done, 1 failed, 2 no backup there.");
  restore->add_option("BACKUP", options->backup_dir, "a backup directory (orch store backup)")
      ->required();
  restore->add_option("DATA_DIR", options->data_dir, "the data directory to restore into")
      ->required();
  restore->callback([options, &exit_code] { exit_code = RunRestore(*options); });

  CLI::App* recover = store->add_subcommand(
      "recover",
      "Bring a stopped coordinator's store that the open refuses, its WAL damaged or its\n"
      "CURRENT file missing, back to a state that opens strictly. First names each\n"
      "damaged WAL and every record that drops, by experiment, and saves a copy of the\n"
      "damaged store beside it; CURRENT is written only after the newest MANIFEST reads\n"
      "completely. Exit status: 0 recovered or nothing to do, 1 failed (nothing changed), 2\n"
      "no store there.");
  recover->add_option("DATA_DIR", options->data_dir, "the coordinator's data directory")
      ->required();
  recover->add_flag("--json", options->json, "print JSON (schema orch.store-recover/1)");
  recover->callback([options, &exit_code] { exit_code = RunRecover(*options); });
}

}  // namespace orch::cli
