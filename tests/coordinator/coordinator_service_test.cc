// In-process integration: CoordinatorService + MemoryNetwork + memory store +
// fake clock
// + scripted agents speaking the protocol messages.
#include "coordinator/coordinator_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/coordinator/coordinator_fixture.h"
#include "tests/protocol/version_1_frames.h"

namespace orch::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using namespace testing;  // NOLINT: the fixture's builders

std::string OnlyJobId(store::Store& store, const std::string& experiment) {
  auto jobs = store.ListJobs(experiment);
  EXPECT_TRUE(jobs.ok());
  EXPECT_THAT(*jobs, SizeIs(1));
  return jobs->empty() ? "" : (*jobs)[0].id;
}

protocol::Assign OnlyAssign(ScriptedPeer& agent) {
  auto assigns = OfKind<protocol::Assign>(agent.Take());
  EXPECT_THAT(assigns, SizeIs(1));
  return assigns.empty() ? protocol::Assign{} : assigns[0];
}

int CountDigests(store::Store& store, const std::string& run) {
  int n = 0;
  Status scanned = store.ScanDigests(run, 0, [&](uint64_t, std::string_view) {
    ++n;
    return true;
  });
  EXPECT_TRUE(scanned.ok());
  return n;
}

// agent-9's Hello, speaking protocol `version`.
protocol::Hello HelloOfVersion(std::uint32_t version) {
  protocol::Hello hello;
  hello.protocol_version = version;
  hello.agent_id = "agent-9";
  hello.capabilities.hardware_class = "cpu";
  return hello;
}

TEST(CoordinatorServiceTest, SubmitAssignRunFinish) {
  CoordinatorHarness h;
  EXPECT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  std::vector<protocol::Message> got = agent->Take();
  ASSERT_THAT(OfKind<protocol::Welcome>(got), SizeIs(1));
  auto assigns = OfKind<protocol::Assign>(got);
  ASSERT_THAT(assigns, SizeIs(1));
  const protocol::Assign& assign = assigns[0];
  EXPECT_EQ(assign.requirements.engine, kEngine);
  EXPECT_THAT(assign.job_spec, HasSubstr("\"experiment\":\"exp\""));
  EXPECT_THAT(assign.job_spec, HasSubstr("\"workload\":{"));

  agent->Send(protocol::RunStarted{assign.run_id});
  agent->Chunk(assign.run_id, 0);
  agent->Chunk(assign.run_id, 1);
  agent->Finish(assign.run_id, 2);
  h.Pump();
  auto acks = OfKind<protocol::Ack>(agent->Take());
  ASSERT_THAT(acks, SizeIs(3));
  EXPECT_EQ(acks[2].seq, protocol::kRunFinishedSeq);

  auto job = h.store().GetJob(assign.job_id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state, store::JobState::kSucceeded);
  auto run = h.store().GetRun(assign.run_id);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->Complete());
  EXPECT_EQ(CountDigests(h.store(), assign.run_id), 4);
}

