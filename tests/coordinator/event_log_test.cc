// The coordinator core's event log (what `orch events` prints), agent states (up,
// draining, drained, down, never seen), the ETA from measured run times per cell, and
// job submit times: the pure core with a fake clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/coordinator_core.h"
#include "tests/coordinator/coordinator_fixture.h"

namespace orch::coordinator {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::kEngine;
using testing::PlanJson;
using ::testing::SizeIs;
using testing::SmallSpec;
using testing::TestOptions;

// `kind subject: detail` of every event the effects append, in order.
std::vector<std::string> EventLines(const Effects& effects) {
  std::vector<std::string> lines;
  for (const Effect& effect : effects) {
    const auto* apply = std::get_if<ApplyEffect>(&effect);
    if (apply == nullptr) continue;
    for (const store::EventRecord& e : apply->change.events) {
      lines.push_back(e.kind + " " + e.subject + ": " + e.detail);
    }
  }
  return lines;
}

std::vector<std::string> EventKinds(const Effects& effects) {
  std::vector<std::string> kinds;
  for (const std::string& line : EventLines(effects))
    kinds.push_back(line.substr(0, line.find(' ')));
  return kinds;
}

std::vector<protocol::Assign> EventLogAssigns(const Effects& effects) {
  std::vector<protocol::Assign> out;
  for (const Effect& e : effects) {
    auto* send = std::get_if<SendEffect>(&e);
    if (send == nullptr) continue;
    if (auto* a = std::get_if<protocol::Assign>(&send->message)) out.push_back(*a);
  }
  return out;
}

// Two cells: the baseline (quant q4_0) and quant q8_0, `repeats` jobs each.
std::string TwoCellSpec(int repeats) {
  std::string spec = SmallSpec("exp", repeats);
  spec.replace(spec.find("cells = 1"), 9, "cells = " + std::to_string(repeats));
  return spec + "\n[alternatives]\nquant = [\"q8_0\"]\n";
}

class EventLogTest : public ::testing::Test {
 protected:
  EventLogTest()
      : core_(TestOptions(), [this](std::string_view line) { log_.emplace_back(line); }) {}

  Effects Submit(const std::string& spec) {
    return core_.OnMessage("cli", protocol::Submit{PlanJson(spec)}, now_);
  }
  Effects Hello(const std::string& agent, int slots = 1, std::string quarantined = "",
                std::string incarnation = "1") {
    protocol::Hello hello;
    hello.agent_id = agent;
    hello.incarnation = std::move(incarnation);
    hello.capabilities = {{kEngine}, "cpu", 0, slots, {}};
    hello.host_facts = {{"hostname", "host-" + agent}};
    if (!quarantined.empty()) hello.host_facts.push_back({"quarantined_drivers", quarantined});
    return core_.OnMessage(agent, hello, now_);
  }
  Effects Finish(const protocol::Assign& assign, const std::string& agent) {
    store::RunRecord run;
    run.id = assign.run_id;
    run.job_id = assign.job_id;
    run.agent_id = agent;
    run.state = store::RunState::kSucceeded;
    run.finished = true;
    run.chunks_expected = 0;
    return core_.OnRunStored(run, now_);
  }
  protocol::AgentSummary Agent(const std::string& id) {
    for (const protocol::AgentSummary& a : core_.Status({}, now_).agents) {
      if (a.agent_id == id) return a;
    }
    ADD_FAILURE() << "no agent " << id << " in the status";
    return {};
  }

