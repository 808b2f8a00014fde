// Plan and result bundles against memory stores: the round trip, and every refusal of
// docs/bundles.md (each byte flipped, every truncation, wrong and unknown keys, replay,
// rollback, expiry, another coordinator's plan), each leaving the store as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bundle/bundle_file.h"
#include "bundle/plan_bundle.h"
#include "bundle/result_bundle.h"
#include "plan_document/plan_json.h"
#include "fingerprint/fingerprint_json.h"
#include "store/memory_store.h"

namespace orch::bundle {
namespace {

using ::testing::HasSubstr;

constexpr char kPlanJson[] = R"({"schema":"orch.plan/1","experiment":{"name":"exp"},
"workloads":[{"name":"w","kind":"teacher_forced"}],
"cells":[{"label":"baseline"},{"label":"kv=q8_0"}],
"jobs":[{"id":"j1","cell":"baseline","workload":"w","requirements":{"engine":"e@1"}},
        {"id":"j2","cell":"kv=q8_0","workload":"w","requirements":{"engine":"e@1"}}]})";
constexpr int64_t kNow = 1'800'000'000'000;
constexpr int64_t kDay = 86'400'000;

protocol::SecretIdentity Key(const std::string& name, const std::string& role) {
  return std::move(protocol::GenerateIdentity(name, role)).value();
}

void PutExperiment(store::Store& store) {
  store::JobRecord j1, j2;
  j1.id = "j1";
  j1.experiment = "exp";
  j2.id = "j2";
  j2.experiment = "exp";
  ASSERT_TRUE(store.PutPlan({"exp", kPlanJson}, {j1, j2}).ok());
}

// A rig's store holding a complete successful run of `job` with `positions` digests.
void PutRun(store::Store& rig, const std::string& job, int positions,
            const std::string& host_json) {
  std::string host_id = fingerprint::FingerprintIdOfJson(host_json);
  ASSERT_TRUE(rig.PutFingerprint(host_id, host_json).ok());
  store::RunRecord run;
  run.id = "run-" + job;
  run.job_id = job;
  run.agent_id = "local-1";
  run.state = store::RunState::kRunning;
  run.host_fingerprint_id = host_id;
  store::JobRecord record;
  record.id = job;
  record.experiment = "exp";
  record.state = store::JobState::kRunning;
  record.current_run_id = run.id;
  ASSERT_TRUE(rig.Apply({.job = record, .run = run, .events = {}}).ok());
  std::vector<store::DigestRecord> digests;
  for (int p = 0; p < positions; ++p) digests.push_back({uint64_t(p), "d" + std::to_string(p)});
  ASSERT_TRUE(rig.AppendChunk(run.id, 0, digests).ok());
  record.state = store::JobState::kSucceeded;
  store::RunOutcome outcome;
  outcome.chunks_expected = 1;
  outcome.summary = R"({"done":{}})";
  ASSERT_TRUE(rig.FinishRun(run.id, outcome, record).ok());
}

class BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PutExperiment(*lab_);
    PutExperiment(*rig_);
    PutRun(*rig_, "j1", 5, R"({"cpu":"rig"})");
    PutRun(*rig_, "j2", 3, R"({"cpu":"rig"})");
  }

  std::string Export(int64_t valid_for = 30 * kDay, std::vector<std::string> cells = {}) {
    return std::move(ExportPlanBundle(*lab_, {"exp", cells, kNow, valid_for}, coordinator_))
        .value();
  }

  // `written_at` makes bundles of the same runs and sequence number differ.
  std::string Results(const std::string& plan_file, uint64_t sequence,
                      const protocol::SecretIdentity& signer, int64_t written_at = kNow + 1000) {
    PlanBundle plan = std::move(ReadPlanBundle(plan_file, "plan.orchb")).value();
    return std::move(WriteResultBundle(*rig_, plan, sequence, written_at, signer)).value().file;
  }

  ImportContext Context(int64_t now = kNow + 2000) {
    ImportContext context;
    context.trusted = {carol_.identity};
    context.trust_hint = "cp {name}.key keys/allowed/";
    context.coordinator_key = coordinator_.identity.sign_public;
    context.now_ms = now;
    return context;
  }

  Result<ImportResult> Import(const std::string& file, int64_t now = kNow + 2000) {
    return ImportResultBundle(*lab_, file, "results.orchb", Context(now));
  }

  // Nothing of any bundle reached the lab's store.
  void ExpectNothingImported() {
    Result<store::StoreState> state = lab_->LoadState();
    ASSERT_TRUE(state.ok());
    EXPECT_TRUE(state->runs.empty());
    for (const store::JobRecord& job : state->jobs) EXPECT_EQ(job.state, store::JobState::kPending);
    EXPECT_EQ(lab_->GetSigner(carol_.identity.sign_public).status().code(), StatusCode::kNotFound);
  }

  std::unique_ptr<store::Store> lab_ = store::MakeMemoryStore();
  std::unique_ptr<store::Store> rig_ = store::MakeMemoryStore();
  protocol::SecretIdentity coordinator_ = Key("lab", "coordinator");
  protocol::SecretIdentity carol_ = Key("carol", "contributor");
};

