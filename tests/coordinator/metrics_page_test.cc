// The coordinator's /metrics text and status page from values (coordinator/metrics_page.h).
#include "coordinator/metrics_page.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

protocol::StatusReply Reply() {
  protocol::StatusReply reply;
  protocol::ExperimentProgress e;
  e.experiment = "exp<1>";
  e.total = 5;
  e.succeeded = 2;
  e.running = 1;
  e.pending = 1;
  e.failed = 1;
  reply.experiments.push_back(e);
  protocol::AgentSummary a;
  a.agent_id = "a1";
  a.host = "gpu-box";
  a.engines = {"llama.cpp@b8390", "torch@2.5"};
  a.current_runs = {"r1"};
  a.heartbeat_age = std::chrono::milliseconds(1500);
  a.slots = 2;
  a.quarantined = "d (e): crashed";
  reply.agents.push_back(a);
  protocol::JobStatus failed;
  failed.job_id = "j-failed";
  failed.experiment = "exp<1>";
  failed.cell = "baseline";
  failed.state = "failed";
  failed.attempts = 3;
  failed.reason = "retry budget of 3 runs exhausted; last: <oom>";
  reply.jobs.push_back(failed);
  protocol::JobStatus done;
  done.job_id = "j-done";
  done.experiment = "exp<1>";
  done.state = "succeeded";
  reply.jobs.push_back(done);
  return reply;
}

TEST(MetricsPageTest, MetricsTextCarriesJobsAgentsAndCounters) {
  ServiceCounters counters;
  counters.events["job.assigned"] = 7;
  counters.events["job.requeued"] = 2;
  counters.records_by_agent["a1"] = 640;
  counters.runs_lost = 1;
  counters.run_seconds.Observe(42);
  DaemonMeasures measures;
  measures.store_bytes = 4096;
  std::string text = CoordinatorMetricsText(Reply(), counters, measures);
  EXPECT_THAT(text, HasSubstr("\norch_jobs{experiment=\"exp<1>\",state=\"failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\norch_queue_depth_jobs 1\n"));
  EXPECT_THAT(text, HasSubstr("\norch_assignments_total 7\n"));
  EXPECT_THAT(text, HasSubstr("\norch_retries_total 2\n"));
  EXPECT_THAT(text, HasSubstr("\norch_runs_lost_total 1\n"));
  EXPECT_THAT(text, HasSubstr("\norch_records_received_total{agent=\"a1\"} 640\n"));
  EXPECT_THAT(text, HasSubstr("\norch_agent_heartbeat_age_seconds{agent=\"a1\"} 1.5\n"));
  EXPECT_THAT(text, HasSubstr("\norch_agent_quarantined{agent=\"a1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\norch_run_duration_seconds_bucket{le=\"60\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\norch_run_duration_seconds_bucket{le=\"30\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("\norch_store_size_bytes 4096\n"));
  EXPECT_THAT(CoordinatorMetricsText(Reply(), counters, DaemonMeasures{}),
              Not(HasSubstr("orch_store_size_bytes")));
}

TEST(MetricsPageTest, StatusPageEscapesAndListsFailuresNotFinishedJobs) {
  std::string html = StatusPageHtml(Reply(), "coord-1", 5);
  EXPECT_THAT(html, HasSubstr("<meta http-equiv=\"refresh\" content=\"5\">"));
  EXPECT_THAT(html, HasSubstr("<tr data-experiment=\"exp&lt;1&gt;\"><td>exp&lt;1&gt;</td>"));
  EXPECT_THAT(html, HasSubstr("<a href=\"/report/exp%3C1%3E\">"));
  EXPECT_THAT(html, HasSubstr("last: &lt;oom&gt;"));
  EXPECT_THAT(html, Not(HasSubstr("j-done")));
  EXPECT_THAT(html, HasSubstr("<td>llama.cpp@b8390, torch@2.5</td>"));
  EXPECT_THAT(html, Not(HasSubstr("<oom>")));
}

TEST(MetricsPageTest, AnAgentNeverSeenWasLastSeenNever) {
  protocol::StatusReply reply = Reply();
  protocol::AgentSummary imported;
  imported.agent_id = "carol/local-1";
  imported.state = protocol::AgentState::kNeverSeen;
  reply.agents.push_back(imported);
  std::string html = StatusPageHtml(reply, "coord-1", 5);
  EXPECT_THAT(html, HasSubstr("<td>carol/local-1</td>"));
  EXPECT_THAT(html, HasSubstr("<td>never seen</td>"));
  EXPECT_THAT(html, HasSubstr(">never</td>"));
  EXPECT_THAT(html, Not(HasSubstr(">0 s ago</td>")));
}

TEST(MetricsPageTest, PathSegmentsRoundTrip) {
  EXPECT_EQ(EncodePathSegment("a b/c"), "a%20b%2Fc");
  EXPECT_EQ(DecodePathSegment("a%20b%2Fc"), "a b/c");
  EXPECT_EQ(DecodePathSegment("bad%2"), std::nullopt);
  EXPECT_EQ(DecodePathSegment("bad%zz"), std::nullopt);
}

}  // namespace
}  // namespace orch::coordinator
