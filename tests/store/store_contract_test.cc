// The Store contract, run against every implementation (RocksDB on disk, memory).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "store/failing_store.h"
#include "tests/store/store_harness.h"

namespace orch::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

PlanRecord Plan(const std::string& id) { return {.experiment = id, .json = R"({"jobs":3})"}; }

JobRecord Job(const std::string& experiment, const std::string& id) {
  JobRecord job;
  job.id = id;
  job.experiment = experiment;
  return job;
}

RunRecord RunOf(const std::string& id, const std::string& job_id) {
  RunRecord run;
  run.id = id;
  run.job_id = job_id;
  run.agent_id = "agent-a";
  run.lease_expiry_ms = 60'000;
  run.state = RunState::kRunning;
  run.host_fingerprint_id = "host-1";
  run.engine_fingerprint_id = "engine-1";
  return run;
}

RunOutcome Outcome(RunState state, int64_t chunks_expected) {
  RunOutcome outcome;
  outcome.state = state;
  outcome.chunks_expected = chunks_expected;
  return outcome;
}

EventRecord Event(const std::string& kind, const std::string& subject) {
  return {.time_ms = 1'000, .kind = kind, .subject = subject, .detail = "{}"};
}

std::vector<DigestRecord> Digests(std::initializer_list<uint64_t> positions) {
  std::vector<DigestRecord> records;
  for (uint64_t p : positions) records.push_back({p, "digest@" + std::to_string(p)});
  return records;
}

class StoreContractTest : public ::testing::TestWithParam<HarnessFactory> {
 protected:
  StoreContractTest() : harness_(GetParam().make()) {}

  Store& store() { return harness_->store(); }

  // A plan "exp" with jobs j1..j3 and a run r1 of j1.
  void SeedPlanAndRun() {
    ASSERT_TRUE(
        store().PutPlan(Plan("exp"), {Job("exp", "j1"), Job("exp", "j2"), Job("exp", "j3")}).ok());
    JobRecord assigned = Job("exp", "j1");
    assigned.state = JobState::kAssigned;
    assigned.attempts = 1;
    assigned.current_run_id = "r1";
    ASSERT_TRUE(store().Apply({.job = assigned, .run = RunOf("r1", "j1"), .events = {}}).ok());
  }

  std::vector<DigestRecord> ScanAll(const std::string& run_id, uint64_t from = 0) {
    std::vector<DigestRecord> out;
    Status status = store().ScanDigests(run_id, from, [&](uint64_t pos, std::string_view b) {
      out.push_back({pos, std::string(b)});
      return true;
    });
    EXPECT_TRUE(status.ok()) << status.ToString();
    return out;
  }

  std::vector<EventRecord> AllEvents(uint64_t from = 0) {
    std::vector<EventRecord> out;
    Status status = store().ScanEvents(from, [&](const EventRecord& e) {
      out.push_back(e);
      return true;
    });
    EXPECT_TRUE(status.ok()) << status.ToString();
    return out;
  }

  // Everything observable about the seeded store, for before/after comparisons.
  struct Snapshot {
    StoreState state;
    std::vector<DigestRecord> digests;
    std::vector<EventRecord> events;
    friend bool operator==(const Snapshot&, const Snapshot&) = default;
  };
  Snapshot Observe() {
    Result<StoreState> state = store().LoadState();
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return {state.ok() ? *state : StoreState{}, ScanAll("r1"), AllEvents()};
  }

  std::unique_ptr<StoreHarness> harness_;
};

TEST_P(StoreContractTest, PutPlanStoresPlanAndItsJobs) {
  Result<int> inserted = store().PutPlan(Plan("exp"), {Job("exp", "j1"), Job("exp", "j2")});
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  EXPECT_EQ(*inserted, 2);
  EXPECT_EQ(*store().GetPlan("exp"), Plan("exp"));
  EXPECT_EQ(*store().GetJob("j2"), Job("exp", "j2"));
}

TEST_P(StoreContractTest, ResubmittedPlanInsertsOnlyNewJobsAndKeepsJobState) {
  SeedPlanAndRun();
  Result<int> inserted =
      store().PutPlan(Plan("exp"), {Job("exp", "j1"), Job("exp", "j3"), Job("exp", "j4")});
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  EXPECT_EQ(*inserted, 1);
  EXPECT_EQ(store().GetJob("j1")->state, JobState::kAssigned);
  EXPECT_EQ(store().ListJobs("exp")->size(), 4u);
}

TEST_P(StoreContractTest, PutPlanRejectsAJobOfAnotherPlan) {
  Result<int> inserted = store().PutPlan(Plan("exp"), {Job("exp", "j1"), Job("other", "j2")});
  EXPECT_EQ(inserted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store().GetPlan("exp").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().GetJob("j1").status().code(), StatusCode::kNotFound);
}

TEST_P(StoreContractTest, PutPlanRejectsADifferentPlanUnderAStoredId) {
  ASSERT_TRUE(store().PutPlan(Plan("exp"), {}).ok());
  PlanRecord changed = Plan("exp");
  changed.json = "{}";
  EXPECT_EQ(store().PutPlan(changed, {}).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(*store().GetPlan("exp"), Plan("exp"));
}

TEST_P(StoreContractTest, ReplacePlanStoresTheNewJsonAndKeepsStoredJobs) {
  SeedPlanAndRun();
  PlanRecord edited = Plan("exp");
  edited.json = R"({"edited":true})";
  Result<int> inserted = store().ReplacePlan(edited, {Job("exp", "j1"), Job("exp", "j5")});
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  EXPECT_EQ(*inserted, 1);
  EXPECT_EQ(store().GetPlan("exp")->json, edited.json);
  EXPECT_EQ(store().GetJob("j1")->state, JobState::kAssigned);
  EXPECT_TRUE(store().GetJob("j2").ok());  // not listed any more, still stored
  EXPECT_TRUE(store().GetJob("j5").ok());
}

TEST_P(StoreContractTest, UnknownIdsAreNotFound) {
  EXPECT_EQ(store().GetPlan("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().GetJob("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().GetRun("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().GetFingerprint("nope").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store().ListJobs("nope")->empty());
  EXPECT_TRUE(ScanAll("nope").empty());
}

TEST_P(StoreContractTest, IdsOutsideOneTo255BytesAreInvalid) {
  EXPECT_EQ(store().GetJob("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store().PutPlan(Plan(std::string(256, 'p')), {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(store().PutPlan(Plan(std::string(255, 'p')), {}).ok());
}

TEST_P(StoreContractTest, ListJobsReturnsOneExperimentInJobIdOrder) {
  ASSERT_TRUE(store().PutPlan(Plan("exp"), {Job("exp", "b"), Job("exp", "a")}).ok());
  ASSERT_TRUE(store().PutPlan(Plan("ex"), {Job("ex", "c")}).ok());
  ASSERT_TRUE(store().PutPlan(Plan("exp2"), {Job("exp2", "d")}).ok());
  Result<std::vector<JobRecord>> jobs = store().ListJobs("exp");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_THAT(*jobs, ElementsAre(Job("exp", "a"), Job("exp", "b")));
}

TEST_P(StoreContractTest, ApplyWritesJobRunAndEventsTogether) {
  SeedPlanAndRun();
  JobRecord running = *store().GetJob("j1");
  running.state = JobState::kRunning;
  RunRecord run = *store().GetRun("r1");
  run.lease_expiry_ms = 90'000;
  Status status = store().Apply(
      {.job = running, .run = run, .events = {Event("run.started", "r1"), Event("x", "y")}});
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(*store().GetJob("j1"), running);
  EXPECT_EQ(store().GetRun("r1")->lease_expiry_ms, 90'000);
  std::vector<EventRecord> events = AllEvents();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].seq, 1u);
  EXPECT_EQ(events[0].kind, "run.started");
  EXPECT_EQ(events[1].seq, 2u);
}

TEST_P(StoreContractTest, ApplyToAnUnknownJobChangesNothing) {
  SeedPlanAndRun();
  Snapshot before = Observe();
  EXPECT_EQ(
      store().Apply({.job = Job("exp", "ghost"), .run = {}, .events = {Event("e", "s")}}).code(),
      StatusCode::kNotFound);
  EXPECT_EQ(store().Apply({.job = {}, .run = RunOf("r2", "ghost"), .events = {}}).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Observe(), before);
}

TEST_P(StoreContractTest, ApplyKeepsStoreMaintainedRunFields) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().AppendChunk("r1", 0, Digests({0, 1})).ok());
  ASSERT_TRUE(store().Apply({.job = {}, .run = RunOf("r1", "j1"), .events = {}}).ok());
  EXPECT_EQ(store().GetRun("r1")->chunks_received, 1);
}

TEST_P(StoreContractTest, FinishRunStoresTheSummaryAndApplyKeepsIt) {
  SeedPlanAndRun();
  RunOutcome outcome = Outcome(RunState::kSucceeded, 0);
  outcome.summary = R"({"done":{"token_text":{"3":" math"}}})";
  ASSERT_TRUE(store().FinishRun("r1", outcome, std::nullopt).ok());
  EXPECT_EQ(store().GetRun("r1")->summary, outcome.summary);
  RunRecord rewritten = RunOf("r1", "j1");
  rewritten.summary = "ignored";
  ASSERT_TRUE(store().Apply({.job = {}, .run = rewritten, .events = {}}).ok());
  EXPECT_EQ(store().GetRun("r1")->summary, outcome.summary);
  Result<StoreState> state = store().LoadState();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->runs.size(), 1u);
  EXPECT_EQ(state->runs[0].summary, outcome.summary);
}

TEST_P(StoreContractTest, AppendChunkStoresRecordsAndCountsTheChunk) {
  SeedPlanAndRun();
  Result<WriteOutcome> outcome = store().AppendChunk("r1", 0, Digests({0, 1, 2}));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(*outcome, WriteOutcome::kStored);
  EXPECT_EQ(ScanAll("r1"), Digests({0, 1, 2}));
  EXPECT_EQ(store().GetRun("r1")->chunks_received, 1);
}

TEST_P(StoreContractTest, ResentChunkIsStoredOnceAndReportedDuplicate) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().AppendChunk("r1", 7, Digests({0, 1})).ok());
  Result<WriteOutcome> again = store().AppendChunk("r1", 7, {{0, "changed"}, {5, "new"}});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, WriteOutcome::kDuplicate);
  EXPECT_EQ(ScanAll("r1"), Digests({0, 1}));
  EXPECT_EQ(store().GetRun("r1")->chunks_received, 1);
}

