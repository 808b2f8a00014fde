// AgentCore's timing, on a fake clock: every time below is exact, nothing sleeps.
#include "agent/agent_core.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "digest/record_codec.h"
#include "driver_protocol/frames.h"

namespace orch::agent {
namespace {

using driver_protocol::DriverFrameType;
using driver_protocol::EncodeDriverFrame;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace std::chrono_literals;
namespace proto = orch::protocol;

const AgentTime kT0 = AgentTime{} + 1000s;

AgentCoreOptions Options() {
  AgentCoreOptions options;
  options.config.id = "agent-1";
  options.config.slots = 1;
  options.config.drivers = {{"broken", "/opt/driver", "test-engine@1"},
                            {"other", "/opt/other", "other-engine@1"}};
  options.fingerprint_id = "fp-1";
  options.fingerprint_json = R"({"engines":"v1"})";
  return options;
}

// The messages of type M among `effects`, sent or spooled and sent.
template <typename M>
std::vector<M> Sent(const AgentEffects& effects) {
  std::vector<M> out;
  for (const AgentEffect& effect : effects) {
    const proto::Message* message = nullptr;
    if (const auto* send = std::get_if<SendEffect>(&effect)) message = &send->message;
    if (const auto* spooled = std::get_if<SpoolAndSendEffect>(&effect)) message = &spooled->message;
    if (message == nullptr) continue;
    if (const M* m = std::get_if<M>(message)) out.push_back(*m);
  }
  return out;
}

template <typename E>
std::size_t Count(const AgentEffects& effects) {
  std::size_t n = 0;
  for (const AgentEffect& effect : effects) n += std::holds_alternative<E>(effect) ? 1 : 0;
  return n;
}

std::string OneRecordOutput() {
  digest::PositionRecord record;
  return EncodeDriverFrame(DriverFrameType::kHello, R"({"engine":"test"})") +
         EncodeDriverFrame(DriverFrameType::kRecord, digest::EncodePositionRecord(record)) +
         EncodeDriverFrame(DriverFrameType::kDone, "{}");
}

const ProcessExit kExitedZero{ProcessExit::Reason::kExited, 0, 0, ""};
const ProcessExit kExitedOne{ProcessExit::Reason::kExited, 1, 0, "libengine.so: cannot open\n"};

proto::Assign MakeAssign(const std::string& run_id, const std::string& engine = "test-engine@1") {
  proto::Assign assign;
  assign.run_id = run_id;
  assign.job_id = "job-" + run_id;
  assign.requirements.engine = engine;
  return assign;
}

class AgentCoreTest : public ::testing::Test {
 protected:
  explicit AgentCoreTest(AgentCoreOptions options = Options(), AgentCoreFeatures features = {})
      : core_(std::move(options), std::move(features)) {}

  // Start and Welcome at kT0, heartbeats every `heartbeat`.
  void StartWelcomed(std::chrono::milliseconds heartbeat = 1000ms) {
    ASSERT_EQ(Sent<proto::Hello>(core_.Start({}, kT0)).size(), 1u);
    core_.OnMessage(proto::Welcome{proto::kProtocolVersion, "coord-1", heartbeat}, kT0);
  }

  // Assign, prepare and launch `run_id` at `now`; true when it was launched.
  bool Launch(const std::string& run_id, AgentTime now) {
    AgentEffects assigned = core_.OnMessage(MakeAssign(run_id), now);
    if (Count<PrepareRunEffect>(assigned) != 1) return false;
    AgentEffects prepared = core_.OnRunPrepared(run_id, "exp", "{}", "", now);
    return Count<LaunchEffect>(prepared) == 1;
  }

  // A run that writes one record and succeeds: chunk 0 and its RunFinished spooled.
  void RunToSuccess(const std::string& run_id, AgentTime now) {
    ASSERT_TRUE(Launch(run_id, now));
    core_.OnDriverOutput(run_id, OneRecordOutput(), now);
    core_.OnDriverExit(run_id, kExitedZero, now);
  }

