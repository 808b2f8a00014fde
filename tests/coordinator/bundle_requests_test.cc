// Export and import through the coordinator service (docs/bundles.md): a plan bundle is
// signed with the coordinator's key, a result bundle larger than one frame arrives in
// parts and is assembled, and the jobs it completed are no longer handed out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "bundle/plan_bundle.h"
#include "bundle/result_bundle.h"
#include "store/memory_store.h"
#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

class BundleRequestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::remove_all(keys_);
    ASSERT_TRUE(protocol::WriteIdentity(carol_, keys_.string(), false).ok());
    h_.service().SetBundleKeys({lab_, keys_.string()});
    ASSERT_TRUE(h_.Submit(SmallSpec("exp", 2)).ok);
  }
  void TearDown() override { fs::remove_all(keys_); }

  bundle::PlanBundle Export() {
    protocol::ExportReply reply =
        h_.Ask<protocol::ExportReply>(protocol::ExportRequest{"exp", {}, 86'400'000});
    EXPECT_TRUE(reply.ok) << reply.message;
    return std::move(bundle::ReadPlanBundle(reply.bundle, "plan")).value();
  }

  // The rig's results for every job of `plan`, each run `positions` digests of 1,000
  // random bytes (they do not compress).
  std::string Results(const bundle::PlanBundle& plan, int positions) {
    return Results(plan, positions, carol_);
  }
  std::string Results(const bundle::PlanBundle& plan, int positions,
                      const protocol::SecretIdentity& signer) {
    std::unique_ptr<store::Store> rig = store::MakeMemoryStore();
    std::vector<store::JobRecord> jobs;
    for (const std::string& id : plan.job_ids) {
      store::JobRecord job;
      job.id = id;
      job.experiment = plan.experiment;
      jobs.push_back(job);
    }
    EXPECT_TRUE(rig->PutPlan({plan.experiment, plan.plan_json}, jobs).ok());
    std::mt19937 random(7);
    for (store::JobRecord job : jobs) {
      store::RunRecord run;
      run.id = "rig-" + job.id.substr(0, 8);
      run.job_id = job.id;
      run.agent_id = "local-1";
      run.state = store::RunState::kRunning;
      job.state = store::JobState::kRunning;
      job.current_run_id = run.id;
      EXPECT_TRUE(rig->Apply({.job = job, .run = run, .events = {}}).ok());
      std::vector<store::DigestRecord> digests;
      for (int p = 0; p < positions; ++p) {
        std::string bytes(1000, '\0');
        for (char& c : bytes) c = static_cast<char>(random());
        digests.push_back({static_cast<uint64_t>(p), bytes});
      }
      EXPECT_TRUE(rig->AppendChunk(run.id, 0, digests).ok());
      job.state = store::JobState::kSucceeded;
      store::RunOutcome outcome;
      outcome.chunks_expected = 1;
      outcome.summary = "{}";
      EXPECT_TRUE(rig->FinishRun(run.id, outcome, job).ok());
    }
    return std::move(bundle::WriteResultBundle(*rig, plan, 1, h_.now().count(), signer))
        .value()
        .file;
  }

  // Sends `file` in parts of `part_bytes` from one CLI peer; every reply, in order.
  std::vector<protocol::CommandReply> Upload(const std::string& file, size_t part_bytes) {
    auto cli = h_.Peer("cli-import");
    std::vector<protocol::CommandReply> replies;
    for (size_t offset = 0; offset < file.size(); offset += part_bytes) {
      size_t n = std::min(part_bytes, file.size() - offset);
      cli->Send(
          protocol::ImportRequest{file.substr(offset, n), "r.orchb", "u-1", offset, file.size()});
      h_.Pump();
      for (const protocol::CommandReply& reply : OfKind<protocol::CommandReply>(cli->Take())) {
        replies.push_back(reply);
      }
    }
    return replies;
  }

  CoordinatorHarness h_;
  fs::path keys_ = fs::temp_directory_path() / ("orch-bundle-keys-" + std::to_string(::getpid()));
  protocol::SecretIdentity lab_ =
      std::move(protocol::GenerateIdentity("lab", "coordinator")).value();
  protocol::SecretIdentity carol_ =
      std::move(protocol::GenerateIdentity("carol", "contributor")).value();
};

TEST_F(BundleRequestsTest, APlainCoordinatorHasNoKeyToSignWith) {
  h_.service().SetBundleKeys({});
  protocol::ExportReply reply =
      h_.Ask<protocol::ExportReply>(protocol::ExportRequest{"exp", {}, 1000});
  EXPECT_FALSE(reply.ok);
  EXPECT_THAT(reply.message, HasSubstr("no key of its own"));
  EXPECT_TRUE(reply.bundle.empty());
}

