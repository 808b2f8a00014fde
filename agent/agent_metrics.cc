#include "agent/agent_metrics.h"

#include <map>
#include <string_view>

#include "telemetry/exposition.h"

namespace orch::agent {
namespace {

using telemetry::ExpositionWriter;
using telemetry::MetricType;

// A counter family with one sample per key, labelled `label`.
void CounterBy(ExpositionWriter& w, std::string_view name, std::string_view help, const char* label,
               const std::map<std::string, std::uint64_t>& counts) {
  w.Family(name, MetricType::kCounter, help);
  for (const auto& [key, count] : counts) {
    w.Sample(name, {{label, key}}, static_cast<double>(count));
  }
}

void WriteGauges(ExpositionWriter& w, const AgentGauges& g, const AgentShellMeasures& shell) {
  w.Single("orch_agentd_registered", MetricType::kGauge,
           "1 while the coordinator has welcomed this agent's registration.", g.registered);
  w.Single("orch_agentd_draining", MetricType::kGauge,
           "1 while the agent takes no new work (draining or stopping).", g.draining);
  w.Single("orch_agentd_slots", MetricType::kGauge, "Runs the agent may hold at once (slots).",
           g.slots);
  w.Single("orch_agentd_free_slots", MetricType::kGauge, "Slots neither running nor preparing.",
           g.free_slots);
  w.Family("orch_agentd_runs", MetricType::kGauge,
           "Runs held now: preparing (model resolved, job built) or running (driver launched).");
  w.Sample("orch_agentd_runs", {{"state", "preparing"}}, static_cast<double>(g.preparing));
  w.Sample("orch_agentd_runs", {{"state", "running"}}, static_cast<double>(g.running));
  w.Family("orch_agentd_warm_sessions", MetricType::kGauge,
           "Live warm driver sessions, idle or holding a job.");
  w.Sample("orch_agentd_warm_sessions", {{"state", "idle"}}, static_cast<double>(g.sessions_idle));
  w.Sample("orch_agentd_warm_sessions", {{"state", "busy"}}, static_cast<double>(g.sessions_busy));
  w.Family("orch_agentd_driver_quarantined", MetricType::kGauge,
           "1 when the agent stopped offering the driver's engine (quarantine), else 0.");
  for (const AgentGauges::Driver& driver : g.drivers) {
    w.Sample("orch_agentd_driver_quarantined", {{"driver", driver.name}, {"engine", driver.engine}},
             driver.quarantined);
  }
  w.Single("orch_agentd_spool_unacked_messages", MetricType::kGauge,
           "Spooled messages the coordinator has not acknowledged yet.",
           static_cast<double>(g.spool_unacked));
  w.Single("orch_agentd_spool_queued_bytes", MetricType::kGauge,
           "Bytes of records handed to the spool's thread and not written yet.",
           static_cast<double>(shell.spool_queued_bytes));
}

void WriteCounters(ExpositionWriter& w, const AgentCounters& c, const AgentShellMeasures& shell) {
  w.Single("orch_agentd_hellos_total", MetricType::kCounter,
           "Hello messages sent (registrations tried).", static_cast<double>(c.hellos));
  w.Single("orch_agentd_registrations_total", MetricType::kCounter,
           "Welcomes received (registrations that took).", static_cast<double>(c.welcomes));
  w.Single("orch_agentd_assignments_total", MetricType::kCounter,
           "Assigned runs taken on (not refused).", static_cast<double>(c.assignments));
  CounterBy(w, "orch_agentd_refusals_total", "Assigned runs refused, by code.", "code", c.refusals);
  w.Family("orch_agentd_runs_total", MetricType::kCounter, "Runs ended, by driver and status.");
  for (const auto& [key, count] : c.runs_ended) {
    w.Sample("orch_agentd_runs_total", {{"driver", key.first}, {"status", key.second}},
             static_cast<double>(count));
  }
  CounterBy(w, "orch_agentd_records_total",
            "Digest records (positions) the drivers wrote, by driver.", "driver", c.records);
  CounterBy(w, "orch_agentd_warm_sessions_started_total", "Warm driver sessions started.", "driver",
            c.sessions_started);
  CounterBy(w, "orch_agentd_warm_jobs_total",
            "Jobs fed to a warm session that was already running (no model load).", "driver",
            c.warm_jobs);
  CounterBy(w, "orch_agentd_quarantines_total", "Drivers quarantined.", "driver", c.quarantines);
  w.Single("orch_agentd_refused_handshakes_total", MetricType::kCounter,
           "Times the coordinator began refusing this agent's key (once per streak of "
           "refused handshakes, until one succeeds).",
           static_cast<double>(shell.refused_handshakes));
  w.Single("orch_agentd_bad_frames_total", MetricType::kCounter,
           "Frames from the coordinator that did not decode.",
           static_cast<double>(shell.bad_frames));
  w.Family("orch_agentd_run_duration_seconds", MetricType::kHistogram,
           "From a run's driver launch (or warm-session feed) to its end.");
  w.HistogramSamples("orch_agentd_run_duration_seconds", {}, c.run_seconds);
}

}  // namespace

std::string AgentMetricsText(const AgentIdentity& identity, const AgentCounters& counters,
                             const AgentGauges& gauges, const AgentShellMeasures& shell) {
  ExpositionWriter w;
  w.Family("orch_agentd_info", MetricType::kGauge,
           "Always 1: who this agent is (id, hardware class, host fingerprint id).");
  w.Sample("orch_agentd_info",
           {{"agent", identity.id},
            {"hardware", identity.hardware},
            {"fingerprint", identity.fingerprint_id}},
           1);
  WriteGauges(w, gauges, shell);
  WriteCounters(w, counters, shell);
  return w.Take();
}

}  // namespace orch::agent
