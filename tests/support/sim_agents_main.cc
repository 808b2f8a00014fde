// orch-sim-agents: simulated agents for load tests (tests/support/simulated_agents.h).
//
//   orch-sim-agents ENDPOINT FIRST COUNT OUT_FILE [ENGINE]
//
// Runs agents sim-FIRST .. sim-(FIRST+COUNT-1) against the coordinator at ENDPOINT until
// SIGTERM or SIGINT, then writes their stats as JSON to OUT_FILE and exits 0.
#include <signal.h>

#include <atomic>
#include <fstream>
#include <iostream>
#include <string>

#include "tests/support/simulated_agents.h"

namespace {
std::atomic<bool> stop{false};
void OnSignal(int) { stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: orch-sim-agents ENDPOINT FIRST COUNT OUT_FILE [ENGINE]\n";
    return 2;
  }
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  orch::testing::SimulatedAgentsOptions options;
  options.coordinator = argv[1];
  options.first = std::stoi(argv[2]);
  options.count = std::stoi(argv[3]);
  if (argc > 5) options.engine = argv[5];
  orch::Result<orch::testing::SimulatedAgentsStats> stats =
      orch::testing::RunSimulatedAgents(options, stop);
  if (!stats.ok()) {
    std::cerr << "orch-sim-agents: " << stats.status().ToString() << "\n";
    return 1;
  }
  std::ofstream(argv[4]) << orch::testing::StatsToJson(*stats) << "\n";
  return 0;
}
