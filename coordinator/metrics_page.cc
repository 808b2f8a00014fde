#include "coordinator/metrics_page.h"

#include <map>

namespace orch::coordinator {
namespace {

using telemetry::ExpositionWriter;
using telemetry::MetricType;

void JobMetrics(const protocol::StatusReply& status, ExpositionWriter& w) {
  w.Family("orch_jobs", MetricType::kGauge, "Jobs by experiment and state.");
  std::uint64_t pending = 0;
  for (const protocol::ExperimentProgress& e : status.experiments) {
    const std::pair<const char*, std::uint32_t> states[] = {
        {"pending", e.pending}, {"running", e.running},     {"succeeded", e.succeeded},
        {"failed", e.failed},   {"cancelled", e.cancelled},
    };
    for (const auto& [state, count] : states) {
      w.Sample("orch_jobs", {{"experiment", e.experiment}, {"state", state}}, count);
    }
    pending += e.pending;
  }
  w.Family("orch_jobs_unrunnable", MetricType::kGauge,
           "Pending jobs that no connected agent can run, by experiment.");
  for (const protocol::ExperimentProgress& e : status.experiments) {
    w.Sample("orch_jobs_unrunnable", {{"experiment", e.experiment}}, e.unrunnable);
  }
  w.Single("orch_queue_depth_jobs", MetricType::kGauge, "Pending jobs, all experiments.",
           static_cast<double>(pending));
}

void AgentMetrics(const protocol::StatusReply& status, ExpositionWriter& w) {
  std::map<std::string, int> by_state;
  for (auto state : {protocol::AgentState::kConnected, protocol::AgentState::kDraining,
                     protocol::AgentState::kDrained, protocol::AgentState::kDisconnected,
                     protocol::AgentState::kNeverSeen}) {
    by_state[std::string(protocol::AgentStateName(state))] = 0;
  }
  for (const protocol::AgentSummary& a : status.agents)
    ++by_state[std::string(protocol::AgentStateName(a.state))];
  w.Family("orch_agents", MetricType::kGauge, "Known agents by state.");
  for (const auto& [state, count] : by_state) w.Sample("orch_agents", {{"state", state}}, count);
  struct PerAgent {
    const char* name;
    const char* help;
    double (*value)(const protocol::AgentSummary&);
  };
  const PerAgent per_agent[] = {
      {"orch_agent_slots", "Runs the agent may hold at once.",
       [](const protocol::AgentSummary& a) { return static_cast<double>(a.slots); }},
      {"orch_agent_runs", "Runs the agent holds now.",
       [](const protocol::AgentSummary& a) { return static_cast<double>(a.current_runs.size()); }},
      {"orch_agent_heartbeat_age_seconds", "Time since the agent was last heard from.",
       [](const protocol::AgentSummary& a) { return a.heartbeat_age.count() / 1000.0; }},
      {"orch_agent_positions_per_second", "Digest records stored per second, last 30 s.",
       [](const protocol::AgentSummary& a) { return a.positions_per_second; }},
      {"orch_agent_quarantined", "1 when the agent stopped offering a driver (quarantine).",
       [](const protocol::AgentSummary& a) { return a.quarantined.empty() ? 0.0 : 1.0; }},
  };
  for (const PerAgent& metric : per_agent) {
    w.Family(metric.name, MetricType::kGauge, metric.help);
    for (const protocol::AgentSummary& a : status.agents) {
      w.Sample(metric.name, {{"agent", a.agent_id}}, metric.value(a));
    }
  }
}

void CounterMetrics(const ServiceCounters& c, ExpositionWriter& w) {
  auto event = [&c](const char* kind) {
    auto it = c.events.find(kind);
    return it == c.events.end() ? 0.0 : static_cast<double>(it->second);
  };
  w.Single("orch_assignments_total", MetricType::kCounter, "Runs assigned to agents.",
           event("job.assigned"));
  w.Single("orch_retries_total", MetricType::kCounter,
           "Jobs put back in the queue after a run failed or was lost.", event("job.requeued"));
  w.Single("orch_runs_lost_total", MetricType::kCounter,
           "Runs lost: their lease expired or their agent came back without them.",
           static_cast<double>(c.runs_lost));
  w.Family("orch_events_total", MetricType::kCounter, "Stored events by kind.");
  for (const auto& [kind, count] : c.events) {
    w.Sample("orch_events_total", {{"kind", kind}}, static_cast<double>(count));
  }
  w.Family("orch_records_received_total", MetricType::kCounter,
           "Digest records (positions) newly stored, by agent.");
  for (const auto& [agent, count] : c.records_by_agent) {
    w.Sample("orch_records_received_total", {{"agent", agent}}, static_cast<double>(count));
  }
  w.Family("orch_chunks_received_total", MetricType::kCounter,
           "Digest chunks newly stored, by agent.");
  for (const auto& [agent, count] : c.chunks_by_agent) {
    w.Sample("orch_chunks_received_total", {{"agent", agent}}, static_cast<double>(count));
  }
  w.Single("orch_refusals_total", MetricType::kCounter,
           "Requests the access policy refused (docs/security.md).",
           static_cast<double>(c.refusals));
  w.Single("orch_rejects_total", MetricType::kCounter,
           "Reject answers sent: refused requests and denied agent handshakes.",
           static_cast<double>(c.rejects));
  w.Family("orch_run_duration_seconds", MetricType::kHistogram,
           "Runs from assignment to their stored end.");
  w.HistogramSamples("orch_run_duration_seconds", {}, c.run_seconds);
}

void DaemonMetrics(const DaemonMeasures& m, ExpositionWriter& w) {
  w.Family("orch_message_handling_seconds", MetricType::kHistogram,
           "Time to handle one frame from a peer (decode, decide, store).");
  w.HistogramSamples("orch_message_handling_seconds", {}, m.message_seconds);
  w.Family("orch_store_sync_seconds", MetricType::kHistogram,
           "Time of one group commit: the store's sync and the held messages sent.");
  w.HistogramSamples("orch_store_sync_seconds", {}, m.commit_seconds);
  w.Single("orch_bad_frames_total", MetricType::kCounter, "Frames that did not decode.",
           static_cast<double>(m.bad_frames));
  w.Single("orch_refused_handshakes_total", MetricType::kCounter,
           "CurveZMQ handshakes refused: a key not in allowed_keys, or no CURVE.",
           static_cast<double>(m.refused_handshakes));
  w.Single("orch_store_failed_writes_total", MetricType::kCounter, "Store writes that failed.",
           static_cast<double>(m.failed_writes));
  if (m.store_bytes) {
    w.Single("orch_store_size_bytes", MetricType::kGauge, "The store's files on disk.",
             static_cast<double>(*m.store_bytes));
  }
}

}  // namespace

std::string CoordinatorMetricsText(const protocol::StatusReply& status,
                                   const ServiceCounters& counters,
                                   const DaemonMeasures& measures) {
  ExpositionWriter w;
  JobMetrics(status, w);
  AgentMetrics(status, w);
  CounterMetrics(counters, w);
  DaemonMetrics(measures, w);
  return w.Take();
}

}  // namespace orch::coordinator
