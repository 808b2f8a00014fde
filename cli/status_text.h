// The renderings of a coordinator's StatusReply that `orch status`, `orch
// experiments` and `orch run` print: text for people (colour only when
// `terminal`) and JSON for scripts (schema orch.status/1, docs/coordinator.md).
// Pure.
#pragma once

#include <string>

#include "protocol/messages.h"

namespace orch::cli {

// Experiments with a progress bar, running jobs (cell, agent, host, elapsed),
// jobs no connected agent can run with the reason, agents (with positions/s)
// and recent failures.
std::string FormatStatusText(const protocol::StatusReply& status, bool terminal);
// One line per job in the reply: short id, cell, workload, repeat, state,
// agent and host, attempts, elapsed, reason.
std::string FormatJobsTable(const protocol::StatusReply& status);
// The pending jobs no connected agent can run, as FormatJobsTable does them;
// `count` gets how many. Empty when there are none.
std::string FormatUnrunnableJobs(const protocol::StatusReply& status, std::size_t* count);
// One line per experiment: name, total, and the count in every state.
std::string FormatExperimentsTable(const protocol::StatusReply& status);
// The whole reply; unknown ETAs are null.
std::string FormatStatusJson(const protocol::StatusReply& status);

// "3s", "4m05s", "1h02m".
std::string FormatDuration(std::chrono::milliseconds ms);

}  // namespace orch::cli
