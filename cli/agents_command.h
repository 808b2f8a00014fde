// `orch agents [ID]` (as condor_status): every agent the coordinator knows with its
// state (up, draining, drained, down, never seen), or one agent's drivers and versions,
// model files, quarantined drivers, runs in flight and, from the store in --data-dir,
// its last runs. Talks to the coordinator as the other client commands do
// (cli/client_commands.h). Documented in docs/cli.md.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "protocol/messages.h"

namespace orch::cli {

void RegisterAgentsCommand(CLI::App& app, int& exit_code);

// One line per agent with a header; "(no agents)" when there are none.
std::string FormatAgentsTable(const protocol::StatusReply& status);
// One agent in full.
std::string FormatAgentDetail(const protocol::AgentSummary& agent);

}  // namespace orch::cli
