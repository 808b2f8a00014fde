// `orch status [--watch] [--json] [--experiment NAME]`: progress of every
// experiment (succeeded/running/pending/failed of total, with a bar and an
// ETA), the agents (id, host, hardware, engines, state, current run, heartbeat
// age) and recent failures with their reason. Colour and screen refresh only
// when stdout is a terminal; plain text otherwise. --json prints one JSON
// object per refresh (documented in docs/coordinator.md). Client options as in
// cli/client_commands.h.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "protocol/messages.h"

namespace orch::cli {

void RegisterStatusCommand(CLI::App& app, int& exit_code);

// The text and JSON renderings (exposed for tests). `terminal` enables colour.
std::string FormatStatusText(const protocol::StatusReply& status,
                             bool terminal);
std::string FormatStatusJson(const protocol::StatusReply& status);

}  // namespace orch::cli