TEST_P(StoreContractTest, ChunkOfAnUnknownRunIsNotFound) {
  SeedPlanAndRun();
  EXPECT_EQ(store().AppendChunk("r9", 0, Digests({0})).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(ScanAll("r9").empty());
}

TEST_P(StoreContractTest, FinishRunRecordsOutcomeAndJobAndIsIdempotent) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().AppendChunk("r1", 0, Digests({0})).ok());
  EXPECT_FALSE(store().GetRun("r1")->Complete());
  JobRecord done = *store().GetJob("j1");
  done.state = JobState::kSucceeded;
  RunOutcome outcome = Outcome(RunState::kSucceeded, 2);
  Result<WriteOutcome> finished = store().FinishRun("r1", outcome, done);
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_EQ(*finished, WriteOutcome::kStored);
  EXPECT_EQ(store().GetJob("j1")->state, JobState::kSucceeded);
  RunRecord run = *store().GetRun("r1");
  EXPECT_TRUE(run.finished);
  EXPECT_EQ(run.state, RunState::kSucceeded);
  EXPECT_FALSE(run.Complete());  // chunk 1 of 2 is still missing
  EXPECT_EQ(*store().AppendChunk("r1", 1, Digests({1})), WriteOutcome::kStored);
  EXPECT_TRUE(store().GetRun("r1")->Complete());

  RunOutcome other = Outcome(RunState::kFailed, 0);
  other.exit_status = 3;
  other.error = "late";
  EXPECT_EQ(*store().FinishRun("r1", other, std::nullopt), WriteOutcome::kDuplicate);
  EXPECT_EQ(store().GetRun("r1")->state, RunState::kSucceeded);
}

