// The pure core with a fake clock: events in, effects out.
#include "coordinator/coordinator_core.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kEngine;
using testing::PlanJson;
using ::testing::SizeIs;
using testing::SmallSpec;
using testing::TestOptions;

class CoreTest : public ::testing::Test {
 protected:
  CoreTest() : core_(TestOptions(), [this](std::string_view line) { log_.emplace_back(line); }) {}

  Effects Submit(const std::string& spec) {
    return core_.OnMessage("cli", protocol::Submit{PlanJson(spec)}, now_);
  }
  Effects Hello(const std::string& agent, int slots = 1,
                std::vector<std::string> engines = {kEngine}, std::vector<std::string> running = {},
                std::string incarnation = "") {
    protocol::Hello hello;
    hello.agent_id = agent;
    hello.incarnation = std::move(incarnation);
    hello.capabilities = {std::move(engines), "cpu", 0, slots, {}};
    hello.running_runs = std::move(running);
    return core_.OnMessage(agent, hello, now_);
  }
  static std::vector<protocol::Assign> Assigns(const Effects& effects, const std::string& to = "") {
    std::vector<protocol::Assign> out;
    for (const Effect& e : effects) {
      auto* send = std::get_if<SendEffect>(&e);
      if (send == nullptr || (!to.empty() && send->peer != to)) continue;
      if (auto* a = std::get_if<protocol::Assign>(&send->message)) out.push_back(*a);
    }
    return out;
  }
  // What the store would hand back after storing RunFinished with all chunks.
  store::RunRecord Finished(const protocol::Assign& assign, const std::string& agent,
                            store::RunState state, std::string error = "") {
    store::RunRecord run;
    run.id = assign.run_id;
    run.job_id = assign.job_id;
    run.agent_id = agent;
    run.state = state;
    run.error = std::move(error);
    run.finished = true;
    run.chunks_expected = 0;
    return run;
  }

