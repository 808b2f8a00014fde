// Quorum and conflicts over every usable run of a cell: the lab's runs and runs imported
// from contributors' bundles, built into a memory store and reported by BuildReport.
#include "report/quorum.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "fingerprint/canonical_json.h"
#include "report/render.h"
#include "report/report.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

using testing::AddImportedRun;
using testing::AddSucceededRun;
using testing::AttentionRow;
using testing::BaselineRow;
using testing::TwoPeakRow;

constexpr std::uint64_t kPositions = 40;

// The baseline's rows, with the top logit at `moved` (if any) raised a little: a stream
// that differs from the baseline's from that position on, without a flip.
std::vector<digest::PositionRecord> Records(std::vector<float> (*row)(std::uint64_t),
                                            std::optional<std::uint64_t> moved = {}) {
  std::vector<digest::PositionRecord> out;
  for (std::uint64_t i = 0; i < kPositions; ++i) {
    std::vector<float> r = row(i);
    const auto top = static_cast<std::int32_t>(i % testing::kVocab);
    if (moved && i == *moved) r = TwoPeakRow(top, (top + 1) % testing::kVocab, 2.5);
    out.push_back(testing::MakeRecord(i, r, testing::TargetAt(i), /*full=*/true));
  }
  return out;
}

std::string HostJson(const std::string& cpu, std::int64_t memory_bytes) {
  fingerprint::Fingerprint fp;
  fp.host.cpu.model_name = fingerprint::Probed<std::string>::Known(cpu);
  fp.host.memory_bytes = fingerprint::Probed<std::int64_t>::Known(memory_bytes);
  return fingerprint::ToCanonicalJson(fp);
}

const CellReport& CellOf(const Report& report, const std::string& label) {
  const WorkloadReport& w = report.workloads.at(0);
  if (label == "baseline") return w.baseline;
  for (const CellReport& c : w.cells) {
    if (c.cell.label == label) return c;
  }
  ADD_FAILURE() << "no cell " << label;
  static const CellReport kNone;
  return kNone;
}

// One teacher-forced workload, one job per cell:
// - baseline: the lab on fp-a, alice on fp-b and bob on fp-c, all bit-identical;
// - attention=on: only alice, on two rigs (fp-b, fp-c), bit-identical;
// - quant=q8_0: the lab on fp-a; alice on fp-a2 (fp-a's twin with other memory: same class)
//   differing from position 20; bob on fp-b (another CPU: another class) differing from 25.
class QuorumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::ExperimentBuilder plan("contributed");
    plan.Workload("wiki", "teacher_forced", kPositions);
    plan.Cell("baseline").Cell("attention=on").Cell("quant=q8_0");
    const std::string base = plan.Job("baseline", "wiki", 0);
    const std::string att = plan.Job("attention=on", "wiki", 0);
    const std::string quant = plan.Job("quant=q8_0", "wiki", 0);
    plan.Submit(*store_);
    for (const auto& [id, json] : {std::pair{"fp-a", HostJson("Intel N150", 16)},
                                   std::pair{"fp-a2", HostJson("Intel N150", 32)},
                                   std::pair{"fp-b", HostJson("AMD EPYC 9654", 16)},
                                   std::pair{"fp-c", HostJson("Apple M2", 16)}}) {
      ASSERT_TRUE(store_->PutFingerprint(id, json).ok());
    }
    AddSucceededRun(*store_, base, "run-base-lab", Records(BaselineRow), "fp-a");
    AddImportedRun(*store_, base, "run-base-alice", Records(BaselineRow), "alice", "fp-b");
    AddImportedRun(*store_, base, "run-base-bob", Records(BaselineRow), "bob", "fp-c", "rig-2");
    AddImportedRun(*store_, att, "run-att-1", Records(AttentionRow), "alice", "fp-b");
    AddImportedRun(*store_, att, "run-att-2", Records(AttentionRow), "alice", "fp-c", "rig-2");
    AddSucceededRun(*store_, quant, "run-q-lab", Records(BaselineRow), "fp-a");
    AddImportedRun(*store_, quant, "run-q-alice", Records(BaselineRow, 20), "alice", "fp-a2");
    AddImportedRun(*store_, quant, "run-q-bob", Records(BaselineRow, 25), "bob", "fp-b");
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
  const Quorum& q = CellOf(report_, "baseline").quorum;
  EXPECT_EQ(q.runs, 3);
  EXPECT_EQ(q.streams, 1);
  EXPECT_EQ(q.agreeing_runs.size(), 3u);
  EXPECT_EQ(q.hosts, 3);
  EXPECT_EQ(q.classes, 3);
  EXPECT_EQ(q.contributors, (std::vector<std::string>{"lab", "alice", "bob"}));
  EXPECT_FALSE(q.rests_on_one_contributor());
  EXPECT_TRUE(CellOf(report_, "baseline").conflicts.empty());
}

TEST_F(QuorumTest, ACellRunByOneContributorOnlyIsFlagged) {
  const CellReport& c = CellOf(report_, "attention=on");
  EXPECT_EQ(c.quorum.runs, 2);
  EXPECT_EQ(c.quorum.hosts, 2);
  EXPECT_EQ(c.quorum.all_contributors, std::vector<std::string>{"alice"});
  EXPECT_TRUE(c.quorum.rests_on_one_contributor());
  // Its job has no lab run: the comparison uses a contributor's run.
  EXPECT_EQ(c.status, CellStatus::kCompared) << c.reason;
  EXPECT_EQ(c.other_run, "run-att-1");
  EXPECT_NE(RenderText(report_).find("rests on one contributor (alice)"), std::string::npos);
  EXPECT_NE(RenderJson(report_).find("\"rests_on_one_contributor\": true"), std::string::npos);
}

TEST_F(QuorumTest, SameClassDifferentStreamsOfOneJobIsAConflictAndBothRunsAreKept) {
  const CellReport& c = CellOf(report_, "quant=q8_0");
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
  const std::string text = RenderText(report_);
  EXPECT_NE(text.find("alice on fp-a2 (agent rig-1)"), std::string::npos) << text;
  EXPECT_NE(text.find("lab on fp-a (agent agent-1)"), std::string::npos) << text;
  EXPECT_NE(RenderCsv(report_).find(",1\n"), std::string::npos);
}

TEST_F(QuorumTest, DifferentClassesWithDifferentStreamsAreNoConflict) {
  const CellReport& c = CellOf(report_, "quant=q8_0");
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
  EXPECT_EQ(BuildQuorum(runs, "").all_contributors,
            (std::vector<std::string>{"lab", "alice"}));
  EXPECT_TRUE(FindConflicts(runs).empty());  // different classes
}

}  // namespace
}  // namespace orch::report