// The coordinator decides on the record these writes hand back instead of reading it.
TEST_P(StoreContractTest, RunWritesHandBackTheRunAsStored) {
  SeedPlanAndRun();
  RunRecord handed;
  ASSERT_EQ(*store().AppendChunk("r1", 0, Digests({0}), &handed), WriteOutcome::kStored);
  EXPECT_EQ(handed.chunks_received, 1);
  EXPECT_EQ(handed, *store().GetRun("r1"));
  RunRecord again;
  ASSERT_EQ(*store().AppendChunk("r1", 0, Digests({0}), &again), WriteOutcome::kDuplicate);
  EXPECT_EQ(again, *store().GetRun("r1"));

  RunRecord finished;
  ASSERT_EQ(*store().FinishRun("r1", Outcome(RunState::kSucceeded, 2), std::nullopt, &finished),
            WriteOutcome::kStored);
  EXPECT_TRUE(finished.finished);
  EXPECT_EQ(finished.chunks_expected, 2);
  EXPECT_FALSE(finished.Complete());
  EXPECT_EQ(finished, *store().GetRun("r1"));
  RunRecord late;
  ASSERT_EQ(*store().AppendChunk("r1", 1, Digests({1}), &late), WriteOutcome::kStored);
  EXPECT_TRUE(late.Complete());
  EXPECT_EQ(late, *store().GetRun("r1"));
  RunRecord resent;
  ASSERT_EQ(*store().FinishRun("r1", Outcome(RunState::kFailed, 0), std::nullopt, &resent),
            WriteOutcome::kDuplicate);
  EXPECT_EQ(resent.state, RunState::kSucceeded);
  EXPECT_EQ(resent, *store().GetRun("r1"));
}