  std::vector<std::string> log_;
  std::chrono::milliseconds now_{50'000};
  CoordinatorCore core_;
};

TEST_F(CoreTest, SubmitStoresThePlanBeforeAnythingIsAssigned) {
  Effects effects = Submit(SmallSpec("exp", 2));
  ASSERT_THAT(effects, SizeIs(2));  // the plan, then its event (coordinator/effects.h)
  EXPECT_TRUE(std::holds_alternative<ApplyEffect>(effects[1]));
  auto* put = std::get_if<PutPlanEffect>(&effects[0]);
  ASSERT_NE(put, nullptr);
  EXPECT_EQ(put->plan.experiment, "exp");
  EXPECT_THAT(put->jobs, SizeIs(2));
  EXPECT_EQ(put->peer, "cli");
}

// Regression: registrations were not logged, so an admin could not tell from the log
// whether (and with what) an agent came back.
TEST_F(CoreTest, EachRegistrationIsLoggedWithWhatTheAgentOffers) {
  Hello("box-1", 2, {kEngine, "torch@2.5"});
  EXPECT_THAT(log_, ::testing::Contains("agent box-1 registered: cpu, 2 slots, engines " +
                                        std::string(kEngine) +
                                        ", torch@2.5, 0 model files, 0 runs in flight"));
  Hello("box-2", 1, {});
  EXPECT_THAT(log_, ::testing::Contains("agent box-2 registered: cpu, 1 slot, engines none, 0 "
                                        "model files, 0 runs in flight"));
}

TEST_F(CoreTest, AnInvalidPlanIsRefusedWithTheReason) {
  Effects effects = core_.OnMessage("cli", protocol::Submit{"{\"schema\":\"x\"}"}, now_);
  ASSERT_THAT(effects, SizeIs(1));
  auto reply = std::get<protocol::CommandReply>(std::get<SendEffect>(effects[0]).message);
  EXPECT_FALSE(reply.ok);
  EXPECT_THAT(reply.message, HasSubstr("plan.schema"));
}

TEST_F(CoreTest, AssignsOnlyToAgentsThatMeetTheRequirements) {
  Submit(SmallSpec("exp", 1));
  EXPECT_THAT(Assigns(Hello("wrong-engine", 1, {"vllm@0.9"})), SizeIs(0));
  Effects effects = Hello("right-engine");
  auto assigns = Assigns(effects, "right-engine");
  ASSERT_THAT(assigns, SizeIs(1));
  // The assignment is written to the store before the Assign is sent.
  ASSERT_THAT(effects, SizeIs(4));  // the registration's event, Welcome, Apply, Assign
  EXPECT_TRUE(std::holds_alternative<ApplyEffect>(effects[2]));
  EXPECT_EQ(std::get<ApplyEffect>(effects[2]).change.run->id, assigns[0].run_id);
}

TEST_F(CoreTest, FillsEverySlotAndNoMore) {
  Submit(SmallSpec("exp", 5));
  EXPECT_THAT(Assigns(Hello("agent-1", 3)), SizeIs(3));
  EXPECT_THAT(Assigns(core_.Tick(now_)), SizeIs(0));
  EXPECT_THAT(Assigns(Hello("agent-2", 3)), SizeIs(2));
}

// Two baseline jobs (quant q4_0) then one with quant q8_0.
std::string QuantSpec() { return SmallSpec("exp", 2) + "\n[alternatives]\nquant = [\"q8_0\"]\n"; }

std::string ValueOf(const protocol::Assign& assign, const std::string& axis) {
  for (const protocol::KeyValue& kv : assign.coordinate) {
    if (kv.key == axis) return kv.value;
  }
  return "";
}

TEST_F(CoreTest, AnAgentWithAWarmSessionGetsTheJobThatFitsItFirst) {
  Submit(QuantSpec());
  std::vector<protocol::Assign> first = Assigns(Hello("cold"));
  ASSERT_THAT(first, SizeIs(1));
  EXPECT_EQ(ValueOf(first[0], "quant"), "q4_0") << "without warm sessions: plan order";
  protocol::Hello hello;
  hello.agent_id = "warm";
  hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  hello.warm_sessions = {{kEngine, first[0].requirements.model, {{"quant", "q8_0"}}}};
  std::vector<protocol::Assign> warm = Assigns(core_.OnMessage("warm", hello, now_));
  ASSERT_THAT(warm, SizeIs(1));
  EXPECT_EQ(ValueOf(warm[0], "quant"), "q8_0");
}

TEST_F(CoreTest, AHeartbeatsWarmSessionsSteerTheDispatchAfterARunEnds) {
  Submit(QuantSpec());
  std::vector<protocol::Assign> first = Assigns(Hello("box", 1));
  ASSERT_THAT(first, SizeIs(1));
  ASSERT_EQ(ValueOf(first[0], "quant"), "q4_0");
  // The run ends; its session is idle and warm with q8_0 (as if it had run one).
  protocol::WarmSession q8{kEngine, first[0].requirements.model, {{"quant", "q8_0"}}};
  core_.OnMessage("box", protocol::Heartbeat{"box", {first[0].run_id}, 0, {q8}}, now_);
  std::vector<protocol::Assign> next =
      Assigns(core_.OnRunStored(Finished(first[0], "box", store::RunState::kSucceeded), now_));
  ASSERT_THAT(next, SizeIs(1));
  EXPECT_EQ(ValueOf(next[0], "quant"), "q8_0") << "the q4_0 job waits one dispatch";
}

// The heartbeat an agent sends as a warm session's job ends, before that run's results
// are durable and stored: the run holds no slot any more, and the job that fits the
// idle session is assigned at once.
TEST_F(CoreTest, ARunTheAgentNoLongerListsHoldsNoSlotWhileItsResultsArrive) {
  Submit(QuantSpec());
  std::vector<protocol::Assign> first = Assigns(Hello("box", 1));
  ASSERT_THAT(first, SizeIs(1));
  core_.OnMessage("box", protocol::RunStarted{first[0].run_id}, now_);
  protocol::WarmSession q8{kEngine, first[0].requirements.model, {{"quant", "q8_0"}}};
  std::vector<protocol::Assign> next =
      Assigns(core_.OnMessage("box", protocol::Heartbeat{"box", {}, 1, {q8}}, now_));
  ASSERT_THAT(next, SizeIs(1));
  EXPECT_EQ(ValueOf(next[0], "quant"), "q8_0");
  // Status says so: two runs in flight on one slot, one of them delivering.
  protocol::StatusReply status = core_.Status({}, now_);
  ASSERT_THAT(status.agents, SizeIs(1));
  EXPECT_THAT(status.agents[0].current_runs, SizeIs(2));
  EXPECT_EQ(status.agents[0].delivering_runs, 1u);
  EXPECT_EQ(protocol::AgentRunsText(status.agents[0]), "1/1 +1 delivering");
  // Its RunFinished, stored later, frees nothing more: the slot is the new run's.
  std::vector<protocol::Assign> after =
      Assigns(core_.OnRunStored(Finished(first[0], "box", store::RunState::kSucceeded), now_));
  EXPECT_THAT(after, SizeIs(0));
  status = core_.Status({}, now_);
  EXPECT_EQ(status.agents[0].delivering_runs, 0u);
  EXPECT_EQ(protocol::AgentRunsText(status.agents[0]), "1/1");
}

// One job ahead of its spool per slot, not more: a second delivering run holds a slot.
TEST_F(CoreTest, AnAgentRunsAtMostOneJobAheadOfItsResultsPerSlot) {
  Submit(QuantSpec());
  std::vector<protocol::Assign> first = Assigns(Hello("box", 1));
  ASSERT_THAT(first, SizeIs(1));
  core_.OnMessage("box", protocol::RunStarted{first[0].run_id}, now_);
  std::vector<protocol::Assign> second =
      Assigns(core_.OnMessage("box", protocol::Heartbeat{"box", {}, 1}, now_));
  ASSERT_THAT(second, SizeIs(1));
  core_.OnMessage("box", protocol::RunStarted{second[0].run_id}, now_);
  // The second ends too while the first's results are still on their way.
  std::vector<protocol::Assign> third =
      Assigns(core_.OnMessage("box", protocol::Heartbeat{"box", {}, 1}, now_));
  EXPECT_THAT(third, SizeIs(0));
  // The first's RunFinished is stored: one run delivering again, its slot free.
  std::vector<protocol::Assign> after =
      Assigns(core_.OnRunStored(Finished(first[0], "box", store::RunState::kSucceeded), now_));
  EXPECT_THAT(after, SizeIs(1));
}

// A run assigned but not started yet may be missing from a heartbeat the agent built
// before the Assign reached it: it keeps its slot.
TEST_F(CoreTest, ARunNotStartedKeepsItsSlotWhenAHeartbeatOmitsIt) {
  Submit(QuantSpec());
  std::vector<protocol::Assign> first = Assigns(Hello("box", 1));
  ASSERT_THAT(first, SizeIs(1));
  std::vector<protocol::Assign> next =
      Assigns(core_.OnMessage("box", protocol::Heartbeat{"box", {}, 1}, now_));
  EXPECT_THAT(next, SizeIs(0));
}

TEST_F(CoreTest, RunIdsAreUniqueAndNameTheJobAndAttempt) {
  Submit(SmallSpec("exp", 2));
  auto assigns = Assigns(Hello("agent-1", 2));
  ASSERT_THAT(assigns, SizeIs(2));
  EXPECT_NE(assigns[0].run_id, assigns[1].run_id);
  EXPECT_EQ(assigns[0].run_id.substr(0, 12), assigns[0].job_id.substr(0, 12));
  EXPECT_THAT(assigns[0].run_id, HasSubstr("-1-"));
}

TEST_F(CoreTest, NextDeadlineIsTheEarliestLeaseOrAgentTimeout) {
  EXPECT_EQ(core_.NextDeadline(), std::nullopt);
  Submit(SmallSpec());
  Hello("agent-1");
  EXPECT_EQ(core_.NextDeadline(), now_ + TestOptions().agent_timeout);
}

TEST_F(CoreTest, ASilentAgentIsDisconnectedAndGetsNoNewWork) {
  Hello("agent-1");
  now_ += std::chrono::milliseconds(5000);
  core_.Tick(now_);
  EXPECT_EQ(core_.agents().all().at("agent-1").state, protocol::AgentState::kDisconnected);
  EXPECT_THAT(Assigns(Submit(SmallSpec())), SizeIs(0));
}

TEST_F(CoreTest, ARefusedJobGoesToAnotherAgent) {
  Submit(SmallSpec());
  auto first = Assigns(Hello("picky"));
  ASSERT_THAT(first, SizeIs(1));
  Effects finish = core_.OnMessage(
      "picky",
      protocol::RunFinished{first[0].run_id, protocol::RunStatus::kFailed, "", "no model", 0},
      now_);
  ASSERT_THAT(finish, SizeIs(1));
  EXPECT_TRUE(std::holds_alternative<FinishRunEffect>(finish[0]));
  Effects stored =
      core_.OnRunStored(Finished(first[0], "picky", store::RunState::kFailed, "no model"), now_);
  EXPECT_THAT(Assigns(stored),
              SizeIs(0));  // not back to the agent that refused it
  auto second = Assigns(Hello("willing"));
  ASSERT_THAT(second, SizeIs(1));
  EXPECT_EQ(second[0].job_id, first[0].job_id);
}

TEST_F(CoreTest, RunFinishedIsStoredWithItsSummary) {
  Submit(SmallSpec());
  auto assign = Assigns(Hello("agent-1")).at(0);
  core_.OnMessage("agent-1", protocol::RunStarted{assign.run_id}, now_);
  Effects finish =
      core_.OnMessage("agent-1",
                      protocol::RunFinished{assign.run_id, protocol::RunStatus::kSucceeded,
                                            R"({"done":{"token_text":{"5":"math"}}})", "", 2},
                      now_);
  ASSERT_THAT(finish, SizeIs(1));
  auto* effect = std::get_if<FinishRunEffect>(&finish[0]);
  ASSERT_NE(effect, nullptr);
  EXPECT_EQ(effect->outcome.summary, R"({"done":{"token_text":{"5":"math"}}})");
  EXPECT_EQ(effect->outcome.chunks_expected, 2);
}

TEST_F(CoreTest, ASucceededRunCompletesItsJob) {
  Submit(SmallSpec());
  auto assign = Assigns(Hello("agent-1")).at(0);
  core_.OnMessage("agent-1", protocol::RunStarted{assign.run_id}, now_);
  now_ += std::chrono::milliseconds(4000);
  Effects effects =
      core_.OnRunStored(Finished(assign, "agent-1", store::RunState::kSucceeded), now_);
  ASSERT_THAT(effects, SizeIs(1));
  const auto& change = std::get<ApplyEffect>(effects[0]).change;
  EXPECT_EQ(change.job->state, store::JobState::kSucceeded);
  EXPECT_EQ(change.events.at(0).kind, "job.succeeded");
}

TEST_F(CoreTest, ARunMissingChunksDoesNotCompleteItsJob) {
  Submit(SmallSpec());
  auto assign = Assigns(Hello("agent-1")).at(0);
  store::RunRecord run = Finished(assign, "agent-1", store::RunState::kSucceeded);
  run.chunks_expected = 2;
  run.chunks_received = 1;
  EXPECT_THAT(core_.OnRunStored(run, now_), SizeIs(0));
  run.chunks_received = 2;
  EXPECT_THAT(core_.OnRunStored(run, now_), SizeIs(1));
}

TEST_F(CoreTest, AHelloWithoutItsRunsReleasesThem) {
  Submit(SmallSpec());
  auto assign = Assigns(Hello("agent-1")).at(0);
  Effects effects = Hello("agent-1");  // restarted, lists nothing
  auto again = Assigns(effects);
  ASSERT_THAT(again, SizeIs(1));
  EXPECT_EQ(again[0].job_id, assign.job_id);
  EXPECT_NE(again[0].run_id, assign.run_id);
}

TEST_F(CoreTest, AHelloFromARestartedProcessReleasesItsUnstartedRuns) {
  Submit(SmallSpec());
  auto assign = Assigns(Hello("agent-1", 1, {kEngine}, {}, "process-1")).at(0);
  Effects effects = Hello("agent-1", 1, {kEngine}, {}, "process-2");
  EXPECT_THAT(log_, ::testing::Contains(HasSubstr("registered without run " + assign.run_id +
                                                  ": it ended with the agent's previous process")));
  auto again = Assigns(effects);
  ASSERT_THAT(again, SizeIs(1));
  EXPECT_EQ(again[0].job_id, assign.job_id);
  EXPECT_NE(again[0].run_id, assign.run_id);
}

// Regression (seen in the chaos suite under a full disk): an agent whose messages went
// unacknowledged registered again; its Hello crossed the Assign of a new run, so it did
// not list it, the run was released and its job assigned a second time while the agent
// ran the first.
TEST_F(CoreTest, AHelloFromTheSameProcessKeepsARunWhoseAssignMayHaveCrossedIt) {
  Submit(SmallSpec());
  auto assign = Assigns(Hello("agent-1", 1, {kEngine}, {}, "process-1")).at(0);
  Effects effects = Hello("agent-1", 1, {kEngine}, {}, "process-1");
  EXPECT_THAT(Assigns(effects), SizeIs(0));
  EXPECT_THAT(log_,
              ::testing::Contains(HasSubstr("registered again without run " + assign.run_id)));
  // The agent got the Assign after all: its run goes on as any other.
  core_.OnMessage("agent-1", protocol::RunStarted{assign.run_id}, now_);
  Effects finished =
      core_.OnRunStored(Finished(assign, "agent-1", store::RunState::kSucceeded), now_);
  ASSERT_THAT(finished, SizeIs(1));
  auto* apply = std::get_if<ApplyEffect>(&finished[0]);
  ASSERT_NE(apply, nullptr);
  EXPECT_EQ(apply->change.job->state, store::JobState::kSucceeded);
}

TEST_F(CoreTest, AHelloFromTheSameProcessReleasesAStartedRunItNoLongerLists) {
  Submit(SmallSpec());
  auto assign = Assigns(Hello("agent-1", 1, {kEngine}, {}, "process-1")).at(0);
  core_.OnMessage("agent-1", protocol::RunStarted{assign.run_id}, now_);
  auto again = Assigns(Hello("agent-1", 1, {kEngine}, {}, "process-1"));
  ASSERT_THAT(again, SizeIs(1));
  EXPECT_EQ(again[0].job_id, assign.job_id);
}

TEST_F(CoreTest, AHelloFromAnotherConnectionIdIsRejected) {
  protocol::Hello hello;
  hello.agent_id = "agent-1";
  hello.capabilities.hardware_class = "cpu";
  Effects effects = core_.OnMessage("impostor", hello, now_);
  ASSERT_THAT(effects, SizeIs(1));
  auto reject = std::get<protocol::Reject>(std::get<SendEffect>(effects[0]).message);
  EXPECT_THAT(reject.reason, HasSubstr("does not match"));
}

// A second agent under a connected agent's id speaks under an alias "ID~..."
// (protocol/peer_names.h): its Reject says what happened and what to do.
TEST_F(CoreTest, ASecondAgentUnderAConnectedAgentsIdIsToldTwoAgentsShareIt) {
  protocol::Hello first;
  first.agent_id = "agent-1";
  first.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  first.host_facts = {{"hostname", "host-agent-1"}};
  (void)core_.OnMessage("agent-1", first, now_);
  protocol::Hello hello = first;
  hello.host_facts = {{"hostname", "laptop"}};
  Effects effects = core_.OnMessage("agent-1~0a1b2c", hello, now_);
  ASSERT_THAT(effects, SizeIs(1));
  auto reject = std::get<protocol::Reject>(std::get<SendEffect>(effects[0]).message);
  EXPECT_EQ(reject.reason,
            "agent id agent-1 is in use by another agent connected on host host-agent-1 (this "
            "one runs on host laptop): two agents were given one id; give each its own `id` in "
            "its config. This one is refused while the other stays connected.");
}

TEST_F(CoreTest, AHeartbeatFromAnUnregisteredAgentAsksForHello) {
  Effects effects = core_.OnMessage("agent-1", protocol::Heartbeat{"agent-1", {}, 1}, now_);
  ASSERT_THAT(effects, SizeIs(1));
  auto reject = std::get<protocol::Reject>(std::get<SendEffect>(effects[0]).message);
  EXPECT_THAT(reject.reason, HasSubstr("send Hello"));
}

TEST_F(CoreTest, StatusReportsProgressAgentsAndEta) {
  Submit(SmallSpec("exp", 3));
  auto assigns = Assigns(Hello("agent-1", 2));
  now_ += std::chrono::milliseconds(10'000);
  core_.OnRunStored(Finished(assigns[0], "agent-1", store::RunState::kSucceeded), now_);
  protocol::StatusReply status = core_.Status({}, now_);
  ASSERT_THAT(status.experiments, SizeIs(1));
  const auto& progress = status.experiments[0];
  EXPECT_EQ(progress.total, 3u);
  EXPECT_EQ(progress.succeeded, 1u);
  EXPECT_EQ(progress.running, 2u);  // the freed slot took the third job
  EXPECT_EQ(progress.pending, 0u);
  EXPECT_EQ(progress.eta, std::chrono::milliseconds(10'000));
  ASSERT_THAT(status.agents, SizeIs(1));
  EXPECT_THAT(status.agents[0].current_runs, SizeIs(2));
  EXPECT_EQ(status.agents[0].heartbeat_age, std::chrono::milliseconds(10'000));
  EXPECT_THAT(status.agents[0].engines, ElementsAre(kEngine));
}

// Status walks the job table, which has no order: the jobs it lists still come
// experiment by experiment in submission order, each in its plan's order.
TEST_F(CoreTest, StatusListsJobsInSubmissionAndPlanOrder) {
  std::string first = PlanJson(SmallSpec("zeta", 7));
  std::string second = PlanJson(SmallSpec("alpha", 5));
  core_.OnMessage("cli", protocol::Submit{first}, now_);
  core_.OnMessage("cli", protocol::Submit{second}, now_);
  std::vector<std::string> expected;
  for (const std::string& plan : {first, second}) {
    Result<ParsedPlan> parsed = ParsePlanJson(plan);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    for (const PlannedJob& job : parsed->jobs) expected.push_back(job.id);
  }
  protocol::StatusRequest all;
  all.all_jobs = true;
  protocol::StatusReply status = core_.Status(all, now_);
  std::vector<std::string> listed;
  for (const protocol::JobStatus& job : status.jobs) listed.push_back(job.job_id);
  EXPECT_EQ(listed, expected);
  ASSERT_THAT(status.experiments, SizeIs(2));
  EXPECT_EQ(status.experiments[0].experiment, "zeta");
  EXPECT_EQ(status.experiments[0].pending, 7u);
  EXPECT_EQ(status.experiments[1].pending, 5u);
  // Nothing can run (no agent): every pending job is listed by default too, with why.
  protocol::StatusReply only = core_.Status({"alpha", false}, now_);
  ASSERT_THAT(only.jobs, SizeIs(5));
  EXPECT_EQ(only.jobs[0].job_id, expected[7]);
  EXPECT_FALSE(only.jobs[0].runnable);
  EXPECT_FALSE(only.jobs[0].reason.empty());
}

// An agent that quarantined a driver says so in a host fact; status shows it
// under the agent, and a Hello without it (the agent restarted) clears it.
TEST_F(CoreTest, StatusShowsTheDriversAnAgentQuarantined) {
  protocol::Hello hello;
  hello.agent_id = "agent-1";
  hello.capabilities = {{kEngine}, "cpu", 0, 1, {}};
  hello.host_facts = {{"hostname", "box"},
                      {"quarantined_drivers", "broken (llama.cpp@b8390): 3 runs in a row failed"}};
  core_.OnMessage("agent-1", hello, now_);
  protocol::StatusReply status = core_.Status({}, now_);
  ASSERT_THAT(status.agents, SizeIs(1));
  EXPECT_EQ(status.agents[0].host, "box");
  EXPECT_EQ(status.agents[0].quarantined, "broken (llama.cpp@b8390): 3 runs in a row failed");
  Hello("agent-1");
  EXPECT_EQ(core_.Status({}, now_).agents.at(0).quarantined, "");
}

// A result bundle's import tells the core only what it stored: the jobs it completed
// are no longer handed out, and the others still are.
TEST_F(CoreTest, AnImportedJobIsNoLongerHandedOutAndTheOthersStillAre) {
  Effects submitted = Submit(SmallSpec("exp", 2));
  auto* put = std::get_if<PutPlanEffect>(&submitted[0]);
  ASSERT_NE(put, nullptr);
  ASSERT_THAT(put->jobs, SizeIs(2));
  store::JobRecord completed = put->jobs[0];
  completed.state = store::JobState::kSucceeded;
  completed.current_run_id = "carol:rig-1";
  store::RunRecord run;
  run.id = "carol:rig-1";
  run.job_id = completed.id;
  run.agent_id = "carol/local-1";
  run.state = store::RunState::kSucceeded;
  run.finished = true;
  core_.OnImported({run}, {completed}, now_);

  EXPECT_EQ(core_.jobs().Find(completed.id)->state, store::JobState::kSucceeded);
  EXPECT_EQ(core_.jobs().Find(completed.id)->current_run, "carol:rig-1");
  std::vector<protocol::Assign> assigns = Assigns(Hello("box-1", 2));
  ASSERT_THAT(assigns, SizeIs(1));
  EXPECT_EQ(assigns[0].job_id, put->jobs[1].id);
  protocol::StatusReply status = core_.Status({}, now_);
  ASSERT_THAT(status.experiments, SizeIs(1));
  EXPECT_EQ(status.experiments[0].succeeded, 1u);
}

}  // namespace
}  // namespace orch::coordinator