  AgentCore core_;
};

TEST_F(AgentCoreTest, SaysHelloAgainEveryHelloRetryUntilWelcomed) {
  AgentEffects started = core_.Start({}, kT0);
  ASSERT_EQ(Sent<proto::Hello>(started).size(), 1u);
  EXPECT_EQ(core_.NextDeadline(), kT0 + 1000ms);
  EXPECT_THAT(core_.Tick(kT0 + 999ms), IsEmpty()) << "not due yet";
  EXPECT_EQ(Sent<proto::Hello>(core_.Tick(kT0 + 1000ms)).size(), 1u);
  EXPECT_EQ(core_.NextDeadline(), kT0 + 2000ms);
  core_.OnMessage(proto::Welcome{proto::kProtocolVersion, "coord-1", 60s}, kT0 + 1500ms);
  EXPECT_TRUE(core_.welcomed());
  EXPECT_EQ(core_.NextDeadline(), kT0 + 1500ms + 60s) << "the next heartbeat, no more Hello";
}

TEST_F(AgentCoreTest, ARejectedAgentSaysHelloAgainAfterHelloRetry) {
  StartWelcomed();
  core_.OnMessage(proto::Reject{proto::kProtocolVersion, "who are you"}, kT0 + 10ms);
  EXPECT_FALSE(core_.welcomed());
  EXPECT_EQ(core_.NextDeadline(), kT0 + 1010ms);
  EXPECT_EQ(Sent<proto::Hello>(core_.Tick(kT0 + 1010ms)).size(), 1u);
}

// Two agents given one id: the refused one says Hello every hello_retry and logs the
// coordinator's reason once, not once a second; a Welcome ends the streak.
TEST_F(AgentCoreTest, ARepeatedRejectIsLoggedOnceAndAgainOnlyWhenItsReasonChanges) {
  (void)core_.Start({}, kT0);
  auto errors = [](const AgentEffects& effects) {
    std::size_t n = 0;
    for (const AgentEffect& effect : effects) {
      const auto* log = std::get_if<LogEffect>(&effect);
      n += log != nullptr && log->level == LogEffect::Level::kError ? 1 : 0;
    }
    return n;
  };
  proto::Reject taken{proto::kProtocolVersion, "agent id a-1 is in use by another agent"};
  EXPECT_EQ(errors(core_.OnMessage(taken, kT0 + 10ms)), 1u);
  AgentTime at = kT0 + 10ms;
  for (int i = 1; i <= 5; ++i) {
    at += 1000ms;  // hello_retry after the last Reject
    EXPECT_EQ(Sent<proto::Hello>(core_.Tick(at)).size(), 1u) << "still trying";
    EXPECT_EQ(errors(core_.OnMessage(taken, at)), 0u) << "said once";
  }
  proto::Reject other{proto::kProtocolVersion, "protocol version 9 is not supported"};
  EXPECT_EQ(errors(core_.OnMessage(other, kT0 + 7s)), 1u) << "a new reason is said";
  core_.OnMessage(proto::Welcome{proto::kProtocolVersion, "coord-1", 60s}, kT0 + 8s);
  EXPECT_EQ(errors(core_.OnMessage(other, kT0 + 9s)), 1u) << "a new streak after a Welcome";
}

TEST_F(AgentCoreTest, HeartbeatsEveryIntervalWithItsRunsAndFreeSlots) {
  StartWelcomed(10s);
  EXPECT_EQ(core_.NextDeadline(), kT0 + 10s);
  std::vector<proto::Heartbeat> idle = Sent<proto::Heartbeat>(core_.Tick(kT0 + 10s));
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0].agent_id, "agent-1");
  EXPECT_THAT(idle[0].running_runs, IsEmpty());
  EXPECT_EQ(idle[0].free_slots, 1);
  ASSERT_TRUE(Launch("run-1", kT0 + 15s));
  EXPECT_EQ(core_.NextDeadline(), kT0 + 20s) << "a run does not move the heartbeat";
  std::vector<proto::Heartbeat> busy = Sent<proto::Heartbeat>(core_.Tick(kT0 + 20s));
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_THAT(busy[0].running_runs, ElementsAre("run-1"));
  EXPECT_EQ(busy[0].free_slots, 0);
}