TEST_F(BundleTest, ARoundTripStoresTheRigsRunsWithTheirProvenanceAndCompletesTheJobs) {
  Result<ImportResult> imported = Import(Results(Export(), 1, carol_));
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  EXPECT_FALSE(imported->duplicate);
  EXPECT_EQ(imported->runs, 2);
  EXPECT_EQ(imported->jobs_completed, 2);
  EXPECT_EQ(imported->contributor, "carol");

  Result<std::vector<store::RunRecord>> runs = lab_->ListRunsOfJobs({"j1", "j2"});
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  for (const store::RunRecord& run : *runs) {
    EXPECT_TRUE(run.Complete()) << run.id;
    EXPECT_EQ(run.contributor, "carol");
    EXPECT_EQ(run.bundle_sha256, imported->sha256);
    EXPECT_EQ(run.imported_at_ms, kNow + 2000);
    EXPECT_EQ(run.agent_id, "carol/local-1");
    EXPECT_EQ(run.summary, R"({"done":{}})");
    EXPECT_EQ(*lab_->GetFingerprint(run.host_fingerprint_id), R"({"cpu":"rig"})");
    EXPECT_EQ(lab_->GetJob(run.job_id)->current_run_id, run.id);
  }
  std::vector<std::string> digests;
  ASSERT_TRUE(lab_->ScanDigests((*runs)[0].id, 0,
                                [&](uint64_t, std::string_view b) {
                                  digests.emplace_back(b);
                                  return true;
                                })
                  .ok());
  EXPECT_EQ(digests, (std::vector<std::string>{"d0", "d1", "d2", "d3", "d4"}));
  EXPECT_EQ(lab_->GetJob("j1")->state, store::JobState::kSucceeded);
  EXPECT_EQ(lab_->GetSigner(carol_.identity.sign_public)->sequence, 1u);
}

TEST_F(BundleTest, ALaterBundleOfTheSameRigAddsOnlyTheRunsNotYetImported) {
  std::string plan = Export();
  rig_ = store::MakeMemoryStore();  // the rig has finished j1 only
  PutExperiment(*rig_);
  PutRun(*rig_, "j1", 5, R"({"cpu":"rig"})");
  Result<ImportResult> first = Import(Results(plan, 1, carol_));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->runs, 1);

  PutRun(*rig_, "j2", 3, R"({"cpu":"rig"})");  // resumed, and finished j2 too
  Result<ImportResult> second = Import(Results(plan, 2, carol_));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->runs, 1);
  EXPECT_EQ(second->already_imported, 1);
  EXPECT_EQ(second->jobs_completed, 1);
  EXPECT_THAT(DescribeImport(*second), HasSubstr("1 more it holds were imported before"));
  EXPECT_EQ(lab_->ListRunsOfJobs({"j1", "j2"})->size(), 2u);  // j1's run is there once
  EXPECT_EQ(lab_->GetRun("carol:run-j1")->bundle_sha256, first->sha256);
}

TEST_F(BundleTest, ImportingTheSameBundleTwiceChangesNothingAndSaysSo) {
  std::string file = Results(Export(), 1, carol_);
  ASSERT_TRUE(Import(file).ok());
  Result<store::StoreState> before = lab_->LoadState();
  Result<ImportResult> again = Import(file);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->duplicate);
  EXPECT_THAT(DescribeImport(*again), HasSubstr("already imported"));
  EXPECT_THAT(DescribeImport(*again), HasSubstr("nothing changed"));
  EXPECT_EQ(*lab_->LoadState(), *before);
}

