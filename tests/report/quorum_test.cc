// Quorum and conflicts over every usable run of a cell: the lab's runs and runs imported
// from contributors' bundles, built into a memory store and reported by BuildReport.
#include "report/quorum.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "report/render.h"
#include "report/tables.h"
#include "report/report.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

const CellReport& QuorumCellOf(const Report& report, const std::string& label) {
  const WorkloadReport& w = report.workloads.at(0);
  if (label == "baseline") return w.baseline;
  for (const CellReport& c : w.cells) {
    if (c.cell.label == label) return c;
  }
  ADD_FAILURE() << "no cell " << label;
  static const CellReport kNone;
  return kNone;
}

class QuorumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::BuildContributedExperiment(*store_);
    Result<ExperimentInput> input = LoadExperiment(*store_, "contributed");
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    std::unique_ptr<RunSource> source = MakeStoreRunSource(*store_);
    Result<Report> report = BuildReport(*input, *source, {});
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = std::move(*report);
  }

  std::unique_ptr<store::Store> store_ = store::MakeMemoryStore();
  Report report_;
};

TEST_F(QuorumTest, LabAndTwoContributorsAgreeingMakeAQuorumOfThreeHosts) {
  const Quorum& q = QuorumCellOf(report_, "baseline").quorum;
  EXPECT_EQ(q.runs, 3);
  EXPECT_EQ(q.streams, 1);
  EXPECT_EQ(q.agreeing_runs.size(), 3u);
  EXPECT_EQ(q.hosts, 3);
  EXPECT_EQ(q.classes, 3);
  EXPECT_EQ(q.contributors, (std::vector<std::string>{"lab", "alice", "bob"}));
  EXPECT_FALSE(q.rests_on_one_contributor());
  EXPECT_TRUE(QuorumCellOf(report_, "baseline").conflicts.empty());
}

TEST_F(QuorumTest, ACellRunByOneContributorOnlyIsFlagged) {
  const CellReport& c = QuorumCellOf(report_, "attention=on");
  EXPECT_EQ(c.quorum.runs, 2);
  EXPECT_EQ(c.quorum.hosts, 2);
  EXPECT_EQ(c.quorum.all_contributors, std::vector<std::string>{"alice"});
  EXPECT_TRUE(c.quorum.rests_on_one_contributor());
  // Its job has no lab run: the comparison uses a contributor's run.
  EXPECT_EQ(c.status, CellStatus::kCompared) << c.reason;
  EXPECT_EQ(c.other_run, "run-att-1");
  EXPECT_NE(RenderText(report_, testing::kUnwrapped).find("rests on one contributor (alice)"),
            std::string::npos);
  EXPECT_NE(RenderJson(report_).find("\"rests_on_one_contributor\": true"), std::string::npos);
}

TEST_F(QuorumTest, SameClassDifferentStreamsOfOneJobIsAConflictAndBothRunsAreKept) {
  const CellReport& c = QuorumCellOf(report_, "quant=q8_0");
  ASSERT_EQ(c.conflicts.size(), 1u);
  const Conflict& k = c.conflicts[0];
  EXPECT_EQ(k.a.run_id, "run-q-alice");
  EXPECT_EQ(k.b.run_id, "run-q-lab");
  EXPECT_EQ(k.a.contributor, "alice");
  EXPECT_EQ(k.b.contributor, "lab");
  EXPECT_EQ(k.a.host, "fp-a2");
  EXPECT_EQ(k.b.host, "fp-a");
  EXPECT_EQ(k.a.fingerprint_class, k.b.fingerprint_class);
  EXPECT_EQ(k.first_difference, 20u);
  // Both stay in the quorum, and the comparison still uses the job's current (lab) run.
  EXPECT_EQ(c.quorum.runs, 3);
  EXPECT_EQ(c.quorum.streams, 3);
  EXPECT_EQ(c.other_run, "run-q-lab");
  EXPECT_TRUE(c.result.bit_identical());
  const std::string text = RenderText(report_, testing::kUnwrapped);
  EXPECT_NE(text.find("alice on fp-a2 (agent rig-1)"), std::string::npos) << text;
  EXPECT_NE(text.find("lab on fp-a (agent agent-1)"), std::string::npos) << text;
  // The CSV's conflicts column says so on the cell's row.
  const auto rows = testing::ParseCsv(RenderCsv(report_));
  const auto conflicts = std::find(rows[0].begin(), rows[0].end(), "conflicts") - rows[0].begin();
  const auto cell = std::find(rows[0].begin(), rows[0].end(), "cell") - rows[0].begin();
  bool found = false;
  for (const auto& row : rows)
    found = found || (row[cell] == c.cell.label && row[conflicts] == "1");
  EXPECT_TRUE(found);
}