// A run still being prepared (its server starting: minutes for vLLM) is on this agent:
// heartbeats list it, so its lease is renewed, and so does a Hello after a reconnect.
TEST_F(AgentCoreTest, ARunBeingPreparedIsListedInHeartbeatsAndHello) {
  StartWelcomed(10s);
  ASSERT_EQ(Count<PrepareRunEffect>(core_.OnMessage(MakeAssign("run-1"), kT0 + 1s)), 1u);
  std::vector<proto::Heartbeat> beats = Sent<proto::Heartbeat>(core_.Tick(kT0 + 10s));
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_THAT(beats[0].running_runs, ElementsAre("run-1"));
  EXPECT_EQ(beats[0].free_slots, 0);
  std::vector<proto::Hello> hello = Sent<proto::Hello>(core_.OnReconnected(kT0 + 12s));
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_THAT(hello[0].running_runs, ElementsAre("run-1"));
  // Refused once prepared no longer: no longer listed.
  core_.OnRunNotPrepared(MakeAssign("run-1"), proto::kRefusedJob, "server did not start",
                         kT0 + 13s);
  core_.OnMessage(proto::Welcome{proto::kProtocolVersion, "coord-1", 10s}, kT0 + 13s);
  std::vector<proto::Heartbeat> after = Sent<proto::Heartbeat>(core_.Tick(kT0 + 23s));
  ASSERT_EQ(after.size(), 1u);
  EXPECT_THAT(after[0].running_runs, IsEmpty());
}

// Each message is timed from the first tick that finds it unacknowledged; acks of
// other messages do not reset it.
TEST_F(AgentCoreTest, SaysHelloAgainWhenOneMessageWaitedResendAfterWhileOthersAreAcked) {
  StartWelcomed(1s);  // resend_after 5 s
  RunToSuccess("run-1", kT0 + 500ms);
  ASSERT_EQ(core_.spool().unacked(), 2u);  // chunk 0 and RunFinished
  core_.OnMessage(proto::Ack{"run-1", proto::kRunFinishedSeq}, kT0 + 600ms);
  for (int second = 1; second <= 5; ++second) {
    AgentTime now = kT0 + std::chrono::seconds(second);
    core_.OnMessage(proto::Ack{"other-run", 0}, now - 1ms);
    AgentEffects tick = core_.Tick(now);
    EXPECT_THAT(Sent<proto::Hello>(tick), IsEmpty()) << "at " << second << " s";
    EXPECT_EQ(Sent<proto::Heartbeat>(tick).size(), 1u) << "at " << second << " s";
  }
  // First seen unacknowledged at the 1 s tick: due at 6 s.
  AgentEffects due = core_.Tick(kT0 + 6s);
  std::vector<proto::Hello> hello = Sent<proto::Hello>(due);
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_THAT(hello[0].delivering_runs, ElementsAre("run-1"));
  EXPECT_THAT(Sent<proto::Heartbeat>(due), IsEmpty());
  AgentEffects welcomed =
      core_.OnMessage(proto::Welcome{proto::kProtocolVersion, "coord-1", 1s}, kT0 + 6100ms);
  EXPECT_EQ(Count<ResendSpoolEffect>(welcomed), 1u);
  // The resend restarts its clock at the 6 s tick: heartbeats at 7.1 to 10.1 s,
  // Hello at the first tick from 11 s.
  for (AgentTime at : {kT0 + 7100ms, kT0 + 8100ms, kT0 + 9100ms, kT0 + 10100ms}) {
    ASSERT_EQ(core_.NextDeadline(), at);
    EXPECT_THAT(Sent<proto::Hello>(core_.Tick(at)), IsEmpty());
  }
  EXPECT_EQ(Sent<proto::Hello>(core_.Tick(kT0 + 11100ms)).size(), 1u);
}

TEST_F(AgentCoreTest, AnAckedMessageIsNotResent) {
  StartWelcomed(1s);
  RunToSuccess("run-1", kT0 + 500ms);
  core_.OnMessage(proto::Ack{"run-1", 0}, kT0 + 4s);
  core_.OnMessage(proto::Ack{"run-1", proto::kRunFinishedSeq}, kT0 + 4s);
  for (int second = 1; second <= 20; ++second) {
    EXPECT_THAT(Sent<proto::Hello>(core_.Tick(kT0 + std::chrono::seconds(second))), IsEmpty());
  }
  EXPECT_EQ(core_.spool().unacked(), 0u);
}

class AgentCoreQuarantineTest : public AgentCoreTest {
 protected:
  // Launches at `at` a run that exits 1 without a record `ran` later.
  void FailAfter(const std::string& run_id, AgentTime at, std::chrono::milliseconds ran,
                 AgentEffects* ended = nullptr) {
    ASSERT_TRUE(Launch(run_id, at));
    AgentEffects effects = core_.OnDriverExit(run_id, kExitedOne, at + ran);
    if (ended != nullptr) *ended = std::move(effects);
  }
};