TEST_F(BundleRequestsTest, ThePlanBundleIsSignedByTheCoordinatorsKey) {
  bundle::PlanBundle plan = Export();
  EXPECT_EQ(plan.coordinator.sign_public, lab_.identity.sign_public);
  EXPECT_EQ(plan.experiment, "exp");
  EXPECT_THAT(plan.job_ids, SizeIs(2));
  EXPECT_EQ(plan.expires_at_ms, h_.now().count() + 86'400'000);
  protocol::ExportReply unknown =
      h_.Ask<protocol::ExportReply>(protocol::ExportRequest{"exp", {"kv=q8_0"}, 1000});
  EXPECT_FALSE(unknown.ok);
  EXPECT_THAT(unknown.message, HasSubstr("the plan has no cell 'kv=q8_0'; its cells: baseline"));
}

TEST_F(BundleRequestsTest, ABundleLargerThanAFrameArrivesInPartsAndCompletesItsJobs) {
  std::string file = Results(Export(), 6'000);  // two runs of ~6 MB each
  ASSERT_GT(file.size(), protocol::kMaxFrameBytes / 2);
  std::vector<protocol::CommandReply> replies = Upload(file, 4 << 20);
  ASSERT_EQ(replies.size(), (file.size() + (4 << 20) - 1) / (4 << 20));
  for (size_t i = 0; i + 1 < replies.size(); ++i) {
    EXPECT_TRUE(replies[i].ok);
    EXPECT_THAT(replies[i].message, HasSubstr("received"));
  }
  EXPECT_TRUE(replies.back().ok) << replies.back().message;
  EXPECT_THAT(replies.back().message, HasSubstr("imported 2 runs of exp from bundle 1 of carol"));

  // The core took the store's word: both jobs are done, nothing is left to hand out.
  protocol::StatusReply status = h_.AllJobs();
  ASSERT_THAT(status.experiments, SizeIs(1));
  EXPECT_EQ(status.experiments[0].succeeded, 2u);
  EXPECT_EQ(status.experiments[0].pending, 0u);
}

// Regression: every import reloaded the whole store into the core (all plans, jobs and
// runs: seconds on a lab's store, on the coordinator's one thread).
TEST_F(BundleRequestsTest, AnImportTellsTheCoreItsJobsWithoutReloadingTheStore) {
  std::string file = Results(Export(), 10);
  int64_t loads = h_.failing().state_loads();
  auto cli = h_.Peer("cli-import");
  cli->Send(protocol::ImportRequest{file, "r.orchb", "", 0, 0});
  h_.Pump();
  std::vector<protocol::CommandReply> replies = OfKind<protocol::CommandReply>(cli->Take());
  ASSERT_THAT(replies, SizeIs(1));
  EXPECT_TRUE(replies[0].ok) << replies[0].message;
  EXPECT_EQ(h_.failing().state_loads(), loads);

  protocol::StatusReply status = h_.AllJobs();
  ASSERT_THAT(status.experiments, SizeIs(1));
  EXPECT_EQ(status.experiments[0].succeeded, 2u);
  EXPECT_EQ(status.experiments[0].pending, 0u);
  auto agent = h_.Peer("box-1");
  agent->Hello();
  h_.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(0));
}

TEST_F(BundleRequestsTest, APartOutOfOrderDropsTheUploadAndStoresNothing) {
  std::string file = Results(Export(), 10);
  auto cli = h_.Peer("cli-import");
  cli->Send(protocol::ImportRequest{file.substr(0, 100), "r.orchb", "u-2", 0, file.size()});
  cli->Send(protocol::ImportRequest{file.substr(200, 100), "r.orchb", "u-2", 200, file.size()});
  h_.Pump();
  std::vector<protocol::CommandReply> replies = OfKind<protocol::CommandReply>(cli->Take());
  ASSERT_THAT(replies, SizeIs(2));
  EXPECT_TRUE(replies[0].ok);
  EXPECT_FALSE(replies[1].ok);
  EXPECT_THAT(replies[1].message, HasSubstr("came out of order"));
  cli->Send(protocol::ImportRequest{file.substr(100), "r.orchb", "u-2", 100, file.size()});
  h_.Pump();
  replies = OfKind<protocol::CommandReply>(cli->Take());
  ASSERT_THAT(replies, SizeIs(1));
  EXPECT_FALSE(replies[0].ok);  // the upload was dropped: its rest is out of order too
  EXPECT_EQ(h_.AllJobs().experiments.at(0).succeeded, 0u);
}