TEST_F(BundleTest, OnlyTheExportedCellsJobsAreInThePlanBundle) {
  PlanBundle plan = std::move(ReadPlanBundle(Export(kDay, {"kv=q8_0"}), "p")).value();
  EXPECT_EQ(plan.job_ids, (std::vector<std::string>{"j2"}));
  EXPECT_EQ(plan.cells, (std::vector<std::string>{"kv=q8_0"}));
  EXPECT_EQ(plan.expires_at_ms, kNow + kDay);
  EXPECT_EQ(plan.coordinator.name, "lab");
  Result<std::string> unknown =
      ExportPlanBundle(*lab_, {"exp", {"nope"}, kNow, kDay}, coordinator_);
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("the plan has no cell 'nope'; its cells: baseline, kv=q8_0"));
}

TEST_F(BundleTest, ThePlanBundlesPlanIsTheTypedDocumentsText) {
  PlanBundle plan = std::move(ReadPlanBundle(Export(kDay, {"kv=q8_0"}), "p")).value();
  Result<plan_document::Document> document = plan_document::ReadPlanJson(plan.plan_json);
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  EXPECT_EQ(plan.plan_json, plan_document::WritePlanJson(*document));
  ASSERT_EQ(document->jobs.size(), 1u);
  EXPECT_EQ(document->jobs[0].id, "j2");
}

TEST_F(BundleTest, APlanBundleWhosePlanIsNotAPlanDocumentIsRefused) {
  // The manifest's jobs match, but plan.json lacks the workloads every plan has.
  std::string fields = R"({"experiment":"exp","nonce":"n","created_at_ms":1,"expires_at_ms":2,)"
                       R"("cells":["baseline"],"jobs":["j1"],"model":null})";
  std::string bad_plan = R"({"schema":"orch.plan/1","experiment":{"name":"exp"},"cells":[],)"
                         R"("jobs":[{"id":"j1","workload":"w"}]})";
  std::string file =
      std::move(
          WriteBundle({std::string(kPlanKind), fields, {{"plan.json", bad_plan}}}, coordinator_))
          .value();
  Result<PlanBundle> read = ReadPlanBundle(file, "p.orchb");
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("plan bundle p.orchb: plan.json: plan.workloads"));
}

TEST_F(BundleTest, EveryFlippedByteIsRefusedAndNothingIsStored) {
  std::string file = Results(Export(), 1, carol_);
  for (size_t i = 0; i < file.size(); ++i) {
    std::string damaged = file;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x01);
    Result<ImportResult> imported = Import(damaged);
    ASSERT_FALSE(imported.ok()) << "byte " << i << " of " << file.size();
    EXPECT_THAT(imported.status().message(), HasSubstr("results.orchb")) << i;
  }
  ExpectNothingImported();
}

TEST_F(BundleTest, EachSectionNamesWhatFailed) {
  std::string file = Results(Export(), 1, carol_);
  auto flipped_at = [&](size_t at) {
    std::string damaged = file;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x01);
    return Import(damaged).status().message();
  };
  size_t nonce = file.find("\"nonce\":\"") + 10;  // a hex digit inside the manifest
  EXPECT_THAT(flipped_at(0), HasSubstr("not an orch bundle"));
  EXPECT_THAT(flipped_at(kMagic.size()), HasSubstr("format version"));
  EXPECT_THAT(flipped_at(kMagic.size() + 1 + 1), HasSubstr("expected section MANI"));
  EXPECT_THAT(flipped_at(kMagic.size() + 1 + 4), HasSubstr("the manifest"));
  EXPECT_THAT(flipped_at(nonce), HasSubstr("signature does not verify"));
  EXPECT_THAT(flipped_at(file.find("SIGN") + 12 + 5), HasSubstr("signature does not verify"));
  EXPECT_THAT(flipped_at(file.size() - 3), HasSubstr("is not the one the manifest lists"));
  EXPECT_THAT(Import(file + "x").status().message(), HasSubstr("follow the last blob"));
}

TEST_F(BundleTest, EveryTruncationIsRefused) {
  std::string file = Results(Export(), 1, carol_);
  for (size_t n = 0; n < file.size(); ++n) {
    ASSERT_FALSE(Import(file.substr(0, n)).ok()) << n;
  }
  EXPECT_THAT(Import(file.substr(0, file.size() / 2)).status().message(), HasSubstr("truncated"));
  ExpectNothingImported();
}