TEST_F(QuorumTest, DifferentClassesWithDifferentStreamsAreNoConflict) {
  const CellReport& c = QuorumCellOf(report_, "quant=q8_0");
  for (const Conflict& k : c.conflicts) {
    EXPECT_NE(k.a.run_id, "run-q-bob");
    EXPECT_NE(k.b.run_id, "run-q-bob");
  }
  // The lab's run wins the tie of three single-run groups: it is the one compared.
  EXPECT_EQ(c.quorum.agreeing_runs, std::vector<std::string>{"run-q-lab"});
}

TEST(QuorumStandaloneTest, RepeatsOfACellThatDifferAreNoConflict) {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  testing::BuildStandardExperiment(*store);
  Result<ExperimentInput> input = LoadExperiment(*store, "standard");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<Report> report = BuildReport(*input, *source, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const CellReport& baseline = report->workloads.at(0).baseline;
  // run-b0 and run-b1 differ on one host, but they are two jobs (repeats): no conflict.
  EXPECT_TRUE(baseline.conflicts.empty());
  EXPECT_EQ(baseline.quorum.streams, 2);
  EXPECT_EQ(baseline.quorum.agreeing_runs, std::vector<std::string>{"run-b0"});
  EXPECT_TRUE(baseline.quorum.rests_on_one_contributor());
}

TEST(QuorumStandaloneTest, StreamIdentityIsTheHashTheRepeatabilityComparisonGives) {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  testing::BuildStandardExperiment(*store);
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<PairResult> pair = ComparePair(*source, "run-b0", "run-b1", {});
  ASSERT_TRUE(pair.ok());
  Result<StreamIdentity> b0 = ScanStreamIdentity(*source, "run-b0");
  Result<StreamIdentity> b1 = ScanStreamIdentity(*source, "run-b1");
  ASSERT_TRUE(b0.ok() && b1.ok());
  EXPECT_EQ(b0->hash, pair->reference_hash);
  EXPECT_EQ(b1->hash, pair->other_hash);
  EXPECT_EQ(b0->length, 40u);
  EXPECT_NE(*b0, *b1);
}

TEST(QuorumStandaloneTest, TiesGoToThePreferredRunsGroup) {
  auto run = [](std::string id, std::string contributor, std::uint64_t hash) {
    return CellRun{{id, "job-1", "agent", contributor, "fp-" + id, "fc-" + id}, 0, {hash, 1}};
  };
  const std::vector<CellRun> runs = {run("x", "alice", 1), run("y", "lab", 2)};
  EXPECT_EQ(BuildQuorum(runs, "y").agreeing_runs, std::vector<std::string>{"y"});
  EXPECT_EQ(BuildQuorum(runs, "").agreeing_runs, std::vector<std::string>{"x"});
  EXPECT_EQ(BuildQuorum(runs, "").all_contributors, (std::vector<std::string>{"lab", "alice"}));
  EXPECT_TRUE(FindConflicts(runs).empty());  // different classes
}

}  // namespace
}  // namespace orch::report