TEST_F(AgentCoreQuarantineTest, ThreeRunsFailingWithinTheWindowQuarantineTheDriver) {
  StartWelcomed(60s);  // window: 5000 ms
  FailAfter("run-1", kT0 + 1s, 4999ms);
  FailAfter("run-2", kT0 + 10s, 4999ms);
  AgentEffects third;
  FailAfter("run-3", kT0 + 20s, 4999ms, &third);
  std::vector<proto::Hello> hello = Sent<proto::Hello>(third);
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_THAT(hello[0].capabilities.engines, ElementsAre("other-engine@1"));
  ASSERT_EQ(hello[0].host_facts.size(), 1u);
  EXPECT_THAT(hello[0].host_facts[0].value,
              HasSubstr("broken (test-engine@1): 3 runs in a row failed within 5000 ms"));
  std::vector<proto::RunFinished> refused =
      Sent<proto::RunFinished>(core_.OnMessage(MakeAssign("run-4"), kT0 + 30s));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_THAT(refused[0].summary, HasSubstr(proto::kRefusedNoEngine));
  EXPECT_EQ(core_.counters().quarantines, (std::map<std::string, std::uint64_t>{{"broken", 1}}));
  EXPECT_TRUE(core_.Gauges().drivers[0].quarantined);
  EXPECT_FALSE(core_.Gauges().drivers[1].quarantined);
}

TEST_F(AgentCoreQuarantineTest, ARunFailingAtTheEndOfTheWindowIsNotCounted) {
  StartWelcomed(60s);
  FailAfter("run-1", kT0 + 1s, 4999ms);
  FailAfter("run-2", kT0 + 10s, 4999ms);
  AgentEffects third;
  FailAfter("run-3", kT0 + 20s, 5000ms, &third);
  EXPECT_THAT(Sent<proto::Hello>(third), IsEmpty());
  AgentEffects fourth;
  FailAfter("run-4", kT0 + 30s, 4999ms, &fourth);
  EXPECT_THAT(Sent<proto::Hello>(fourth), IsEmpty()) << "the slow run reset the count";
  EXPECT_EQ(Count<PrepareRunEffect>(core_.OnMessage(MakeAssign("run-5"), kT0 + 40s)), 1u);
}

// The counters behind the agent's metrics (agent/agent_metrics.h), counted where the
// core decides: registrations, runs taken and refused, records, ends and durations.
TEST_F(AgentCoreTest, CountsWhatItDecides) {
  StartWelcomed(60s);
  EXPECT_EQ(core_.counters().hellos, 1u);
  EXPECT_EQ(core_.counters().welcomes, 1u);
  ASSERT_TRUE(Launch("run-1", kT0 + 1s));
  AgentGauges busy = core_.Gauges();
  EXPECT_EQ(busy.running, 1u);
  EXPECT_EQ(busy.free_slots, 0);
  // No free slot, then an engine no driver offers.
  core_.OnMessage(MakeAssign("run-2"), kT0 + 1s);
  core_.OnMessage(MakeAssign("run-3", "nobody@1"), kT0 + 1s);
  core_.OnDriverOutput("run-1", OneRecordOutput(), kT0 + 2s);
  core_.OnDriverExit("run-1", kExitedZero, kT0 + 3500ms);
  ASSERT_TRUE(Launch("run-4", kT0 + 4s));
  core_.OnDriverExit("run-4", kExitedOne, kT0 + 4250ms);

  const AgentCounters& c = core_.counters();
  EXPECT_EQ(c.assignments, 2u);
  EXPECT_EQ(c.refusals,
            (std::map<std::string, std::uint64_t>{{"agent_busy", 1}, {"agent_no_engine", 1}}));
  using Key = std::pair<std::string, std::string>;
  EXPECT_EQ(c.runs_ended, (std::map<Key, std::uint64_t>{{{"broken", "failed"}, 1},
                                                        {{"broken", "succeeded"}, 1}}));
  EXPECT_EQ(c.records, (std::map<std::string, std::uint64_t>{{"broken", 1}}));
  EXPECT_EQ(c.run_seconds.count(), 2u);
  EXPECT_DOUBLE_EQ(c.run_seconds.sum(), 2.5 + 0.25);
  EXPECT_TRUE(c.sessions_started.empty());
  AgentGauges idle = core_.Gauges();
  EXPECT_TRUE(idle.registered);
  EXPECT_EQ(idle.running, 0u);
  EXPECT_EQ(idle.free_slots, 1);
  // Unacknowledged: run-1's chunk and RunFinished, run-4's RunFinished, and the two
  // refusals (each a RunFinished).
  EXPECT_EQ(idle.spool_unacked, 5u);
  core_.OnMessage(proto::Ack{"run-1", 0}, kT0 + 5s);
  EXPECT_EQ(core_.Gauges().spool_unacked, 4u);
  ASSERT_EQ(idle.drivers.size(), 2u);
  EXPECT_EQ(idle.drivers[0].name, "broken");
  EXPECT_EQ(idle.drivers[0].engine, "test-engine@1");
  EXPECT_FALSE(idle.drivers[0].quarantined);
}