TEST_P(StoreContractTest, RunIsCompleteWhenAllAnnouncedChunksAndFinishAreStored) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().AppendChunk("r1", 0, Digests({0})).ok());
  ASSERT_TRUE(store().AppendChunk("r1", 1, Digests({1})).ok());
  RunOutcome outcome = Outcome(RunState::kSucceeded, 2);
  ASSERT_TRUE(store().FinishRun("r1", outcome, std::nullopt).ok());
  EXPECT_TRUE(store().GetRun("r1")->Complete());
}

TEST_P(StoreContractTest, ChunkBeyondTheAnnouncedCountIsRejectedButAResendIsDuplicate) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().AppendChunk("r1", 0, Digests({0})).ok());
  ASSERT_TRUE(store().FinishRun("r1", Outcome(RunState::kSucceeded, 1), std::nullopt).ok());
  EXPECT_EQ(store().AppendChunk("r1", 1, Digests({1})).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(*store().AppendChunk("r1", 0, Digests({0})), WriteOutcome::kDuplicate);
  EXPECT_EQ(ScanAll("r1"), Digests({0}));
}

TEST_P(StoreContractTest, DigestsScanInPositionOrderAcrossByteBoundaries) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().Apply({.job = {}, .run = RunOf("r10", "j2"), .events = {}}).ok());
  std::vector<uint64_t> positions = {
      0, 1, 255, 256, 257, 65535, 65536, 65537, 1u << 24, 1ull << 32, (1ull << 40) + 3};
  std::vector<uint64_t> shuffled = positions;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(42));
  for (size_t i = 0; i < shuffled.size(); ++i) {
    ASSERT_TRUE(
        store().AppendChunk("r1", i, {{shuffled[i], "p" + std::to_string(shuffled[i])}}).ok());
  }
  ASSERT_TRUE(store().AppendChunk("r10", 0, Digests({3})).ok());  // id extends "r1"

  std::vector<uint64_t> scanned;
  for (const DigestRecord& record : ScanAll("r1")) {
    EXPECT_EQ(record.bytes, "p" + std::to_string(record.position));
    scanned.push_back(record.position);
  }
  EXPECT_EQ(scanned, positions);
  EXPECT_EQ(ScanAll("r10"), Digests({3}));
  EXPECT_EQ(ScanAll("r1", 256).front().position, 256u);
  EXPECT_EQ(ScanAll("r1", 258).front().position, 65535u);
}

