// The job document the agent writes to a driver's stdin
// (docs/driver-protocol.md), built from an Assign and the agent's
// configuration.
#pragma once

#include <string>
#include <vector>

#include "agent/model_resolver.h"
#include "agent/server_pool.h"
#include "base/status.h"
#include "protocol/messages.h"

namespace orch::agent {

struct DriverJob {
  std::string experiment;  // from the Assign's job_spec; may be empty
  std::string json;        // the document for the driver's stdin
  std::string model_path;  // the resolved model (empty when missing)
};

// kInvalidArgument when job_spec is present but not a JSON object. The
// model requirement is resolved through `models` (which may generate a synth
// model into its cache); an empty resolved path tells the driver the model is
// missing. Errors from `models` are returned as they are. `driver_threads` > 0
// adds "resources": {"threads": N} (AgentConfig::driver_threads).
Result<DriverJob> BuildDriverJob(const protocol::Assign& assign, ModelResolver& models,
                                 std::int32_t driver_threads);

// Adds the `server` object (docs/driver-protocol.md) to `job`'s document: url,
// api_key_file, mode, jobs_before, and for a launched server its log and
// server-level coordinate.
void AddServer(DriverJob& job, const JobServer& server);

}  // namespace orch::agent