  std::vector<std::string> log_;
  std::chrono::milliseconds now_{1'796'000'000'000};
  CoordinatorCore core_;
};

TEST_F(EventLogTest, SubmitRecordsThePlanAfterItsWriteAndStampsItsJobsWithTheTime) {
  Effects effects = Submit(SmallSpec("exp", 2));
  ASSERT_THAT(effects, SizeIs(2));
  const auto& put = std::get<PutPlanEffect>(effects[0]);  // the event only after the plan
  for (const store::JobRecord& job : put.jobs) EXPECT_EQ(job.submitted_at_ms, now_.count());
  EXPECT_THAT(EventLines(effects), ::testing::ElementsAre("plan.submitted exp: 2 jobs"));
  // The same plan again: no second submission.
  EXPECT_THAT(EventLines(Submit(SmallSpec("exp", 2))), IsEmpty());
}

TEST_F(EventLogTest, AnEditedAndACancelledPlanAreRecorded) {
  Submit(SmallSpec("exp", 2));
  EXPECT_THAT(EventLines(Submit(SmallSpec("exp", 3))),
              Contains("plan.edited exp: 3 jobs: 1 added, 0 dropped"));
  EXPECT_THAT(EventLines(core_.OnMessage("cli", protocol::CancelExperiment{"exp"}, now_)),
              Contains("plan.cancelled exp: 3 jobs cancelled by request"));
}

TEST_F(EventLogTest, RegistrationQuarantineAndDepartureAreRecordedAndLogged) {
  EXPECT_THAT(EventLines(Hello("box-1")),
              Contains("agent.registered box-1: host host-box-1, cpu, 1 slot, engines " +
                       std::string(kEngine) + ", 0 model files, 0 runs in flight"));
  EXPECT_THAT(EventLines(Hello("box-1", 1, "torch (torch@2.5): exited 1")),
              Contains("agent.quarantine box-1: torch (torch@2.5): exited 1"));
  EXPECT_THAT(EventKinds(Hello("box-1", 1, "torch (torch@2.5): exited 1")),
              ::testing::ElementsAre("agent.registered"));  // unchanged: not again
  EXPECT_THAT(EventLines(core_.OnDisconnected("box-1", now_)),
              Contains("agent.departed box-1: connection closed; 0 runs in flight keep their "
                       "leases"));
  EXPECT_THAT(EventLines(core_.OnDisconnected("box-1", now_)), IsEmpty());  // once
  EXPECT_THAT(log_, Contains(HasSubstr("agent box-1 disconnected")));

  Hello("box-2");
  now_ += TestOptions().agent_timeout;
  EXPECT_THAT(EventLines(core_.Tick(now_)),
              Contains("agent.departed box-2: silent for 5 s (timed out); 0 runs in flight keep "
                       "their leases"));
  EXPECT_EQ(Agent("box-2").state, protocol::AgentState::kDisconnected);
  EXPECT_EQ(protocol::AgentStateName(Agent("box-2").state), "down");
}

TEST_F(EventLogTest, ALostRunAndItsRetryAreRecorded) {
  Submit(SmallSpec("exp", 1));
  ASSERT_THAT(EventLogAssigns(Hello("box-1")), SizeIs(1));
  now_ += TestOptions().lease;
  std::vector<std::string> kinds = EventKinds(core_.Tick(now_));
  EXPECT_THAT(kinds, Contains("run.lost"));
  EXPECT_THAT(kinds, Contains("job.requeued"));
}

// Regression: a drained agent showed as "disconnected" forever once it went away, and
// nothing said when its last run had ended.
TEST_F(EventLogTest, ADrainedAgentIsDrainingUntilItsLastRunEndsThenDrainedEvenWhenGone) {
  Submit(SmallSpec("exp", 2));
  std::vector<protocol::Assign> assigns = EventLogAssigns(Hello("box-1"));
  ASSERT_THAT(assigns, SizeIs(1));
  Effects drain = core_.OnMessage("cli", protocol::Drain{"box-1"}, now_);
  EXPECT_THAT(EventLines(drain), ::testing::ElementsAre("agent.draining box-1: 1 in flight"));
  EXPECT_EQ(Agent("box-1").state, protocol::AgentState::kDraining);

  Effects finished = Finish(assigns[0], "box-1");
  EXPECT_THAT(EventLogAssigns(finished), IsEmpty());  // draining: no new run
  EXPECT_THAT(EventLines(finished), Contains("agent.drained box-1: no runs in flight"));
  EXPECT_EQ(Agent("box-1").state, protocol::AgentState::kDrained);

  core_.OnDisconnected("box-1", now_);
  EXPECT_EQ(Agent("box-1").state, protocol::AgentState::kDrained);
  EXPECT_EQ(protocol::AgentStateName(Agent("box-1").state), "drained");
  // The same agent process back: still drained, told again, given nothing.
  Effects back = Hello("box-1");
  EXPECT_THAT(EventLogAssigns(back), IsEmpty());
  EXPECT_EQ(Agent("box-1").state, protocol::AgentState::kDrained);
  // A restarted agent process takes work again.
  EXPECT_THAT(EventLogAssigns(Hello("box-1", 1, "", "2")), SizeIs(1));
  EXPECT_EQ(Agent("box-1").state, protocol::AgentState::kConnected);
  EXPECT_EQ(protocol::AgentStateName(Agent("box-1").state), "up");
}

TEST_F(EventLogTest, AgentsOfStoredRunsAreNeverSeenUntilTheyRegister) {
  std::string json = PlanJson(SmallSpec("exp", 1));
  Result<ParsedPlan> parsed = ParsePlanJson(json);
  ASSERT_TRUE(parsed.ok());
  store::StoreState state;
  state.plans.push_back(ToPlanRecord(*parsed, json));
  state.jobs = ToJobRecords(*parsed, 5);
  state.jobs[0].state = store::JobState::kSucceeded;
  state.jobs[0].current_run_id = "r1";
  store::RunRecord run;
  run.id = "r1";
  run.job_id = state.jobs[0].id;
  run.agent_id = "old-box";
  run.state = store::RunState::kSucceeded;
  run.finished = true;
  state.runs.push_back(run);
  core_.Restore(state, now_);
  EXPECT_EQ(Agent("old-box").state, protocol::AgentState::kNeverSeen);
  EXPECT_EQ(protocol::AgentStateName(Agent("old-box").state), "never seen");
  Hello("old-box");
  EXPECT_EQ(Agent("old-box").state, protocol::AgentState::kConnected);
  EXPECT_THAT(core_.Status({}, now_).agents, SizeIs(1));
  // The job's submit time comes back from the store.
  EXPECT_EQ(core_.jobs().Find(state.jobs[0].id)->ToRecord("exp").submitted_at_ms, 5);
}

// Runs the jobs of TwoCellSpec on one agent with one slot: a baseline run takes 10 s, a
// q8_0 run 100 s. Returns the last job's Assign once three have finished.
TEST_F(EventLogTest, TheEtaUsesEachCellsOwnRunTimesAndSaysWhatItRestsOn) {
  Submit(TwoCellSpec(2));
  std::vector<protocol::Assign> running = EventLogAssigns(Hello("box-1"));
  auto took = [](const protocol::Assign& a) {
    for (const protocol::KeyValue& kv : a.coordinate) {
      if (kv.key == "quant" && kv.value == "q8_0") return std::chrono::milliseconds(100'000);
    }
    return std::chrono::milliseconds(10'000);
  };
  for (int finished = 0; finished < 3; ++finished) {
    ASSERT_THAT(running, SizeIs(1));
    now_ += took(running[0]);
    running = EventLogAssigns(Finish(running[0], "box-1"));
  }
  ASSERT_THAT(running, SizeIs(1));
  protocol::ExperimentProgress progress = core_.Status({}, now_).experiments[0];
  EXPECT_TRUE(progress.eta_known);
  // The last job's own cell was measured: its time, not the mean of 10, 10/100 and 100.
  EXPECT_EQ(progress.eta, took(running[0]));
  EXPECT_EQ(progress.eta_runs, 3u);
  EXPECT_EQ(progress.eta_cells, 2u);
  EXPECT_EQ(progress.eta_cells_unmeasured, 0u);
}

TEST_F(EventLogTest, TheEtaCountsCellsNotYetMeasured) {
  Submit(TwoCellSpec(2));
  std::vector<protocol::Assign> first = EventLogAssigns(Hello("box-1", 1));
  ASSERT_THAT(first, SizeIs(1));
  now_ += std::chrono::milliseconds(10'000);
  ASSERT_THAT(EventLogAssigns(Finish(first[0], "box-1")), SizeIs(1));
  protocol::ExperimentProgress progress = core_.Status({}, now_).experiments[0];
  EXPECT_TRUE(progress.eta_known);
  EXPECT_EQ(progress.eta_runs, 1u);
  EXPECT_EQ(progress.eta_cells, 1u);
  EXPECT_EQ(progress.eta_cells_unmeasured, 1u);  // the other cell: at the mean, 10 s a job
  EXPECT_EQ(progress.eta, std::chrono::milliseconds(30'000));  // 3 jobs left, 1 slot
}

// Regression: after a restart the ETA came from the runs since the restart only (it said
// `1s` with 14 jobs pending); the stored runs' times are measurements too.
TEST_F(EventLogTest, AfterARestartTheEtaComesFromTheStoredRunTimes) {
  std::string json = PlanJson(SmallSpec("exp", 16));
  Result<ParsedPlan> parsed = ParsePlanJson(json);
  ASSERT_TRUE(parsed.ok());
  store::StoreState state;
  state.plans.push_back(ToPlanRecord(*parsed, json));
  state.jobs = ToJobRecords(*parsed, 1);
  for (int i = 0; i < 2; ++i) {
    store::JobRecord& job = state.jobs[i];
    job.state = store::JobState::kSucceeded;
    job.attempts = 1;
    job.current_run_id = "run-" + std::to_string(i);
    store::RunRecord run;
    run.id = job.current_run_id;
    run.job_id = job.id;
    run.agent_id = "box-1";
    run.state = store::RunState::kSucceeded;
    run.finished = true;
    run.assigned_at_ms = now_.count() - 200'000;
    run.ended_at_ms = now_.count() - 140'000;  // 60 s each
    state.runs.push_back(run);
  }
  std::sort(state.runs.begin(), state.runs.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  core_.Restore(state, now_);
  ASSERT_THAT(EventLogAssigns(Hello("box-1", 2)), SizeIs(2));
  protocol::ExperimentProgress progress = core_.Status({}, now_).experiments[0];
  EXPECT_EQ(progress.pending + progress.running, 14u);
  EXPECT_TRUE(progress.eta_known);
  EXPECT_EQ(progress.eta, std::chrono::milliseconds(60'000 * 14 / 2));
  EXPECT_EQ(progress.eta_runs, 2u);
}

}  // namespace
}  // namespace orch::coordinator
