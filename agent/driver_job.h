// The job document the agent writes to a driver's stdin
// (docs/driver-protocol.md), built from an Assign and the agent's
// configuration.
#pragma once

#include <string>
#include <vector>

#include "agent/model_resolver.h"
#include "base/status.h"
#include "protocol/messages.h"

namespace orch::agent {

struct DriverJob {
  std::string experiment;  // from the Assign's workload_spec; may be empty
  std::string json;        // the document for the driver's stdin
};

// kInvalidArgument when workload_spec is present but not a JSON object. The
// model requirement is resolved through `models` (which may generate a synth
// model into its cache); an empty resolved path tells the driver the model is
// missing. Errors from `models` are returned as they are. `driver_threads` > 0
// adds "resources": {"threads": N} (AgentConfig::driver_threads).
Result<DriverJob> BuildDriverJob(const protocol::Assign& assign, ModelResolver& models,
                                 std::int32_t driver_threads);

}  // namespace orch::agent