TEST_F(AgentCoreTest, StopWaitsShutdownGraceForAcksThenStops) {
  StartWelcomed(1s);
  RunToSuccess("run-1", kT0 + 100ms);
  AgentEffects stop = core_.Stop(kT0 + 200ms);
  EXPECT_EQ(Count<StoppedEffect>(stop), 0u) << "two messages unacknowledged";
  EXPECT_EQ(core_.NextDeadline(), kT0 + 5200ms);
  EXPECT_THAT(Sent<proto::Heartbeat>(core_.Tick(kT0 + 5199ms)), IsEmpty()) << "not due";
  EXPECT_FALSE(core_.stopped());
  EXPECT_EQ(Count<StoppedEffect>(core_.Tick(kT0 + 5200ms)), 1u);
  EXPECT_TRUE(core_.stopped());
  EXPECT_EQ(core_.NextDeadline(), std::nullopt);
}

TEST_F(AgentCoreTest, StopCancelsRunsAndStopsOnceTheLastAckArrives) {
  StartWelcomed(1s);
  ASSERT_TRUE(Launch("run-1", kT0 + 100ms));
  EXPECT_EQ(Count<CancelRunEffect>(core_.Stop(kT0 + 200ms)), 1u);
  core_.OnDriverExit("run-1", {ProcessExit::Reason::kCancelled, -1, 0, ""}, kT0 + 300ms);
  EXPECT_FALSE(core_.stopped());
  AgentEffects acked = core_.OnMessage(proto::Ack{"run-1", proto::kRunFinishedSeq}, kT0 + 400ms);
  EXPECT_EQ(Count<StoppedEffect>(acked), 1u);
}

TEST_F(AgentCoreTest, DrainCancelsWhatStillRunsWhenItsGraceIsUp) {
  StartWelcomed(60s);
  ASSERT_TRUE(Launch("run-1", kT0 + 100ms));
  core_.Drain(20s, kT0 + 1s);
  EXPECT_EQ(core_.NextDeadline(), kT0 + 21s) << "the drain's end comes before the heartbeat";
  std::vector<proto::RunFinished> refused =
      Sent<proto::RunFinished>(core_.OnMessage(MakeAssign("run-2"), kT0 + 2s));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_THAT(refused[0].summary, HasSubstr(proto::kRefusedDraining));
  AgentEffects up = core_.Tick(kT0 + 21s);
  EXPECT_EQ(Count<CancelRunEffect>(up), 1u);
  EXPECT_EQ(core_.NextDeadline(), kT0 + 21s + 5s) << "then shutdown_grace for the acks";
}

class AgentCoreWorkerTest : public AgentCoreTest {
 protected:
  AgentCoreWorkerTest() : AgentCoreTest(Options(), {"0123456789abcdef", true, true}) {}
};

TEST_F(AgentCoreWorkerTest, ScansModelsBeforeTheFirstHelloAndRegistersWithThem) {
  AgentEffects started = core_.Start({}, kT0);
  EXPECT_EQ(Count<ScanModelsEffect>(started), 1u);
  EXPECT_THAT(Sent<proto::Hello>(started), IsEmpty());
  std::vector<proto::Hello> hello =
      Sent<proto::Hello>(core_.OnModelsScanned({"sha256:" + std::string(64, 'a')}, kT0 + 3s));
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_THAT(hello[0].capabilities.model_hashes, ElementsAre("sha256:" + std::string(64, 'a')));
  EXPECT_EQ(hello[0].incarnation, "0123456789abcdef");
}

