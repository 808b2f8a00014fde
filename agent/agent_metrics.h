// The agent's own Prometheus metrics (docs/metrics-endpoint.md, "Agent metrics"): the
// core's counters and gauges (agent/agent_core.h) and what the shell measures, as
// exposition text. Named orch_agentd_*, so that they never mix with the coordinator's
// per-agent orch_agent_* series (its view of the same agents). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/agent_core.h"

namespace orch::agent {

// What the shell (AgentService) measures besides the core.
struct AgentShellMeasures {
  // Streaks of handshakes in which the coordinator refused this agent's key (ZAP):
  // the transport reports a refusal once until a handshake succeeds.
  std::uint64_t refused_handshakes = 0;
  std::uint64_t bad_frames = 0;        // frames from the coordinator that did not decode
  std::size_t spool_queued_bytes = 0;  // handed to the spool's thread, not yet written
};

// Who the agent is: orch_agentd_info's labels.
struct AgentIdentity {
  std::string id, hardware, fingerprint_id;
};

std::string AgentMetricsText(const AgentIdentity& identity, const AgentCounters& counters,
                             const AgentGauges& gauges, const AgentShellMeasures& shell);

}  // namespace orch::agent
