// `orch report --by-host` as an operator runs it: the real binary on a RocksDB store
// holding the lab's runs and runs imported from contributors (tests/report/report_fixture.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

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

TEST_F(ReportCommandTest, ByHostComparesEachJobAcrossTheHostsThatRanIt) {
  ProcessResult text =
      RunProcess({OrchBinary(), "report", "contributed", "--data-dir", data(), "--by-host"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("3 of 3 jobs ran on more than one host"));
  EXPECT_THAT(text.out, HasSubstr("== job job-3: quant=q8_0, workload wiki, repeat 0 (3 hosts)"));
  EXPECT_THAT(text.out, HasSubstr("run-q-bob"));
  EXPECT_THAT(text.out, HasSubstr("host.cpu.model_name"));
  EXPECT_THAT(text.out, Not(HasSubstr("Cells against the baseline")));

  ProcessResult json = RunProcess(
      {OrchBinary(), "report", "contributed", "--data-dir", data(), "--by-host", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["schema"], "orch.report-hosts/1");
  ASSERT_EQ(parsed["jobs"].size(), 3u);
  const nlohmann::json& quant = parsed["jobs"][2];
  EXPECT_EQ(quant["cell"], "quant=q8_0");
  EXPECT_EQ(quant["runs"][0]["run"], "run-q-lab");
  EXPECT_EQ(quant["runs"][0]["reference"], true);
  EXPECT_EQ(quant["runs"][2]["contributor"], "bob");
  EXPECT_EQ(quant["runs"][2]["first_difference"], 25);
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

}  // namespace
}  // namespace orch::testing