TEST_F(BundleRequestsTest, AnUploadAboveTheLimitIsRefusedAtItsFirstPart) {
  protocol::CommandReply reply = h_.Ask<protocol::CommandReply>(
      protocol::ImportRequest{"ORCHBNDL", "huge.orchb", "u-3", 0, kMaxUploadBytes + 1});
  EXPECT_FALSE(reply.ok);
  EXPECT_THAT(reply.message, HasSubstr("orch import --data-dir"));
}

// An admitted key of another role is not told to copy itself into the allowed keys
// (it is there already): it is told its role and that bundles need a contributor key.
TEST_F(BundleRequestsTest, ABundleSignedByAnAdmittedKeyOfAnotherRoleIsToldItNeedsAContributorKey) {
  protocol::SecretIdentity bob = std::move(protocol::GenerateIdentity("bob", "submitter")).value();
  ASSERT_TRUE(protocol::WriteIdentity(bob, keys_.string(), false).ok());
  protocol::CommandReply reply = h_.Ask<protocol::CommandReply>(
      protocol::ImportRequest{Results(Export(), 2, bob), "bob.orchb"});
  EXPECT_FALSE(reply.ok);
  EXPECT_THAT(reply.message, HasSubstr("a key known here as 'bob' with role submitter"));
  EXPECT_THAT(reply.message, HasSubstr("result bundles need a key of role contributor"));
  EXPECT_THAT(reply.message, HasSubstr("orch keygen NAME --role contributor"));
  EXPECT_THAT(reply.message, Not(HasSubstr("cp bob.key")));
  EXPECT_EQ(h_.AllJobs().experiments.at(0).succeeded, 0u);
}

// `orch export` waits for an ExportReply: a refusal is that reply, and nothing else (a
// Reject too would reach a CLI that has already gone, or the next request's socket).
TEST_F(BundleRequestsTest, ARefusedExportIsAnsweredWithOneExportReplyOnly) {
  h_.service().SetAccessPolicy(AccessPolicy{.authenticated = true, .roles = {}});
  auto cli = h_.Peer("cli-export");
  cli->Send(protocol::ExportRequest{"exp", {}, 1000});
  h_.Pump();
  std::vector<protocol::Message> answers = cli->Take();
  ASSERT_THAT(answers, SizeIs(1));
  auto* reply = std::get_if<protocol::ExportReply>(&answers[0]);
  ASSERT_NE(reply, nullptr) << protocol::MessageName(answers[0]);
  EXPECT_FALSE(reply->ok);
  EXPECT_THAT(reply->message, HasSubstr("refused: "));
}

// Regression: an allocation failure while handling a request (here inside the store's
// import) aborted the coordinator (std::bad_alloc, uncaught). It is a refusal now, the
// core is rebuilt from the store, and the next request is served.
TEST_F(BundleRequestsTest, RunningOutOfMemoryOnARequestRefusesItAndKeepsServing) {
  std::string file = Results(Export(), 10);
  h_.failing().ExhaustMemoryOnWriteNumber(1);
  protocol::CommandReply reply =
      h_.Ask<protocol::CommandReply>(protocol::ImportRequest{file, "r.orchb", "", 0, 0});
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.message,
            "the coordinator ran out of memory handling this importRequest; nothing of it was "
            "stored");
  EXPECT_EQ(h_.service().out_of_memory(), 1u);
  h_.failing().Reset();
  h_.service().Tick(h_.now());  // rebuilds the core from the store
  EXPECT_EQ(h_.AllJobs().experiments.at(0).succeeded, 0u);
  reply = h_.Ask<protocol::CommandReply>(protocol::ImportRequest{file, "r.orchb", "", 0, 0});
  EXPECT_TRUE(reply.ok) << reply.message;
  EXPECT_EQ(h_.AllJobs().experiments.at(0).succeeded, 2u);
}

TEST_F(BundleRequestsTest, ABundleAboveTheConfiguredLimitIsRefusedNamingIt) {
  std::string file = Results(Export(), 200);  // 2 runs of 200 KB of digests
  h_.service().SetBundleKeys({lab_, keys_.string(), 300'000});
  protocol::CommandReply reply =
      h_.Ask<protocol::CommandReply>(protocol::ImportRequest{file, "r.orchb", "", 0, 0});
  EXPECT_FALSE(reply.ok);
  EXPECT_THAT(reply.message, HasSubstr("above the limit of 300000 bytes (max_bundle_bytes)"));
  EXPECT_EQ(h_.AllJobs().experiments.at(0).succeeded, 0u);
}

}  // namespace
}  // namespace orch::coordinator::testing