// A plan larger than one frame cannot be sent whole (protocol/transport.h): it comes in
// parts, as a result bundle does, and is submitted once whole.
TEST(CoordinatorServiceTest, APlanLargerThanAFrameArrivesInPartsAndAllItsJobsAreStored) {
  CoordinatorHarness h;
  // More workloads than the coordinator once took (10,000), as `orch plan` makes them,
  // with text enough that the plan does not fit a frame: one job each.
  std::string plan = PlanJson(ManyWorkloadsSpec("big", 10'500, 1, 1'200));
  ASSERT_GT(plan.size(), protocol::kMaxFrameBytes);
  ASSERT_FALSE(protocol::FrameFits(protocol::Encode(protocol::Submit{plan})).ok());
  auto cli = h.Peer("cli-1");
  constexpr std::size_t kPart = std::size_t{6} << 20;
  std::vector<protocol::CommandReply> replies;
  for (std::size_t offset = 0; offset < plan.size(); offset += kPart) {
    std::size_t n = std::min(kPart, plan.size() - offset);
    cli->Send(protocol::Submit{plan.substr(offset, n), "p-1", offset, plan.size()});
    h.Pump();
    for (const auto& reply : OfKind<protocol::CommandReply>(cli->Take())) replies.push_back(reply);
  }
  ASSERT_EQ(replies.size(), (plan.size() + kPart - 1) / kPart) << "one reply per part";
  for (std::size_t i = 0; i + 1 < replies.size(); ++i) {
    EXPECT_TRUE(replies[i].ok) << replies[i].message;
    EXPECT_THAT(replies[i].message, HasSubstr("received"));
  }
  EXPECT_TRUE(replies.back().ok) << replies.back().message;
  EXPECT_EQ(replies.back().message, "experiment big: 10500 jobs, submitted");
  Result<std::vector<store::JobRecord>> jobs = h.store().ListJobs("big");
  ASSERT_TRUE(jobs.ok());
  EXPECT_THAT(*jobs, SizeIs(10'500));
  protocol::StatusReply status = h.Ask<protocol::StatusReply>(protocol::StatusRequest{"big"});
  ASSERT_THAT(status.experiments, SizeIs(1));
  EXPECT_EQ(status.experiments[0].total, 10'500u);
  // No agent can run them: every job is worth a look, but one reply lists 10,000 and
  // counts the rest, so that it fits in a frame.
  EXPECT_EQ(status.experiments[0].unrunnable, 10'500u);
  EXPECT_THAT(status.jobs, SizeIs(protocol::kMaxStatusJobs));
  EXPECT_EQ(status.jobs_omitted, 500u);
  EXPECT_TRUE(protocol::FrameFits(protocol::Encode(status)).ok());
}

TEST(CoordinatorServiceTest, APlanAboveTheBoundIsRefusedAtItsFirstPartNamingBoth) {
  CoordinatorHarness h;
  protocol::CommandReply reply =
      h.Ask<protocol::CommandReply>(protocol::Submit{"{", "p-2", 0, kMaxPlanBytes + 1});
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.message, "plan is 513 MiB (" + std::to_string(kMaxPlanBytes + 1) +
                               " bytes), above the 512 MiB the coordinator takes over the "
                               "network: split the experiment into smaller ones (fewer "
                               "workloads, cells or repeats per spec)");
}

TEST(CoordinatorServiceTest, AtMostSoManyPlansAreUploadedAtOnce) {
  CoordinatorHarness h;
  auto cli = h.Peer("cli-1");
  for (std::size_t i = 0; i <= kMaxPlanUploads; ++i) {
    cli->Send(protocol::Submit{"{", "p-" + std::to_string(i), 0, 100});
  }
  h.Pump();
  auto replies = OfKind<protocol::CommandReply>(cli->Take());
  ASSERT_THAT(replies, SizeIs(kMaxPlanUploads + 1));
  for (std::size_t i = 0; i < kMaxPlanUploads; ++i) EXPECT_TRUE(replies[i].ok);
  EXPECT_FALSE(replies.back().ok);
  EXPECT_THAT(replies.back().message, HasSubstr("2 plan uploads are in progress"));
  // Idle uploads expire and make room.
  h.Advance(kUploadIdle + std::chrono::milliseconds(1));
  cli->Send(protocol::Submit{"{", "p-9", 0, 100});
  h.Pump();
  replies = OfKind<protocol::CommandReply>(cli->Take());
  ASSERT_THAT(replies, SizeIs(1));
  EXPECT_TRUE(replies[0].ok) << replies[0].message;
}

TEST(CoordinatorServiceTest, StoresTheAgentsFingerprintOnceAndStampsItsRuns) {
  CoordinatorHarness h;
  EXPECT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  protocol::Hello hello;
  hello.agent_id = "agent-1";
  hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  hello.fingerprint_id = "fp-0123";
  hello.fingerprint_json = "{\"host\":{\"cpu\":\"x\"}}";
  agent->Send(hello);
  agent->Send(hello);  // a reconnect: stored once, not an error
  h.Pump();
  auto assigns = OfKind<protocol::Assign>(agent->Take());
  ASSERT_FALSE(assigns.empty());
  Result<std::string> stored = h.store().GetFingerprint("fp-0123");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(*stored, hello.fingerprint_json);
  EXPECT_EQ(h.store().GetRun(assigns[0].run_id)->host_fingerprint_id, "fp-0123");
}

TEST(CoordinatorServiceTest, ResubmittingTheSamePlanIsIdempotent) {
  CoordinatorHarness h;
  EXPECT_TRUE(h.Submit(SmallSpec("exp", 3)).ok);
  protocol::CommandReply again = h.Submit(SmallSpec("exp", 3));
  EXPECT_TRUE(again.ok);
  EXPECT_THAT(again.message, HasSubstr("already submitted"));
  EXPECT_EQ(h.store().ListJobs("exp")->size(), 3u);
}

TEST(CoordinatorServiceTest, LostAgentsRunIsReassignedAfterItsLeaseExpires) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto first = h.Peer("agent-1");
  first->Hello();
  h.Pump();
  protocol::Assign lost = OnlyAssign(*first);
  auto second = h.Peer("agent-2");
  second->Hello();
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(second->Take()), SizeIs(0));

  // agent-1 goes silent; agent-2 keeps heartbeating until the lease has run
  // out.
  for (int i = 0; i < 31; ++i) {
    second->Send(protocol::Heartbeat{"agent-2", {}, 1});
    h.Advance(milliseconds(1000));
  }
  protocol::Assign retry = OnlyAssign(*second);
  EXPECT_EQ(retry.job_id, lost.job_id);
  EXPECT_NE(retry.run_id, lost.run_id);
  EXPECT_EQ(h.store().GetRun(lost.run_id)->state, store::RunState::kLost);
  EXPECT_EQ(h.store().GetJob(lost.job_id)->attempts, 2);
}

TEST(CoordinatorServiceTest, HeartbeatsKeepALeaseAlive) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = OnlyAssign(*agent);
  for (int i = 0; i < 60; ++i) {
    agent->Send(protocol::Heartbeat{"agent-1", {assign.run_id}, 0});
    h.Advance(milliseconds(1000));
  }
  EXPECT_EQ(h.store().GetJob(assign.job_id)->state, store::JobState::kAssigned);
  EXPECT_EQ(h.store().GetJob(assign.job_id)->attempts, 1);
}

