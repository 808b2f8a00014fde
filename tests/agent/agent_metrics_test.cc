// The agent's exposition text (agent/agent_metrics.h) from given counters and gauges.
#include "agent/agent_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::agent {
namespace {

using ::testing::HasSubstr;

TEST(AgentMetricsTest, WritesEveryFamilyWithItsLabels) {
  AgentCounters counters;
  counters.hellos = 3;
  counters.welcomes = 2;
  counters.assignments = 5;
  counters.refusals = {{"agent_busy", 1}};
  counters.runs_ended = {{{"llamacpp-b8390", "succeeded"}, 4}, {{"llamacpp-b8390", "failed"}, 1}};
  counters.records = {{"llamacpp-b8390", 640}};
  counters.sessions_started = {{"llamacpp-b8390", 1}};
  counters.warm_jobs = {{"llamacpp-b8390", 3}};
  counters.run_seconds.Observe(0.5);
  counters.run_seconds.Observe(2);
  AgentGauges gauges;
  gauges.registered = true;
  gauges.slots = 2;
  gauges.free_slots = 1;
  gauges.running = 1;
  gauges.sessions_idle = 1;
  gauges.spool_unacked = 7;
  gauges.drivers = {{"llamacpp-b8390", "llama.cpp@b8390", false}, {"torch", "torch@2", true}};
  AgentShellMeasures shell{.refused_handshakes = 2, .bad_frames = 1, .spool_queued_bytes = 4096};

  std::string text = AgentMetricsText({"box-1", "cpu", "fp\"1"}, counters, gauges, shell);
  EXPECT_THAT(text, HasSubstr("# TYPE orch_agentd_info gauge\n"
                              "orch_agentd_info{agent=\"box-1\",hardware=\"cpu\","
                              "fingerprint=\"fp\\\"1\"} 1\n"));
  for (const char* line :
       {"orch_agentd_registered 1\n",
        "orch_agentd_draining 0\n",
        "orch_agentd_slots 2\n",
        "orch_agentd_free_slots 1\n",
        "orch_agentd_runs{state=\"preparing\"} 0\n",
        "orch_agentd_runs{state=\"running\"} 1\n",
        "orch_agentd_warm_sessions{state=\"idle\"} 1\n",
        "orch_agentd_driver_quarantined{driver=\"llamacpp-b8390\",engine=\"llama.cpp@b8390\"} 0\n",
        "orch_agentd_driver_quarantined{driver=\"torch\",engine=\"torch@2\"} 1\n",
        "orch_agentd_spool_unacked_messages 7\n",
        "orch_agentd_spool_queued_bytes 4096\n",
        "# TYPE orch_agentd_hellos_total counter\norch_agentd_hellos_total 3\n",
        "orch_agentd_registrations_total 2\n",
        "orch_agentd_assignments_total 5\n",
        "orch_agentd_refusals_total{code=\"agent_busy\"} 1\n",
        "orch_agentd_runs_total{driver=\"llamacpp-b8390\",status=\"failed\"} 1\n",
        "orch_agentd_runs_total{driver=\"llamacpp-b8390\",status=\"succeeded\"} 4\n",
        "orch_agentd_records_total{driver=\"llamacpp-b8390\"} 640\n",
        "orch_agentd_warm_sessions_started_total{driver=\"llamacpp-b8390\"} 1\n",
        "orch_agentd_warm_jobs_total{driver=\"llamacpp-b8390\"} 3\n",
        "orch_agentd_refused_handshakes_total 2\n",
        "orch_agentd_bad_frames_total 1\n",
        "# TYPE orch_agentd_run_duration_seconds histogram\n",
        "orch_agentd_run_duration_seconds_count 2\n",
        "orch_agentd_run_duration_seconds_sum 2.5\n"}) {
    EXPECT_THAT(text, HasSubstr(line)) << line;
  }
  // A family with nothing counted yet still says what it is.
  EXPECT_THAT(text, HasSubstr("# TYPE orch_agentd_quarantines_total counter\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("orch_agentd_quarantines_total{")));
}

}  // namespace
}  // namespace orch::agent