TEST_F(AgentCoreWorkerTest, ChecksTheFingerprintEveryFingerprintCheckWhileHeartbeatsGoOn) {
  core_.Start({}, kT0);
  core_.OnModelsScanned({}, kT0);
  core_.OnMessage(proto::Welcome{proto::kProtocolVersion, "coord-1", 20s}, kT0);
  AgentEffects early = core_.Tick(kT0 + 40s);
  EXPECT_EQ(Count<CheckFingerprintEffect>(early), 0u) << "due at 60 s";
  AgentEffects due = core_.Tick(kT0 + 60s);
  EXPECT_EQ(Count<CheckFingerprintEffect>(due), 1u);
  EXPECT_EQ(Sent<proto::Heartbeat>(due).size(), 1u) << "the check runs on the worker";
  EXPECT_EQ(Count<CheckFingerprintEffect>(core_.Tick(kT0 + 140s)), 0u) << "one check at a time";
  EXPECT_THAT(core_.OnFingerprint(R"({"engines":"v1"})", kT0 + 141s), IsEmpty())
      << "unchanged: nothing to say";
  EXPECT_EQ(Count<CheckFingerprintEffect>(core_.Tick(kT0 + 160s)), 1u);
  std::vector<proto::Hello> hello =
      Sent<proto::Hello>(core_.OnFingerprint(R"({"engines":"v2"})", kT0 + 161s));
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_EQ(hello[0].fingerprint_json, R"({"engines":"v2"})");
  EXPECT_EQ(hello[0].fingerprint_id, core_.fingerprint_id());
  EXPECT_NE(core_.fingerprint_id(), "fp-1");
}

TEST_F(AgentCoreWorkerTest, RescansModelsEveryModelRescanAndAnnouncesOnlyAChangedSet) {
  core_.Start({}, kT0);
  core_.OnModelsScanned({}, kT0);
  core_.OnMessage(proto::Welcome{proto::kProtocolVersion, "coord-1", 10s}, kT0);
  EXPECT_EQ(Count<ScanModelsEffect>(core_.Tick(kT0 + 20s)), 0u) << "due at 30 s";
  EXPECT_EQ(Count<ScanModelsEffect>(core_.Tick(kT0 + 30s)), 1u);
  EXPECT_THAT(Sent<proto::Hello>(core_.OnModelsScanned({}, kT0 + 31s)), IsEmpty());
  EXPECT_EQ(Count<ScanModelsEffect>(core_.Tick(kT0 + 60s)), 0u) << "30 s after the last scan";
  EXPECT_EQ(Count<ScanModelsEffect>(core_.Tick(kT0 + 70s)), 1u);
  EXPECT_EQ(Sent<proto::Hello>(core_.OnModelsScanned({"sha256:x"}, kT0 + 71s)).size(), 1u);
}

TEST_F(AgentCoreTest, AMessageTheSpoolCouldNotKeepIsNotWaitedFor) {
  StartWelcomed(1s);
  ASSERT_TRUE(Launch("run-1", kT0 + 1ms));
  core_.OnMessage(proto::Drain{"agent-1"}, kT0 + 2ms);
  core_.OnDriverOutput("run-1", OneRecordOutput(), kT0 + 100ms);
  core_.OnDriverExit("run-1", kExitedZero, kT0 + 100ms);
  ASSERT_FALSE(core_.stopped());
  // The shell could write neither message: the spool holds nothing.
  EXPECT_EQ(Count<StoppedEffect>(core_.OnSpoolFailed({}, kT0 + 200ms)), 1u);
}

// Warm sessions, decided by the core on the fake clock.
AgentCoreOptions SessionOptions() {
  AgentCoreOptions options = Options();
  options.config.drivers = {
      {"warm", "/opt/warm", "test-engine@1", std::vector<std::string>{"quant"}}};
  options.config.warm_sessions = 1;
  options.config.warm_idle = 10s;
  return options;
}

std::string SessionJob(const std::string& quant) {
  return R"({"model":{"path":"/m.gguf","sha256":"ab","requirement":"synth:x"},)"
         R"("coordinate":{"quant":")" +
         quant + R"(","seed":"1"}})";
}

class AgentCoreSessionTest : public AgentCoreTest {
 protected:
  AgentCoreSessionTest() : AgentCoreTest(SessionOptions()) {}

  AgentEffects Prepare(const std::string& run_id, const std::string& quant, AgentTime now) {
    core_.OnMessage(MakeAssign(run_id), now);
    return core_.OnRunPrepared(run_id, "exp", SessionJob(quant), "", now);
  }
};