// Regression: a heartbeat listing an empty run id made the coordinator ask the agent to
// cancel run "", a Cancel with neither run nor experiment that no peer can decode.
TEST(CoordinatorServiceTest, AnEmptyRunIdInAHeartbeatIsNotCancelled) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = OnlyAssign(*agent);
  agent->Send(protocol::Heartbeat{"agent-1", {assign.run_id, ""}, 0});
  h.Pump();
  EXPECT_TRUE(OfKind<protocol::CancelRun>(agent->Take()).empty());  // Take checks they decode
  EXPECT_EQ(h.store().GetJob(assign.job_id)->state, store::JobState::kAssigned);
}

TEST(CoordinatorServiceTest, JobFailsWithTheReasonWhenTheRetryBudgetIsSpent) {
  CoordinatorOptions options = TestOptions();
  options.retry_budget = 2;
  CoordinatorHarness h(options);
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  std::string job_id;
  for (int attempt = 0; attempt < 2; ++attempt) {
    protocol::Assign assign = OnlyAssign(*agent);
    job_id = assign.job_id;
    agent->Send(protocol::RunStarted{assign.run_id});
    agent->Finish(assign.run_id, 0, protocol::RunStatus::kFailed, "driver crashed: signal 11");
    h.Pump();
  }
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(0));
  auto job = h.store().GetJob(job_id);
  EXPECT_EQ(job->state, store::JobState::kFailed);
  EXPECT_THAT(job->last_error, HasSubstr("retry budget of 2 runs exhausted"));
  EXPECT_THAT(job->last_error, HasSubstr("driver crashed: signal 11"));

  auto cli = h.Peer("cli");
  cli->Send(protocol::StatusRequest{});
  h.Pump();
  auto status = OfKind<protocol::StatusReply>(cli->Take());
  ASSERT_THAT(status, SizeIs(1));
  ASSERT_THAT(status[0].experiments, SizeIs(1));
  EXPECT_EQ(status[0].experiments[0].failed, 1u);
  ASSERT_FALSE(status[0].recent_failures.empty());
  EXPECT_THAT(status[0].recent_failures[0], HasSubstr("driver crashed"));
}

