// A result bundle through the whole chain: export from the lab's store, the rig's runs
// written and signed, imported, then the report. A rig's run that disagrees with the
// lab's run of the same job on a machine of the same fingerprint class is kept beside it
// and listed as a conflict; a rig's run that agrees raises the cell's quorum.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "bundle/plan_bundle.h"
#include "bundle/result_bundle.h"
#include "fingerprint/fingerprint_json.h"
#include "report/render.h"
#include "report/report.h"
#include "report/run_source.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::bundle {
namespace {

using report::testing::AddSucceededRun;
using report::testing::MakeRecord;
using report::testing::TwoPeakRow;
using ::testing::HasSubstr;

constexpr int64_t kNow = 1'800'000'000'000;
constexpr int kPositions = 12;

// The rows of a run over one text; `flip_at` >= 0 swaps the top two logits there.
std::vector<digest::PositionRecord> Records(int flip_at = -1) {
  std::vector<digest::PositionRecord> records;
  for (int p = 0; p < kPositions; ++p) {
    std::int32_t target = p % report::testing::kVocab;
    std::int32_t top = target;
    std::int32_t second = (p + 1) % report::testing::kVocab;
    if (p == flip_at) std::swap(top, second);
    records.push_back(MakeRecord(p, TwoPeakRow(top, second, 0.5), target, /*full=*/true));
  }
  return records;
}

TEST(BundleReportTest, ADisagreeingRunOnTheSameClassIsAConflictAndAnAgreeingOneAddsToTheQuorum) {
  report::testing::ExperimentBuilder builder("conflict");
  builder.Workload("w", "teacher_forced", kPositions).Cell("baseline").Cell("quant=q8_0");
  std::string baseline = builder.Job("baseline", "w", 0);
  std::string quant = builder.Job("quant=q8_0", "w", 0);
  // The lab and the rig are twins: one fingerprint, so one class.
  fingerprint::Fingerprint twin;
  twin.host.cpu.model_name = fingerprint::Probed<std::string>::Known("Intel N150");
  std::string host_json = fingerprint::ToCanonicalJson(twin);
  std::string host = fingerprint::FingerprintIdOfJson(host_json);

  std::unique_ptr<store::Store> lab = store::MakeMemoryStore();
  builder.Submit(*lab);
  ASSERT_TRUE(lab->PutFingerprint(host, host_json).ok());
  AddSucceededRun(*lab, baseline, "lab-baseline", Records(), host);
  AddSucceededRun(*lab, quant, "lab-quant", Records(), host);

  std::unique_ptr<store::Store> rig = store::MakeMemoryStore();
  builder.Submit(*rig);
  ASSERT_TRUE(rig->PutFingerprint(host, host_json).ok());
  AddSucceededRun(*rig, baseline, "rig-baseline", Records(/*flip_at=*/7), host);
  AddSucceededRun(*rig, quant, "rig-quant", Records(), host);

  protocol::SecretIdentity coordinator =
      std::move(protocol::GenerateIdentity("lab", "coordinator")).value();
  protocol::SecretIdentity carol =
      std::move(protocol::GenerateIdentity("carol", "contributor")).value();
  std::string plan_file =
      std::move(ExportPlanBundle(*lab, {"conflict", {}, kNow, 86'400'000}, coordinator)).value();
  PlanBundle plan = std::move(ReadPlanBundle(plan_file, "plan.orchb")).value();
  WrittenResults written = std::move(WriteResultBundle(*rig, plan, 1, kNow, carol)).value();
  ASSERT_EQ(written.runs, 2);
  ImportContext context;
  context.trusted = {carol.identity};
  context.coordinator_key = coordinator.identity.sign_public;
  context.now_ms = kNow + 1;
  Result<ImportResult> imported = ImportResultBundle(*lab, written.file, "r.orchb", context);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  EXPECT_EQ(imported->jobs_completed, 0);                  // the lab's own runs had completed them
  EXPECT_EQ(lab->ListRunsOfJobs({baseline})->size(), 2u);  // kept side by side

  Result<report::ExperimentInput> input = report::LoadExperiment(*lab, "conflict");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<report::RunSource> source = report::MakeStoreRunSource(*lab);
  Result<report::Report> built = report::BuildReport(*input, *source, {});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const report::WorkloadReport& w = built->workloads.at(0);

  ASSERT_EQ(w.baseline.conflicts.size(), 1u);
  const report::Conflict& conflict = w.baseline.conflicts[0];
  std::string rig_run = "carol:rig-baseline";
  EXPECT_EQ((std::set<std::string>{conflict.a.run_id, conflict.b.run_id}),
            (std::set<std::string>{"lab-baseline", rig_run}));
  EXPECT_EQ((std::set<std::string>{conflict.a.contributor, conflict.b.contributor}),
            (std::set<std::string>{"lab", "carol"}));
  EXPECT_EQ(conflict.first_difference, 7u);
  EXPECT_THAT(report::RenderText(*built), HasSubstr("Conflicts"));

  ASSERT_EQ(w.cells.size(), 1u);
  const report::Quorum& agreed = w.cells[0].quorum;
  EXPECT_EQ(agreed.runs, 2);
  EXPECT_EQ(agreed.streams, 1);
  EXPECT_EQ(agreed.contributors, (std::vector<std::string>{"lab", "carol"}));
  EXPECT_FALSE(agreed.rests_on_one_contributor());
  EXPECT_TRUE(w.cells[0].conflicts.empty());
}

// A trusted contributor's summaries are whatever it signed: the report of runs imported
// with summaries that are not the agent's JSON still builds and renders.
TEST(BundleReportTest, SummariesThatAreNotAnAgentsJsonDoNotBreakTheReport) {
  report::testing::ExperimentBuilder builder("odd");
  builder.Workload("w", "teacher_forced", kPositions).Cell("baseline");
  std::string job0 = builder.Job("baseline", "w", 0);
  std::string job1 = builder.Job("baseline", "w", 1);
  std::unique_ptr<store::Store> lab = store::MakeMemoryStore();
  builder.Submit(*lab);
  std::unique_ptr<store::Store> rig = store::MakeMemoryStore();
  builder.Submit(*rig);
  report::testing::AddSucceededRunWithSummary(*rig, job0, "r0", Records(), "not json {");
  report::testing::AddSucceededRunWithSummary(
      *rig, job1, "r1", Records(),
      R"({"hello":[1,2],"done":{"token_text":{"7":42,"x":null},"model":"?"}})");
  protocol::SecretIdentity coordinator =
      std::move(protocol::GenerateIdentity("lab", "coordinator")).value();
  protocol::SecretIdentity carol =
      std::move(protocol::GenerateIdentity("carol", "contributor")).value();
  PlanBundle plan =
      std::move(
          ReadPlanBundle(
              std::move(ExportPlanBundle(*lab, {"odd", {}, kNow, 86'400'000}, coordinator)).value(),
              "plan"))
          .value();
  WrittenResults written = std::move(WriteResultBundle(*rig, plan, 1, kNow, carol)).value();
  ImportContext context;
  context.trusted = {carol.identity};
  context.coordinator_key = coordinator.identity.sign_public;
  context.now_ms = kNow + 1;
  ASSERT_TRUE(ImportResultBundle(*lab, written.file, "r.orchb", context).ok());

  Result<report::ExperimentInput> input = report::LoadExperiment(*lab, "odd");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<report::RunSource> source = report::MakeStoreRunSource(*lab);
  Result<report::Report> built = report::BuildReport(*input, *source, {});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_THAT(report::RenderText(*built), HasSubstr("bit-identical"));
  EXPECT_FALSE(report::RenderJson(*built).empty());
  EXPECT_FALSE(report::RenderHtml(*built).empty());
}

}  // namespace
}  // namespace orch::bundle
