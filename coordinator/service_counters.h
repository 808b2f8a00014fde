// ServiceCounters: what the coordinator service has counted since the process started,
// for its metrics endpoint (docs/metrics-endpoint.md). Plain values, updated by
// CoordinatorService on the event loop's thread and read there (the HTTP listener runs
// on the same io_context), so no locks.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "telemetry/exposition.h"

namespace orch::coordinator {

struct ServiceCounters {
  // Stored events by kind ("job.assigned", "job.requeued", "job.failed", ...).
  std::map<std::string, std::uint64_t> events;
  // Digest records and chunks newly stored, by the agent that ran the run.
  std::map<std::string, std::uint64_t> records_by_agent;
  std::map<std::string, std::uint64_t> chunks_by_agent;
  // Requests the access policy refused, and Reject answers sent (a Hello of another
  // protocol version, an agent id that is not its connection's, a refusal).
  std::uint64_t refusals = 0;
  // Runs stored as lost: their lease expired, or their agent came back without them.
  std::uint64_t runs_lost = 0;
  std::uint64_t rejects = 0;
  // Wall time of runs whose end was stored, from assignment to end.
  telemetry::Histogram run_seconds{telemetry::RunDurationBoundsSeconds()};
};

}  // namespace orch::coordinator
