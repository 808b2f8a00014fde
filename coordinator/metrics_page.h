// What the coordinator's HTTP listener serves (docs/metrics-endpoint.md), as pure
// functions of values: the Prometheus text of /metrics and the HTML of the status page
// `/`, from a StatusReply (CoordinatorCore::Status), what the service counted
// (ServiceCounters) and what the daemon measured (DaemonMeasures). Metric names and
// labels are the ones documented; changing one is a change for every dashboard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "coordinator/service_counters.h"
#include "protocol/messages.h"
#include "telemetry/exposition.h"

namespace orch::coordinator {

// Measured by CoordinatorDaemon around the service's calls.
struct DaemonMeasures {
  telemetry::Histogram message_seconds{telemetry::LatencyBoundsSeconds()};  // per frame
  telemetry::Histogram commit_seconds{telemetry::LatencyBoundsSeconds()};   // store syncs
  std::optional<std::uint64_t> store_bytes;  // the store's files on disk; none: unknown
  std::uint64_t bad_frames = 0;
  std::uint64_t failed_writes = 0;
  std::uint64_t refused_handshakes = 0;  // CurveZMQ handshakes the ZAP handler refused
};

std::string CoordinatorMetricsText(const protocol::StatusReply& status,
                                   const ServiceCounters& counters, const DaemonMeasures& measures);

// The status page: experiments with their job counts and a link to each report
// (/report/EXPERIMENT), the jobs that failed with their reasons and the jobs running,
// the agents. Reloads itself every `refresh_seconds`.
std::string StatusPageHtml(const protocol::StatusReply& status, std::string_view coordinator_id,
                           int refresh_seconds);

// Percent-encoding of a path segment, and its inverse (nullopt: a malformed escape).
std::string EncodePathSegment(std::string_view text);
std::optional<std::string> DecodePathSegment(std::string_view text);

}  // namespace orch::coordinator