TEST_F(BundleTest, AnUnknownKeyIsRefusedWithItsIdAndHowToTrustIt) {
  protocol::SecretIdentity dave = Key("dave", "contributor");
  Result<ImportResult> imported = Import(Results(Export(), 1, dave));
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("unknown key: 'dave'"));
  EXPECT_THAT(imported.status().message(), HasSubstr(dave.identity.sign_public));
  EXPECT_THAT(imported.status().message(), HasSubstr("To trust it, cp dave.key keys/allowed/"));
  ExpectNothingImported();
}

TEST_F(BundleTest, AKeyUsingATrustedNameIsRefused) {
  protocol::SecretIdentity impostor = Key("carol", "contributor");  // same name, other key
  Result<ImportResult> imported = Import(Results(Export(), 1, impostor));
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("not the trusted key of that name"));
  ExpectNothingImported();
}

TEST_F(BundleTest, ReplayedAndRolledBackSequenceNumbersAreRefused) {
  std::string plan = Export();
  ASSERT_TRUE(Import(Results(plan, 5, carol_)).ok());
  Result<ImportResult> replay = Import(Results(plan, 5, carol_, kNow + 1500));  // same number
  ASSERT_FALSE(replay.ok());
  EXPECT_THAT(replay.status().message(), HasSubstr("a replay"));
  Result<ImportResult> rollback = Import(Results(plan, 4, carol_, kNow + 1500));
  ASSERT_FALSE(rollback.ok());
  EXPECT_THAT(rollback.status().message(), HasSubstr("a rollback"));
  EXPECT_EQ(lab_->LoadState()->runs.size(), 2u);  // only the first bundle's
  EXPECT_TRUE(Import(Results(plan, 6, carol_, kNow + 1500)).ok());
}

TEST_F(BundleTest, ResultsOfAnExpiredPlanBundleAreRefused) {
  std::string file = Results(Export(/*valid_for=*/kDay), 1, carol_);
  Result<ImportResult> late = Import(file, kNow + 2 * kDay);
  ASSERT_FALSE(late.ok());
  EXPECT_THAT(late.status().message(), HasSubstr("expired"));
  EXPECT_THAT(late.status().message(), HasSubstr("orch export exp"));
  ExpectNothingImported();
  EXPECT_TRUE(Import(file, kNow + kDay - 1).ok());
}

TEST_F(BundleTest, APlanBundleOfAnotherCoordinatorIsRefused) {
  protocol::SecretIdentity other = Key("other-lab", "coordinator");
  std::string foreign = std::move(ExportPlanBundle(*lab_, {"exp", {}, kNow, kDay}, other)).value();
  Result<ImportResult> imported = Import(Results(foreign, 1, carol_));
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("not by this coordinator"));
  ExpectNothingImported();
}

TEST_F(BundleTest, ARunOfAJobThePlanBundleDoesNotHoldIsRefused) {
  // A trusted contributor signs results of j1 against a plan bundle of kv=q8_0 only.
  PlanBundle plan = std::move(ReadPlanBundle(Export(kDay, {"kv=q8_0"}), "p")).value();
  plan.job_ids = {"j1", "j2"};  // the rig's own idea of the plan, not what was signed
  std::string file = std::move(WriteResultBundle(*rig_, plan, 1, kNow, carol_)).value().file;
  Result<ImportResult> imported = Import(file);
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(imported.status().message(), HasSubstr("the plan bundle has no such job"));
  ExpectNothingImported();
}

TEST_F(BundleTest, AJobInFlightInTheLabIsNotTakenOverButItsRunIsKept) {
  store::JobRecord running;
  running.id = "j1";
  running.experiment = "exp";
  running.state = store::JobState::kRunning;
  running.current_run_id = "lab-run";
  store::RunRecord lab_run;
  lab_run.id = "lab-run";
  lab_run.job_id = "j1";
  ASSERT_TRUE(lab_->Apply({.job = running, .run = lab_run, .events = {}}).ok());
  Result<ImportResult> imported = Import(Results(Export(), 1, carol_));
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  EXPECT_EQ(imported->runs, 2);
  EXPECT_EQ(imported->jobs_completed, 1);
  EXPECT_EQ(lab_->GetJob("j1")->current_run_id, "lab-run");
  EXPECT_EQ(lab_->ListRunsOfJobs({"j1"})->size(), 2u);
}

}  // namespace
}  // namespace orch::bundle