namespace orch::report {
namespace {

// Four runs on one stream (the lab's two hosts, alice's rig) against four on another
// (bob's three rigs and carol's): no majority, and both groups named in full.
std::vector<CellRun> EvenSplit() {
  auto run = [](std::string id, std::string contributor, std::string host, std::string klass,
                std::uint64_t hash) {
    return CellRun{{id, "job-" + id, "agent", contributor, host, klass}, 0, {hash, 40}};
  };
  return {run("r1", "lab", "fp-a", "fc-x", 1),   run("r2", "lab", "fp-b", "fc-x", 1),
          run("r3", "alice", "fp-c", "fc-y", 1), run("r4", "lab", "fp-a", "fc-x", 1),
          run("r5", "bob", "fp-d", "fc-z", 2),   run("r6", "bob", "fp-e", "fc-z", 2),
          run("r7", "carol", "fp-f", "fc-w", 2), run("r8", "bob", "fp-g", "fc-z", 2)};
}

TEST(QuorumGroupsTest, AnEvenSplitListsEveryGroupAndHasNoMajority) {
  const Quorum q = BuildQuorum(EvenSplit(), "r5");
  EXPECT_FALSE(q.majority());
  ASSERT_EQ(q.groups.size(), 2u);
  // The group holding the compared run leads the tie.
  EXPECT_EQ(q.groups[0].runs, (std::vector<std::string>{"r5", "r6", "r7", "r8"}));
  EXPECT_EQ(q.groups[0].hosts, (std::vector<std::string>{"fp-d", "fp-e", "fp-f", "fp-g"}));
  EXPECT_EQ(q.groups[0].classes, (std::vector<std::string>{"fc-z", "fc-w"}));
  EXPECT_EQ(q.groups[0].contributors, (std::vector<std::string>{"bob", "carol"}));
  EXPECT_EQ(q.groups[1].runs, (std::vector<std::string>{"r1", "r2", "r3", "r4"}));
  EXPECT_EQ(q.groups[1].hosts, (std::vector<std::string>{"fp-a", "fp-b", "fp-c"}));
  EXPECT_EQ(q.groups[1].classes, (std::vector<std::string>{"fc-x", "fc-y"}));
  EXPECT_EQ(q.groups[1].contributors, (std::vector<std::string>{"lab", "alice"}));

  WorkloadReport w;
  w.baseline.cell = {"baseline", "", ""};
  w.baseline.quorum = q;
  const Table quorum = QuorumTable(w);
  ASSERT_EQ(quorum.rows.size(), 1u);
  EXPECT_EQ(quorum.rows[0][3], "4 / 8");
  EXPECT_EQ(quorum.rows[0].back(), "no majority: 2 groups of 4 runs");
  const Table groups = StreamGroupTable(w);
  ASSERT_EQ(groups.rows.size(), 2u);
  EXPECT_EQ(groups.rows[1],
            (std::vector<std::string>{"baseline", "2 of 2", "4 / 8", "fp-a, fp-b, fp-c",
                                      "fc-x, fc-y", "lab, alice"}));
}

TEST(QuorumGroupsTest, ALargerGroupIsAMajorityAndTheSmallerOnesAreStillListed) {
  std::vector<CellRun> runs = EvenSplit();
  runs.pop_back();  // 4 against 3
  const Quorum q = BuildQuorum(runs, "r5");
  EXPECT_TRUE(q.majority());
  ASSERT_EQ(q.groups.size(), 2u);
  EXPECT_EQ(q.groups[0].runs.size(), 4u);
  EXPECT_EQ(q.groups[1].runs, (std::vector<std::string>{"r5", "r6", "r7"}));
  EXPECT_EQ(q.agreeing_runs, q.groups[0].runs);
  WorkloadReport w;
  w.baseline.cell = {"baseline", "", ""};
  w.baseline.quorum = q;
  const Table table = QuorumTable(w);
  for (const std::string& cell : table.rows.at(0)) {
    EXPECT_EQ(cell.find("no majority"), std::string::npos) << cell;
  }
  const nlohmann::json doc = nlohmann::json::parse(RenderJson([&] {
    Report r;
    r.workloads.push_back(w);
    return r;
  }()));
  const nlohmann::json& quorum = doc["workloads"][0]["baseline"]["quorum"];
  EXPECT_EQ(quorum["majority"], true);
  EXPECT_EQ(quorum["groups"][1]["size"], 3);
  EXPECT_EQ(quorum["groups"][1]["contributors"], (nlohmann::json{"bob", "carol"}));
}

}  // namespace
}  // namespace orch::report