TEST_P(StoreContractTest, DigestScanStopsWhenTheVisitorSaysSo) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().AppendChunk("r1", 0, Digests({0, 1, 2, 3})).ok());
  int visited = 0;
  ASSERT_TRUE(
      store().ScanDigests("r1", 0, [&](uint64_t, std::string_view) { return ++visited < 2; }).ok());
  EXPECT_EQ(visited, 2);
}

TEST_P(StoreContractTest, FingerprintIsStoredOnce) {
  EXPECT_EQ(*store().PutFingerprint("host-1", R"({"cpu":"x"})"), WriteOutcome::kStored);
  EXPECT_EQ(*store().PutFingerprint("host-1", R"({"cpu":"x"})"), WriteOutcome::kDuplicate);
  EXPECT_EQ(store().PutFingerprint("host-1", R"({"cpu":"y"})").status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(*store().GetFingerprint("host-1"), R"({"cpu":"x"})");
}

TEST_P(StoreContractTest, EventsGetIncreasingSequenceNumbers) {
  EXPECT_EQ(*store().AppendEvent(Event("a", "1")), 1u);
  EXPECT_EQ(*store().AppendEvent(Event("b", "2")), 2u);
  EXPECT_EQ(*store().AppendEvent(Event("c", "3")), 3u);
  std::vector<EventRecord> tail = AllEvents(2);
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0].kind, "b");
  EXPECT_EQ(tail[1].seq, 3u);
  EXPECT_EQ(store().LoadState()->last_event_seq, 3u);
}

TEST_P(StoreContractTest, LoadStateReturnsPlansJobsAndRuns) {
  SeedPlanAndRun();
  Result<StoreState> state = store().LoadState();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_THAT(state->plans, ElementsAre(Plan("exp")));
  ASSERT_EQ(state->jobs.size(), 3u);
  EXPECT_EQ(state->jobs[0].current_run_id, "r1");
  EXPECT_THAT(state->runs, ElementsAre(RunOf("r1", "j1")));
}

TEST_P(StoreContractTest, ReopenKeepsEverything) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().AppendChunk("r1", 0, Digests({0, 300, 70000})).ok());
  ASSERT_TRUE(store().PutFingerprint("host-1", "{}").ok());
  ASSERT_TRUE(store().AppendEvent(Event("a", "1")).ok());
  Snapshot before = Observe();

  harness_->Reopen();

  EXPECT_EQ(Observe(), before);
  EXPECT_EQ(*store().GetFingerprint("host-1"), "{}");
  EXPECT_EQ(*store().AppendChunk("r1", 0, Digests({0})), WriteOutcome::kDuplicate);
  EXPECT_EQ(*store().AppendEvent(Event("b", "2")), 2u);  // the sequence continues
}

TEST_P(StoreContractTest, SyncKeepsWhatWasWrittenAndChangesNothingVisible) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().AppendChunk("r1", 0, Digests({0, 1})).ok());
  Snapshot before = Observe();
  ASSERT_TRUE(store().Sync().ok());
  EXPECT_EQ(Observe(), before);
  ASSERT_TRUE(store().Sync().ok()) << "a sync with nothing new is fine";
  harness_->Reopen();
  EXPECT_EQ(Observe(), before);
}

TEST_P(StoreContractTest, ListRunsOfJobsReturnsOnlyTheRunsOfThoseJobs) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().PutPlan(Plan("other"), {Job("other", "k1")}).ok());
  ASSERT_TRUE(store().Apply({.job = std::nullopt, .run = RunOf("r2", "k1"), .events = {}}).ok());
  ASSERT_TRUE(store().Apply({.job = std::nullopt, .run = RunOf("r0", "j1"), .events = {}}).ok());
  Result<std::vector<RunRecord>> runs = store().ListRunsOfJobs({"j1", "j2"});
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].id, "r0");
  EXPECT_EQ((*runs)[1].id, "r1");
}

