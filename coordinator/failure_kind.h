// Which failed runs are worth another attempt.
//
// A driver that refuses a job with a typed error that depends only on the job
// and the model (docs/driver-protocol.md: invalid_job, invalid_combination,
// model_missing, sha256_mismatch) would refuse it again on any retry: the job
// fails at once with that reason. Everything else (a crash, a timeout, a lost
// agent, engine_error) may be transient and is retried while the job's retry
// budget lasts. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace orch::coordinator {

// The driver's error code when the run summary (the agent's RunFinished
// summary JSON: {"error": {"code": ...}, ...}) names a deterministic one;
// nullopt otherwise, also for a summary that is not JSON.
std::optional<std::string> DeterministicErrorCode(std::string_view summary);

// Whether an agent's refusal (protocol/messages.h, kRefused*) was for a
// transient reason (no free slot, draining, its spool failed): such a refusal
// says nothing about the job, so the agent is not barred from it.
bool TransientRefusal(std::string_view summary);

}  // namespace orch::coordinator