TEST(CoordinatorServiceTest, ADuplicateChunkIsStoredOnceAndAcknowledgedTwice) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = OnlyAssign(*agent);
  agent->Chunk(assign.run_id, 0);
  agent->Chunk(assign.run_id, 0);
  agent->Finish(assign.run_id, 1);
  agent->Finish(assign.run_id, 1);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Ack>(agent->Take()), SizeIs(4));
  auto run = h.store().GetRun(assign.run_id);
  EXPECT_EQ(run->chunks_received, 1);
  EXPECT_TRUE(run->Complete());
  EXPECT_EQ(CountDigests(h.store(), assign.run_id), 2);
  EXPECT_EQ(h.store().GetJob(assign.job_id)->state, store::JobState::kSucceeded);
}

TEST(CoordinatorServiceTest, ALateResultAfterReassignmentIsKeptApart) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto first = h.Peer("agent-1");
  first->Hello();
  h.Pump();
  protocol::Assign stale = OnlyAssign(*first);
  h.Advance(milliseconds(31000));  // the lease runs out; nobody else is connected yet
  auto second = h.Peer("agent-2");
  second->Hello();
  h.Pump();
  protocol::Assign current = OnlyAssign(*second);
  ASSERT_EQ(current.job_id, stale.job_id);

  // agent-1 comes back and delivers its whole, late result.
  first->Chunk(stale.run_id, 0, 3);
  first->Finish(stale.run_id, 1);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Ack>(first->Take()), SizeIs(2));
  EXPECT_TRUE(h.store().GetRun(stale.run_id)->Complete());
  auto job = h.store().GetJob(current.job_id);
  EXPECT_EQ(job->current_run_id, current.run_id);
  EXPECT_NE(job->state, store::JobState::kSucceeded);
  EXPECT_EQ(CountDigests(h.store(), current.run_id), 0);

  second->Chunk(current.run_id, 0);
  second->Finish(current.run_id, 1);
  h.Pump();
  EXPECT_EQ(h.store().GetJob(current.job_id)->state, store::JobState::kSucceeded);
  EXPECT_EQ(CountDigests(h.store(), current.run_id), 2);
  EXPECT_EQ(CountDigests(h.store(), stale.run_id), 3);
}

TEST(CoordinatorServiceTest, RejectsAnotherProtocolVersionNamingBoth) {
  CoordinatorHarness h;
  auto agent = h.Peer("agent-9");
  agent->Send(HelloOfVersion(7));
  h.Pump();
  auto rejects = OfKind<protocol::Reject>(agent->Take());
  ASSERT_THAT(rejects, SizeIs(1));
  EXPECT_THAT(rejects[0].reason, HasSubstr("version 7"));
  EXPECT_THAT(rejects[0].reason,
              HasSubstr("version " + std::to_string(protocol::kProtocolVersion)));
}