TEST_F(AgentCoreSessionTest, ASessionJobEndsAtItsDoneAndTheNextFittingJobIsFedToIt) {
  StartWelcomed(60s);
  AgentEffects first = Prepare("run-1", "q4", kT0);
  ASSERT_EQ(Count<LaunchEffect>(first), 1u);
  std::uint64_t session = 0;
  for (const AgentEffect& e : first) {
    if (const auto* launch = std::get_if<LaunchEffect>(&e)) session = launch->session;
  }
  EXPECT_NE(session, 0u);
  AgentEffects done = core_.OnDriverOutput("run-1", OneRecordOutput(), kT0 + 1s);
  std::vector<proto::RunFinished> finished = Sent<proto::RunFinished>(done);
  ASSERT_EQ(finished.size(), 1u) << "the run ends at done, with no exit";
  EXPECT_EQ(finished[0].status, proto::RunStatus::kSucceeded) << finished[0].error;
  std::vector<proto::Heartbeat> beats = Sent<proto::Heartbeat>(done);
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_EQ(beats[0].warm_sessions,
            (std::vector<proto::WarmSession>{{"test-engine@1", "synth:x", {{"quant", "q4"}}}}));
  AgentEffects second = Prepare("run-2", "q4", kT0 + 2s);
  EXPECT_EQ(Count<LaunchEffect>(second), 0u);
  ASSERT_EQ(Count<FeedSessionEffect>(second), 1u);
  EXPECT_EQ(std::get<FeedSessionEffect>(second.back()).session, session);
  EXPECT_EQ(core_.counters().sessions_started, (std::map<std::string, std::uint64_t>{{"warm", 1}}));
  EXPECT_EQ(core_.counters().warm_jobs, (std::map<std::string, std::uint64_t>{{"warm", 1}}));
  EXPECT_EQ(core_.Gauges().sessions_busy, 1u);
  EXPECT_EQ(core_.Gauges().sessions_idle, 0u);
}

TEST_F(AgentCoreSessionTest, AnIdleSessionIsClosedWhenWarmIdleHasPassed) {
  StartWelcomed(60s);
  Prepare("run-1", "q4", kT0);
  core_.OnDriverOutput("run-1", OneRecordOutput(), kT0 + 1s);
  EXPECT_EQ(core_.NextDeadline(), kT0 + 11s) << "before the heartbeat at kT0 + 60 s";
  EXPECT_EQ(Count<CloseSessionEffect>(core_.Tick(kT0 + 11s - 1ms)), 0u);
  EXPECT_EQ(Count<CloseSessionEffect>(core_.Tick(kT0 + 11s)), 1u);
  EXPECT_EQ(core_.sessions(), 0u);
  EXPECT_EQ(Count<LaunchEffect>(Prepare("run-2", "q4", kT0 + 12s)), 1u);
}

TEST_F(AgentCoreSessionTest, AtTheLimitAJobOfAnotherKeyClosesTheIdleSession) {
  StartWelcomed(60s);
  Prepare("run-1", "q4", kT0);
  core_.OnDriverOutput("run-1", OneRecordOutput(), kT0 + 1s);
  AgentEffects other = Prepare("run-2", "q8", kT0 + 2s);
  EXPECT_EQ(Count<CloseSessionEffect>(other), 1u);
  EXPECT_EQ(Count<LaunchEffect>(other), 1u);
  EXPECT_EQ(core_.sessions(), 1u);
}

TEST_F(AgentCoreSessionTest, AnEngineErrorClosesTheSessionAndAJobErrorKeepsIt) {
  StartWelcomed(60s);
  std::string hello = EncodeDriverFrame(DriverFrameType::kHello, "{}");
  Prepare("run-1", "q4", kT0);
  AgentEffects kept = core_.OnDriverOutput(
      "run-1", hello + EncodeDriverFrame(DriverFrameType::kError, R"({"code":"invalid_job"})"),
      kT0);
  EXPECT_EQ(Count<CloseSessionEffect>(kept), 0u);
  EXPECT_EQ(core_.sessions(), 1u);
  Prepare("run-2", "q4", kT0);
  AgentEffects closed = core_.OnDriverOutput(
      "run-2", hello + EncodeDriverFrame(DriverFrameType::kError, R"({"code":"engine_error"})"),
      kT0);
  EXPECT_EQ(Count<CloseSessionEffect>(closed), 1u);
  EXPECT_EQ(core_.sessions(), 0u);
}

}  // namespace
}  // namespace orch::agent