// A run written by a newer orch: version byte 9, then the fields every version starts
// with (run id, job id), then fields this orch does not know.
std::string NewerRun(const std::string& id, const std::string& job_id) {
  std::string bytes(1, '\x09');
  bytes += static_cast<char>(id.size()) + id;
  bytes += static_cast<char>(job_id.size()) + job_id;
  return bytes + "future fields";
}

TEST_P(StoreContractTest, ANewerRunOfAnotherExperimentDoesNotHideThisOnesRuns) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().PutPlan(Plan("other"), {Job("other", "k1")}).ok());
  ASSERT_TRUE(store().Apply({.job = std::nullopt, .run = RunOf("r2", "k1"), .events = {}}).ok());
  harness_->Corrupt(Table::kRuns, "r2", NewerRun("r2", "k1"));

  Result<std::vector<RunRecord>> mine = store().ListRunsOfJobs({"j1", "j2", "j3"});
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  ASSERT_EQ(mine->size(), 1u);
  EXPECT_EQ((*mine)[0].id, "r1");

  Result<std::vector<RunRecord>> theirs = store().ListRunsOfJobs({"k1"});
  EXPECT_EQ(theirs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(theirs.status().message(),
              HasSubstr("runs/r2: written by a newer orch (format version 9, this orch reads up "
                        "to 6)"));
  Result<RunRecord> run = store().GetRun("r2");
  EXPECT_EQ(run.status().code(), StatusCode::kFailedPrecondition);
}

TEST_P(StoreContractTest, AnUnreadableRunFailsListRunsOfJobsForEveryone) {
  SeedPlanAndRun();
  harness_->Corrupt(Table::kRuns, "r1", std::string("\x01\x05r1", 4));
  EXPECT_EQ(store().ListRunsOfJobs({"k1"}).status().code(), StatusCode::kDataLoss)
      << "a run whose job cannot be read may be anyone's";
}

