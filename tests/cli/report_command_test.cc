// `orch report --by-host` and `--positions` as an operator runs them: the real binary on a
// RocksDB store holding the lab's runs and runs imported from contributors, or the standard
// experiment (tests/report/report_fixture.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "store/rocksdb_store.h"
#include "tests/report/report_fixture.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class ReportCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::remove_all(dir_);
    std::unique_ptr<store::Store> store =
        std::move(store::OpenRocksDbStore(store::RocksDbPathInDataDir(data()), {})).value();
    report::testing::BuildContributedExperiment(*store);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string data() const { return (dir_ / "data").string(); }

  fs::path dir_ = fs::temp_directory_path() / ("orch-report-cmd-" + std::to_string(::getpid()));
};

TEST_F(ReportCommandTest, ByHostGroupsTheRunsOfOtherHostsByThePairOfClassesTheyDifferBy) {
  ProcessResult text =
      RunProcess({OrchBinary(), "report", "contributed", "--data-dir", data(), "--by-host"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("3 of 3 jobs ran on more than one host or fingerprint class"));
  EXPECT_THAT(text.out, HasSubstr("(host fp-b): 2 runs, 1 bit-identical =="));
  EXPECT_THAT(text.out, HasSubstr("run-q-bob"));
  EXPECT_THAT(text.out, HasSubstr("host.cpu.model_name"));
  EXPECT_THAT(text.out, Not(HasSubstr("Cells against the baseline")));

  ProcessResult json = RunProcess(
      {OrchBinary(), "report", "contributed", "--data-dir", data(), "--by-host", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["schema"], "orch.report-hosts/2");
  EXPECT_EQ(parsed["jobs_listed"], 3);
  ASSERT_EQ(parsed["pairs"].size(), 4u);
  const nlohmann::json& bob = parsed["pairs"][0]["runs"][1];
  EXPECT_EQ(bob["cell"], "quant=q8_0");
  EXPECT_EQ(bob["reference"]["run"], "run-q-lab");
  EXPECT_EQ(bob["run"]["contributor"], "bob");
  EXPECT_EQ(bob["first_difference"], 25);
}

TEST_F(ReportCommandTest, TheReportListsTheConflictAndTheQuorum) {
  ProcessResult text = RunProcess({OrchBinary(), "report", "contributed", "--data-dir", data()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("Conflicts (one job, one fingerprint class"));
  EXPECT_THAT(text.out, HasSubstr("alice on fp-a2 (agent rig-1)"));
  EXPECT_THAT(text.out, HasSubstr("rests on one contributor (alice)"));
}

std::size_t WidestLine(const std::string& text) {
  std::size_t widest = 0, width = 0;
  for (char c : text) {
    if (c == '\n') {
      widest = std::max(widest, width);
      width = 0;
    } else if ((c & 0xC0) != 0x80) {
      ++width;
    }
  }
  return std::max(widest, width);
}

// Not a terminal: 100 columns unless COLUMNS says otherwise.
TEST_F(ReportCommandTest, TextLinesFitColumnsOrAHundredWhenNotATerminal) {
  ProcessResult plain = RunProcess({"/usr/bin/env", "-u", "COLUMNS", OrchBinary(), "report",
                                    "contributed", "--data-dir", data()});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_LE(WidestLine(plain.out), 100u);
  EXPECT_GT(WidestLine(plain.out), 60u);
  ProcessResult narrow = RunProcess(
      {"/usr/bin/env", "COLUMNS=60", OrchBinary(), "report", "contributed", "--data-dir", data()});
  ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
  EXPECT_LE(WidestLine(narrow.out), 60u) << narrow.out;
  EXPECT_THAT(narrow.out, HasSubstr("Conflicts (one job, one fingerprint class"));
  ProcessResult hosts = RunProcess({"/usr/bin/env", "COLUMNS=60", OrchBinary(), "report",
                                    "contributed", "--data-dir", data(), "--by-host"});
  ASSERT_EQ(hosts.exit_code, 0) << hosts.err;
  EXPECT_LE(WidestLine(hosts.out), 60u) << hosts.out;
}

TEST_F(ReportCommandTest, ByHostRefusesCsvAndHtml) {
  ProcessResult csv = RunProcess(
      {OrchBinary(), "report", "contributed", "--data-dir", data(), "--by-host", "--csv"});
  EXPECT_NE(csv.exit_code, 0);
  EXPECT_THAT(csv.err, HasSubstr("excludes"));
}

class ReportPositionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::remove_all(dir_);
    std::unique_ptr<store::Store> store =
        std::move(store::OpenRocksDbStore(store::RocksDbPathInDataDir(data()), {})).value();
    report::testing::BuildStandardExperiment(*store);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string data() const { return (dir_ / "data").string(); }
  static std::string Slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  fs::path dir_ = fs::temp_directory_path() / ("orch-report-pos-" + std::to_string(::getpid()));
};

// The file the command writes is the core's export (the golden of tests/report).
TEST_F(ReportPositionsTest, WritesThePerPositionExportBesideTheReport) {
  const fs::path golden = fs::path(ORCH_SOURCE_DIR) / "tests/report/testdata";
  for (const char* name : {"standard.positions.csv", "standard.positions.json"}) {
    const fs::path out = dir_ / name;
    ProcessResult r = RunProcess(
        {OrchBinary(), "report", "standard", "--data-dir", data(), "--positions", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("Cells against the baseline")) << "the report still prints";
    EXPECT_THAT(r.err, HasSubstr("per-position export written to " + out.string()));
    EXPECT_EQ(Slurp(out), Slurp(golden / name)) << name;
    EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  }
}

TEST_F(ReportPositionsTest, AnotherExtensionIsNamedAndNothingIsWritten) {
  const fs::path out = dir_ / "positions.txt";
  ProcessResult r = RunProcess(
      {OrchBinary(), "report", "standard", "--data-dir", data(), "--positions", out.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--positions " + out.string() +
                               ": the file name must end in .csv or .json"));
  EXPECT_FALSE(fs::exists(out));
  ProcessResult by_host = RunProcess({OrchBinary(), "report", "standard", "--data-dir", data(),
                                      "--by-host", "--positions", (dir_ / "p.csv").string()});
  EXPECT_NE(by_host.exit_code, 0);
  EXPECT_THAT(by_host.err, HasSubstr("excludes"));
}

}  // namespace
}  // namespace orch::testing
