#include "cli/status_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace orch::cli {
namespace {

using std::chrono::milliseconds;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

protocol::JobStatus Job(std::string id, std::string cell, std::string state,
                        std::string reason = "", bool runnable = true) {
  protocol::JobStatus job;
  job.job_id = std::move(id);
  job.experiment = "exp";
  job.cell = std::move(cell);
  job.workload = "readme-128";
  job.state = std::move(state);
  job.reason = std::move(reason);
  job.runnable = runnable;
  return job;
}

protocol::StatusReply Reply() {
  protocol::StatusReply status;
  protocol::ExperimentProgress e{"exp", 4, 1, 1, 1, 0, milliseconds(0)};
  e.cancelled = 1;
  e.unrunnable = 1;
  status.experiments = {e};
  protocol::JobStatus running = Job("aaaaaaaaaaaabbbb", "baseline", "running");
  running.agent_id = "local-1";
  running.host = "box";
  running.attempts = 1;
  running.elapsed = milliseconds(65000);
  status.jobs = {
      running,
      Job("ccccccccccccdddd", "engine=llama.cpp@b8391", "pending",
          "no connected agent offers engine llama.cpp@b8391 (offered: llama.cpp@b8390)", false)};
  protocol::AgentSummary agent{
      "local-1",        "box", "cpu", {"llama.cpp@b8390"}, protocol::AgentState::kConnected, {"r1"},
      milliseconds(200)};
  agent.positions_per_second = 1523.4;
  agent.slots = 2;
  status.agents = {agent};
  return status;
}

TEST(StatusTextTest, ShowsRunningJobsUnrunnableJobsAndAgentRates) {
  std::string text = FormatStatusText(Reply(), false);
  EXPECT_THAT(text, HasSubstr("0 failed, 1 cancelled, ETA unknown"));
  EXPECT_THAT(text,
              HasSubstr("1 pending jobs can run on no connected agent (orch status --jobs exp)"));
  EXPECT_THAT(text, HasSubstr("RUNNING\n  aaaaaaaaaaaa  baseline  readme-128  local-1@box  1m05s"));
  EXPECT_THAT(text, HasSubstr("WAITING FOR AN AGENT THAT CAN RUN THEM"));
  EXPECT_THAT(text, HasSubstr("no connected agent offers engine llama.cpp@b8391"));
  EXPECT_THAT(text, HasSubstr("runs 1/2  1523 positions/s"));
  protocol::StatusReply delivering = Reply();
  delivering.agents[0].current_runs = {"r1", "r2", "r3"};
  delivering.agents[0].delivering_runs = 1;
  EXPECT_THAT(FormatStatusText(delivering, false),
              HasSubstr("runs 2/2 +1 delivering  1523 positions/s"));
  EXPECT_THAT(text, Not(HasSubstr("\033["))) << "no colour when not a terminal";
}

TEST(StatusTextTest, TheJobsTableHasAColumnPerFactAndAReasonPerJob) {
  std::string table = FormatJobsTable(Reply());
  EXPECT_THAT(table, HasSubstr("JOB"));
  EXPECT_THAT(table, HasSubstr("AGENT@HOST"));
  EXPECT_THAT(table, HasSubstr("REASON"));
  EXPECT_THAT(table, HasSubstr("local-1@box"));
  EXPECT_THAT(table, HasSubstr("(offered: llama.cpp@b8390)"));
}

TEST(StatusTextTest, AFinishedJobShowsHowLongItsRunTookAndAPendingOneADash) {
  protocol::StatusReply reply = Reply();
  protocol::JobStatus done = Job("eeeeeeeeeeeeffff", "baseline", "succeeded");
  done.agent_id = "local-1";
  done.host = "box";
  done.attempts = 1;
  done.elapsed = milliseconds(3500);
  reply.jobs.push_back(done);
  std::string table = FormatJobsTable(reply);
  EXPECT_THAT(table, ContainsRegex("eeeeeeeeeeee .* succeeded +local-1@box +1 +3s "));
  EXPECT_THAT(table, ContainsRegex("cccccccccccc .* pending +- +0 +- "));
}

// A reply lists at most kMaxStatusJobs: the table says how many more there are, and the
// unrunnable count comes from the experiments' own counts, not the list's length.
TEST(StatusTextTest, JobsLeftOutOfAReplyAreCountedAndSaid) {
  protocol::StatusReply reply = Reply();
  reply.jobs_omitted = 26'000;
  EXPECT_THAT(FormatJobsTable(reply),
              HasSubstr("... 26000 more jobs not listed (a reply lists at most 10000)"));
  reply.experiments[0].unrunnable = 26'001;
  std::size_t count = 0;
  std::string unrunnable = FormatUnrunnableJobs(reply, &count);
  EXPECT_EQ(count, 26'001u);
  EXPECT_THAT(unrunnable, HasSubstr("... 26000 more jobs not listed"));
  EXPECT_EQ(nlohmann::json::parse(FormatStatusJson(reply))["jobs_omitted"], 26'000);
}

// The ETA says what it rests on: measured runs and cells, and cells not yet measured.
TEST(StatusTextTest, AKnownEtaSaysHowManyRunsAndCellsItIsMeasuredFrom) {
  protocol::StatusReply status = Reply();
  protocol::ExperimentProgress& e = status.experiments[0];
  e.eta_known = true;
  e.eta = milliseconds(240'000);
  e.eta_runs = 12;
  e.eta_cells = 3;
  e.eta_cells_unmeasured = 2;
  EXPECT_THAT(FormatStatusText(status, false),
              HasSubstr("ETA 4m00s (from 12 runs of 3 cells; 2 cells not yet measured)\n"));
  nlohmann::json doc = nlohmann::json::parse(FormatStatusJson(status));
  EXPECT_EQ(doc["experiments"][0]["eta_runs"], 12);
  EXPECT_EQ(doc["experiments"][0]["eta_cells_unmeasured"], 2);
  e.eta_cells_unmeasured = 0;
  e.eta_runs = 1;
  e.eta_cells = 1;
  EXPECT_THAT(FormatStatusText(status, false), HasSubstr("ETA 4m00s (from 1 run of 1 cell)\n"));
}

TEST(StatusTextTest, JsonHasJobsAndANullEtaWhenUnknown) {
  nlohmann::json doc = nlohmann::json::parse(FormatStatusJson(Reply()));
  EXPECT_TRUE(doc["experiments"][0]["eta_ms"].is_null());
  EXPECT_EQ(doc["experiments"][0]["cancelled"], 1);
  EXPECT_EQ(doc["experiments"][0]["unrunnable"], 1);
  EXPECT_EQ(doc["jobs"][1]["runnable"], false);
  EXPECT_EQ(doc["jobs"][0]["agent"], "local-1");
  EXPECT_DOUBLE_EQ(doc["agents"][0]["positions_per_second"].get<double>(), 1523.4);
  protocol::StatusReply known = Reply();
  known.experiments[0].eta_known = true;
  known.experiments[0].eta = milliseconds(4000);
  EXPECT_EQ(nlohmann::json::parse(FormatStatusJson(known))["experiments"][0]["eta_ms"], 4000);
}

TEST(StatusTextTest, AQuarantinedDriverIsShownUnderItsAgentInTextAndJson) {
  protocol::StatusReply status = Reply();
  EXPECT_THAT(FormatStatusText(status, false), Not(HasSubstr("quarantined")));
  status.agents[0].quarantined =
      "llamacpp-b8391 (llama.cpp@b8391): 3 runs in a row failed within 5000 ms of launch";
  EXPECT_THAT(FormatStatusText(status, false),
              HasSubstr(" ago\n    quarantined: llamacpp-b8391 (llama.cpp@b8391): "
                        "3 runs in a row failed"));
  EXPECT_EQ(nlohmann::json::parse(FormatStatusJson(status))["agents"][0]["quarantined"],
            status.agents[0].quarantined);
}

// An agent known only from stored runs (an imported bundle's contributor) never sent a
// heartbeat: its line says so instead of "heartbeat 0s ago".
TEST(StatusTextTest, AnAgentNeverSeenHasNoHeartbeatOrRegistrationFigures) {
  protocol::StatusReply status = Reply();
  protocol::AgentSummary imported;
  imported.agent_id = "carol/local-1";
  imported.state = protocol::AgentState::kNeverSeen;
  status.agents.push_back(imported);
  std::string text = FormatStatusText(status, false);
  EXPECT_THAT(text, HasSubstr("\n  carol/local-1  never seen by this coordinator (known from "
                              "stored runs)\n"));
  EXPECT_THAT(text, Not(HasSubstr("carol/local-1  host")));
}

TEST(StatusTextTest, AnInsecureCoordinatorIsSaidFirst) {
  protocol::StatusReply status = Reply();
  EXPECT_THAT(FormatStatusText(status, false), Not(HasSubstr("INSECURE")));
  status.security = "INSECURE (plain sockets on tcp://0.0.0.0:7700; insecure = true)";
  std::string text = FormatStatusText(status, false);
  EXPECT_EQ(text.find("COORDINATOR INSECURE (plain sockets on tcp://0.0.0.0:7700"), 0u);
  EXPECT_EQ(nlohmann::json::parse(FormatStatusJson(status))["security"], status.security);
}

TEST(StatusTextTest, ExperimentsTableCountsEveryState) {
  std::string table = FormatExperimentsTable(Reply());
  EXPECT_THAT(table, HasSubstr("CANCELLED"));
  EXPECT_THAT(table, HasSubstr("exp"));
  EXPECT_EQ(FormatExperimentsTable({}), "(no experiments submitted)\n");
}

}  // namespace
}  // namespace orch::cli