// Version 2 made DigestChunk's records a list: an agent of version 1 is refused at
// Hello, and a chunk it framed is refused too, each naming both versions.
TEST(CoordinatorServiceTest, RejectsAnAgentOfProtocolVersion1NamingBothVersions) {
  CoordinatorHarness h;
  auto agent = h.Peer("agent-9");
  agent->Send(HelloOfVersion(1));
  agent->SendRaw(protocol::testing::Version1DigestChunkFrame());
  h.Pump();
  auto rejects = OfKind<protocol::Reject>(agent->Take());
  ASSERT_THAT(rejects, SizeIs(2));
  for (const protocol::Reject& reject : rejects) {
    EXPECT_EQ(reject.protocol_version, 2u);
    EXPECT_THAT(reject.reason, HasSubstr("peer speaks protocol version 1"));
    EXPECT_THAT(reject.reason, HasSubstr("this build speaks version 2"));
  }
  EXPECT_THAT(rejects[1].reason, HasSubstr("digestChunk.recordsV1"));
}

TEST(CoordinatorServiceTest, RestartReadoptsARunInFlight) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = OnlyAssign(*agent);
  agent->Send(protocol::RunStarted{assign.run_id});
  agent->Chunk(assign.run_id, 0);
  h.Pump();
  agent->Take();

  h.Restart();
  agent->Hello({assign.run_id});
  h.Pump();
  auto got = agent->Take();
  EXPECT_THAT(OfKind<protocol::Welcome>(got), SizeIs(1));
  EXPECT_THAT(OfKind<protocol::Assign>(got), SizeIs(0));
  agent->Chunk(assign.run_id, 1);
  agent->Finish(assign.run_id, 2);
  h.Pump();
  auto job = h.store().GetJob(assign.job_id);
  EXPECT_EQ(job->state, store::JobState::kSucceeded);
  EXPECT_EQ(job->attempts, 1);
}

TEST(CoordinatorServiceTest, RestartRequeuesARunWhoseAgentNeverReturns) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto gone = h.Peer("agent-1");
  gone->Hello();
  h.Pump();
  protocol::Assign assign = OnlyAssign(*gone);
  h.Restart();
  auto other = h.Peer("agent-2");
  other->Hello();
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(other->Take()),
              SizeIs(0));  // the lease holds
  for (int i = 0; i < 31; ++i) {
    other->Send(protocol::Heartbeat{"agent-2", {}, 1});
    h.Advance(milliseconds(1000));
  }
  EXPECT_EQ(OnlyAssign(*other).job_id, assign.job_id);
}

TEST(CoordinatorServiceTest, AChunkThatCannotBeStoredIsNotAcknowledged) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = OnlyAssign(*agent);
  h.failing().FailWriteNumber(1);  // disk full for the next write: the chunk
  agent->Chunk(assign.run_id, 0);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Ack>(agent->Take()), SizeIs(0));
  EXPECT_EQ(h.store().GetRun(assign.run_id)->chunks_received, 0);
  EXPECT_EQ(h.service().failed_writes(), 1u);

  agent->Chunk(assign.run_id, 0);  // resent after the disk has room again
  agent->Finish(assign.run_id, 1);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Ack>(agent->Take()), SizeIs(2));
  EXPECT_EQ(h.store().GetJob(assign.job_id)->state, store::JobState::kSucceeded);
}

TEST(CoordinatorServiceTest, AJobWriteThatFailsAfterItsRunFinishedIsRedoneFromTheStore) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = OnlyAssign(*agent);
  agent->Chunk(assign.run_id, 0);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Ack>(agent->Take()), SizeIs(1));
  h.failing().FailWriteNumber(2);  // 1: FinishRun (stored), 2: the job's success
  agent->Finish(assign.run_id, 1);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Ack>(agent->Take()), SizeIs(1));
  EXPECT_EQ(h.service().failed_writes(), 1u);
  // Rebuilt from the store, the core saw the finished run and decided the job again.
  EXPECT_EQ(h.store().GetJob(assign.job_id)->state, store::JobState::kSucceeded);
}