TEST_P(StoreContractTest, CorruptValueIsDataLossNamingTheKey) {
  SeedPlanAndRun();
  ASSERT_TRUE(store().AppendEvent(Event("a", "1")).ok());
  harness_->Corrupt(Table::kRuns, "r1", std::string("\x01\x05r1", 4));
  Result<RunRecord> run = store().GetRun("r1");
  EXPECT_EQ(run.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(run.status().message(), HasSubstr("runs/r1"));
  EXPECT_EQ(store().LoadState().status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(store().AppendChunk("r1", 0, Digests({0})).status().code(), StatusCode::kDataLoss);

  harness_->Corrupt(Table::kJobs, "j2", std::string("\x00", 1));
  EXPECT_EQ(store().ListJobs("exp").status().code(), StatusCode::kDataLoss);
  harness_->Corrupt(Table::kEvents, EventKey(1), "");
  EXPECT_EQ(store().ScanEvents(0, [](const EventRecord&) { return true; }).code(),
            StatusCode::kDataLoss);
}

// --- atomicity under injected write failures ---

TEST_P(StoreContractTest, FailedWriteOfEachKindChangesNothing) {
  SeedPlanAndRun();
  FailingStore failing(store());
  failing.FailWritesFrom(1);
  Snapshot before = Observe();
  JobRecord done = Job("exp", "j1");
  done.state = JobState::kSucceeded;

  EXPECT_EQ(failing.PutPlan(Plan("exp2"), {Job("exp2", "k1")}).status().code(),
            StatusCode::kIoError);
  EXPECT_EQ(
      failing.Apply({.job = done, .run = RunOf("r1", "j1"), .events = {Event("e", "s")}}).code(),
      StatusCode::kIoError);
  Result<WriteOutcome> chunk = failing.AppendChunk("r1", 0, Digests({0, 1}));
  EXPECT_EQ(chunk.status().code(), StatusCode::kIoError);
  EXPECT_THAT(chunk.status().message(), HasSubstr("disk full"));
  EXPECT_EQ(failing.FinishRun("r1", Outcome(RunState::kSucceeded, 0), done).status().code(),
            StatusCode::kIoError);
  EXPECT_EQ(failing.PutFingerprint("h", "{}").status().code(), StatusCode::kIoError);
  EXPECT_EQ(failing.AppendEvent(Event("e", "s")).status().code(), StatusCode::kIoError);
  EXPECT_EQ(failing.failed_writes(), 6);

  EXPECT_EQ(Observe(), before);
  EXPECT_EQ(failing.GetFingerprint("h").status().code(), StatusCode::kNotFound);
}

// A bundle of carol's (sequence `sequence`) with one complete run of j2 in two chunks.
BundleImport CarolsBundle(const std::string& sha, uint64_t sequence,
                          const std::string& run_id = "b-r1") {
  BundleImport import;
  import.bundle = {.sha256 = sha,
                   .contributor = "carol",
                   .signer = "carol-key",
                   .sequence = sequence,
                   .experiment = "exp",
                   .nonce = "n1",
                   .imported_at_ms = 5'000,
                   .run_ids = {
                     run_id
                   }};
  ImportedRun run;
  run.run = RunOf(run_id, "j2");
  run.run.state = RunState::kSucceeded;
  run.run.finished = true;
  run.run.chunks_expected = 2;
  run.run.contributor = "carol";
  run.run.bundle_sha256 = sha;
  run.run.imported_at_ms = 5'000;
  run.run.host_fingerprint_id = "carol-host";
  run.chunks = {Digests({0, 1}), Digests({2})};
  import.runs.push_back(run);
  import.fingerprints = {{ "carol-host", R"({"cpu":"carol"})" }};
  JobRecord done = Job("exp", "j2");
  done.state = JobState::kSucceeded;
  done.current_run_id = run_id;
  import.jobs = {done};
  import.events = {Event("bundle.imported", sha)};
  return import;
}

TEST_P(StoreContractTest, ImportBundleStoresACompleteRunWithItsProvenanceInOneWrite) {
  SeedPlanAndRun();
  BundleImport import = CarolsBundle("sha-1", 1);
  ASSERT_EQ(*store().ImportBundle(import), WriteOutcome::kStored);

  Result<RunRecord> run = store().GetRun("b-r1");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->Complete());
  EXPECT_EQ(run->chunks_received, 2);
  EXPECT_EQ(run->contributor, "carol");
  EXPECT_EQ(run->bundle_sha256, "sha-1");
  EXPECT_EQ(run->imported_at_ms, 5'000);
  EXPECT_EQ(ScanAll("b-r1"), Digests({0, 1, 2}));
  EXPECT_EQ(store().GetJob("j2")->state, JobState::kSucceeded);
  EXPECT_EQ(*store().GetFingerprint("carol-host"), R"({"cpu":"carol"})");
  EXPECT_EQ(*store().GetBundle("sha-1"), import.bundle);
  EXPECT_EQ(*store().GetSigner("carol-key"), (SignerRecord{"carol-key", 1, "sha-1"}));
  EXPECT_EQ(AllEvents().back().kind, "bundle.imported");

  harness_->Reopen();
  EXPECT_TRUE(store().GetRun("b-r1")->Complete());
  EXPECT_EQ(*store().GetBundle("sha-1"), import.bundle);
}

TEST_P(StoreContractTest, ImportingTheSameBundleAgainChangesNothing) {
  SeedPlanAndRun();
  ASSERT_EQ(*store().ImportBundle(CarolsBundle("sha-1", 1)), WriteOutcome::kStored);
  Snapshot before = Observe();
  EXPECT_EQ(*store().ImportBundle(CarolsBundle("sha-1", 1)), WriteOutcome::kDuplicate);
  EXPECT_EQ(Observe(), before);
}

TEST_P(StoreContractTest, AReplayedOrRolledBackSequenceNumberIsRefusedAndNothingStored) {
  SeedPlanAndRun();
  ASSERT_EQ(*store().ImportBundle(CarolsBundle("sha-5", 5)), WriteOutcome::kStored);
  Snapshot before = Observe();

  Result<WriteOutcome> replay = store().ImportBundle(CarolsBundle("sha-other", 5, "b-r2"));
  EXPECT_EQ(replay.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(replay.status().message(),
              HasSubstr("sequence number 5 of key carol is already used by bundle sha-5"));
  EXPECT_THAT(replay.status().message(), HasSubstr("a replay"));
  Result<WriteOutcome> rollback = store().ImportBundle(CarolsBundle("sha-old", 4, "b-r3"));
  EXPECT_EQ(rollback.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(rollback.status().message(), HasSubstr("is below"));
  EXPECT_THAT(rollback.status().message(), HasSubstr("a rollback"));
  EXPECT_EQ(Observe(), before);
  EXPECT_EQ(store().GetRun("b-r2").status().code(), StatusCode::kNotFound);

  EXPECT_EQ(*store().ImportBundle(CarolsBundle("sha-6", 6, "b-r4")), WriteOutcome::kStored);
}

TEST_P(StoreContractTest, ABundleThatCannotBeStoredWholeStoresNothing) {
  SeedPlanAndRun();
  Snapshot before = Observe();
  BundleImport unknown_job = CarolsBundle("sha-1", 1);
  unknown_job.runs[0].run.job_id = "no-such-job";
  EXPECT_EQ(store().ImportBundle(unknown_job).status().code(), StatusCode::kNotFound);
  BundleImport existing_run = CarolsBundle("sha-1", 1, "r1");
  EXPECT_EQ(store().ImportBundle(existing_run).status().code(), StatusCode::kAlreadyExists);
  BundleImport short_chunks = CarolsBundle("sha-1", 1);
  short_chunks.runs[0].run.chunks_expected = 3;
  EXPECT_EQ(store().ImportBundle(short_chunks).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(store().PutFingerprint("carol-host", R"({"cpu":"other"})").ok());
  before = Observe();
  EXPECT_EQ(store().ImportBundle(CarolsBundle("sha-1", 1)).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(Observe(), before);
  EXPECT_EQ(store().GetBundle("sha-1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().GetSigner("carol-key").status().code(), StatusCode::kNotFound);

  FailingStore failing(store());
  failing.FailWritesFrom(1);
  BundleImport fine = CarolsBundle("sha-2", 1);
  fine.fingerprints.clear();
  EXPECT_EQ(failing.ImportBundle(fine).status().code(), StatusCode::kIoError);
  EXPECT_EQ(Observe(), before);
  EXPECT_EQ(store().GetBundle("sha-2").status().code(), StatusCode::kNotFound);
}

TEST_P(StoreContractTest, ChunkRetriedAfterAFailedWriteIsStoredOnce) {
  SeedPlanAndRun();
  FailingStore failing(store());
  failing.FailWriteNumber(2);
  ASSERT_TRUE(failing.AppendChunk("r1", 0, Digests({0})).ok());
  EXPECT_FALSE(failing.AppendChunk("r1", 1, Digests({1})).ok());  // "disk full"
  EXPECT_EQ(*failing.AppendChunk("r1", 1, Digests({1})), WriteOutcome::kStored);
  EXPECT_EQ(*failing.AppendChunk("r1", 1, Digests({1})), WriteOutcome::kDuplicate);
  EXPECT_EQ(ScanAll("r1"), Digests({0, 1}));
  EXPECT_EQ(store().GetRun("r1")->chunks_received, 2);
}

TEST_P(StoreContractTest, EventSequenceHasNoGapAfterAFailedAppend) {
  FailingStore failing(store());
  failing.FailWriteNumber(2);
  EXPECT_EQ(*failing.AppendEvent(Event("a", "1")), 1u);
  EXPECT_FALSE(failing.AppendEvent(Event("b", "2")).ok());
  EXPECT_EQ(*failing.AppendEvent(Event("c", "3")), 2u);
}

TEST_P(StoreContractTest, WritesPassAgainAfterReset) {
  SeedPlanAndRun();
  FailingStore failing(store());
  failing.FailWritesFrom(1);
  EXPECT_FALSE(failing.AppendEvent(Event("a", "1")).ok());
  failing.Reset();
  EXPECT_TRUE(failing.AppendEvent(Event("a", "1")).ok());
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreContractTest,
                         ::testing::Values(RocksDbHarnessFactory(), MemoryHarnessFactory()),
                         [](const ::testing::TestParamInfo<HarnessFactory>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace orch::store
