// Simulated agents for load tests: many agents in one process, each its own ZeroMQ
// DEALER (protocol/zmq_transport.h) to a real coordinator, speaking the real protocol:
// Hello until welcomed, a Heartbeat every interval the Welcome names, and for every
// Assign a no-op run at once (RunStarted, one DigestChunk of one record at position 0,
// RunFinished succeeded with chunk_count 1). Nothing is resent: a load test on
// 127.0.0.1 expects every message to arrive.
//
// One thread; Run() polls every socket's ZMQ_FD with a 2 ms bound and drains them all.
// What it counts (Stats) is what a load test checks (counts) and reports (times).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace orch::testing {

struct SimulatedAgentsOptions {
  std::string coordinator;        // endpoint, "tcp://127.0.0.1:PORT"
  std::string id_prefix = "sim";  // agents are PREFIX-FIRST .. PREFIX-(FIRST+COUNT-1)
  int first = 0;
  int count = 1;
  std::string engine = "test-engine@1";
  int slots = 1;
};

struct SimulatedAgentsStats {
  int agents = 0;
  int welcomed = 0;  // agents that got a Welcome
  std::uint64_t rejects = 0;
  std::uint64_t hellos = 0;
  std::uint64_t heartbeats = 0;
  std::uint64_t assigns = 0;
  std::uint64_t duplicate_assigns = 0;  // a run id assigned twice (to any of these agents)
  std::uint64_t finished_acked = 0;     // Acks of RunFinished
  std::uint64_t other_messages = 0;     // Cancel, Drain, anything unexpected
  std::int64_t first_assign_ns = 0;     // CLOCK_MONOTONIC (shared by processes); 0: none
  std::int64_t last_ack_ns = 0;
  std::vector<std::int64_t> ack_latency_ns;  // RunFinished sent -> its Ack, per run
};

// Runs the agents until `stop` is set. Errors when a socket cannot be made.
Result<SimulatedAgentsStats> RunSimulatedAgents(const SimulatedAgentsOptions& options,
                                                const std::atomic<bool>& stop);

// Adds `part` (one process's agents) into `total`: counts add up, the first Assign is
// the earliest, the last Ack the latest, latencies are pooled.
void Merge(SimulatedAgentsStats& total, const SimulatedAgentsStats& part);

// The stats as one JSON object (latencies as p50/p90/p99/max in microseconds), and back.
std::string StatsToJson(const SimulatedAgentsStats& stats);
Result<SimulatedAgentsStats> StatsFromJson(const std::string& json);

// The q-quantile (0..1) of `values` (sorted in place); 0 when empty.
std::int64_t Quantile(std::vector<std::int64_t>& values, double q);

}  // namespace orch::testing