TEST(CoordinatorServiceTest, ASubmitThatCannotBeStoredFailsAndChangesNothing) {
  CoordinatorHarness h;
  h.failing().FailWriteNumber(1);
  protocol::CommandReply reply = h.Submit(SmallSpec());
  EXPECT_FALSE(reply.ok);
  EXPECT_THAT(reply.message, HasSubstr("disk full"));
  EXPECT_TRUE(h.store().ListJobs("exp")->empty());
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(0));
  EXPECT_TRUE(h.Submit(SmallSpec()).ok);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(1));
}

TEST(CoordinatorServiceTest, AFailedAssignmentWriteSendsNoAssignAndRetriesLater) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  h.failing().FailWritesFrom(1);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(0));
  std::string job_id = OnlyJobId(h.store(), "exp");
  EXPECT_EQ(h.store().GetJob(job_id)->state, store::JobState::kPending);
  h.failing().Reset();
  agent->Send(protocol::Heartbeat{"agent-1", {}, 1});
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(1));
  EXPECT_EQ(h.store().GetJob(job_id)->state, store::JobState::kAssigned);
}

TEST(CoordinatorServiceTest, BadFramesAreCountedAndAnAbusivePeerIsIgnored) {
  CoordinatorHarness h;  // max_bad_frames = 3
  auto peer = h.Peer("noisy");
  for (int i = 0; i < 3; ++i) peer->SendRaw("not a frame at all");
  h.Pump();
  EXPECT_EQ(h.service().bad_frames(), 3u);
  EXPECT_TRUE(h.service().ignoring("noisy"));
  peer->Send(protocol::StatusRequest{});
  h.Pump();
  EXPECT_THAT(peer->Take(), SizeIs(0));
  auto polite = h.Peer("polite");
  polite->Send(protocol::StatusRequest{});
  h.Pump();
  EXPECT_THAT(OfKind<protocol::StatusReply>(polite->Take()), SizeIs(1));
}

TEST(CoordinatorServiceTest, APeerThatAbusedAnAbsentAgentsIdDoesNotLockTheAgentOut) {
  CoordinatorHarness h;  // max_bad_frames = 3
  auto impostor = h.Peer("agent-1");
  for (int i = 0; i < 3; ++i) impostor->SendRaw("garbage under agent-1's id");
  h.Pump();
  ASSERT_TRUE(h.service().ignoring("agent-1"));
  impostor->Disconnect();
  h.Pump();
  ASSERT_TRUE(h.Submit(SmallSpec()).ok);
  auto agent = h.Peer("agent-1");  // the real agent connects anew
  agent->Hello();
  h.Pump();
  EXPECT_FALSE(h.service().ignoring("agent-1"));
  EXPECT_THAT(OfKind<protocol::Welcome>(agent->Take()), SizeIs(1));
}

TEST(CoordinatorServiceTest, UnknownRunIdsAreIgnored) {
  CoordinatorHarness h;
  auto agent = h.Peer("agent-1");
  agent->Hello();
  agent->Chunk("no-such-run", 0);
  agent->Finish("no-such-run", 1);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Ack>(agent->Take()), SizeIs(0));
  EXPECT_EQ(h.store().GetRun("no-such-run").status().code(), StatusCode::kNotFound);
}

TEST(CoordinatorServiceTest, CancelStopsAnExperimentsRuns) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 2)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = OnlyAssign(*agent);
  auto cli = h.Peer("cli");
  cli->Send(protocol::CancelExperiment{"exp"});
  h.Pump();
  auto replies = OfKind<protocol::CommandReply>(cli->Take());
  ASSERT_THAT(replies, SizeIs(1));
  EXPECT_TRUE(replies[0].ok);
  EXPECT_THAT(replies[0].message, HasSubstr("2 jobs cancelled"));
  auto cancels = OfKind<protocol::CancelRun>(agent->Take());
  ASSERT_THAT(cancels, SizeIs(1));
  EXPECT_EQ(cancels[0].run_id, assign.run_id);
  auto jobs = h.store().ListJobs("exp");
  ASSERT_TRUE(jobs.ok());
  for (const auto& job : *jobs) {
    EXPECT_EQ(job.state, store::JobState::kCancelled);
  }
}

// The event log is written by the service with the changes it explains: what `orch
// events` reads from the store.
TEST(CoordinatorServiceTest, TheStoresEventLogRecordsPlansAgentsAndDrains) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 1)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = OnlyAssign(*agent);
  auto cli = h.Peer("cli");
  cli->Send(protocol::Drain{"agent-1"});
  h.Pump();
  agent->Chunk(assign.run_id, 0);
  agent->Finish(assign.run_id, 1);
  h.Pump();
  std::vector<std::string> kinds;
  ASSERT_TRUE(h.store()
                  .ScanEvents(1,
                              [&](const store::EventRecord& event) {
                                kinds.push_back(event.kind + " " + event.subject);
                                return true;
                              })
                  .ok());
  EXPECT_THAT(kinds,
              ::testing::ElementsAre("plan.submitted exp", "agent.registered agent-1",
                                     "job.assigned " + assign.job_id, "agent.draining agent-1",
                                     "job.succeeded " + assign.job_id, "agent.drained agent-1"));
}

TEST(CoordinatorServiceTest, DrainStopsNewAssignments) {
  CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(SmallSpec("exp", 2)).ok);
  auto agent = h.Peer("agent-1");
  agent->Hello();
  h.Pump();
  protocol::Assign assign = OnlyAssign(*agent);
  auto cli = h.Peer("cli");
  cli->Send(protocol::Drain{"agent-1"});
  h.Pump();
  EXPECT_TRUE(OfKind<protocol::CommandReply>(cli->Take()).at(0).ok);
  EXPECT_THAT(OfKind<protocol::Drain>(agent->Take()), SizeIs(1));
  agent->Chunk(assign.run_id, 0);
  agent->Finish(assign.run_id, 1);
  h.Pump();
  EXPECT_THAT(OfKind<protocol::Assign>(agent->Take()), SizeIs(0));
  cli->Send(protocol::StatusRequest{});
  h.Pump();
  auto status = OfKind<protocol::StatusReply>(cli->Take()).at(0);
  // Its last run ended: drained.
  EXPECT_EQ(status.agents.at(0).state, protocol::AgentState::kDrained);
  EXPECT_EQ(status.experiments.at(0).succeeded, 1u);
  EXPECT_EQ(status.experiments.at(0).pending, 1u);
}

}  // namespace
}  // namespace orch::coordinator

namespace orch::coordinator {
namespace {

TEST(CoordinatorServiceTest, APlanReusingAnotherExperimentsJobIdsIsRefused) {
  testing::CoordinatorHarness h;
  ASSERT_TRUE(h.Submit(testing::SmallSpec("exp-a", 2)).ok);
  nlohmann::json forged = nlohmann::json::parse(testing::PlanJson(testing::SmallSpec("exp-a", 2)));
  forged["experiment"]["name"] = "exp-b";
  auto cli = h.Peer("cli-forger");
  cli->Send(protocol::Submit{forged.dump()});
  h.Pump();
  auto replies = testing::OfKind<protocol::CommandReply>(cli->Take());
  ASSERT_EQ(replies.size(), 1u);
  protocol::CommandReply reply = replies[0];
  EXPECT_FALSE(reply.ok);
  // Its ids hash exp-a's name, so they are not the ids of exp-b's jobs.
  EXPECT_THAT(reply.message, ::testing::HasSubstr("is not the id of this job's coordinate"));
  EXPECT_FALSE(h.store().GetPlan("exp-b").ok()) << "nothing stored";
}

}  // namespace
}  // namespace orch::coordinator
