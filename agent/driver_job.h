// The job document the agent writes to a driver's stdin
// (docs/driver-protocol.md), built from an Assign and the agent's
// configuration.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "protocol/messages.h"

namespace orch::agent {

struct DriverJob {
  std::string experiment;  // from the Assign's workload_spec; may be empty
  std::string json;        // the document for the driver's stdin
};

// kInvalidArgument when workload_spec is present but not a JSON object. The
// model requirement is looked up as a file name in `model_dirs` (first match
// wins); an empty resolved path tells the driver the model is missing.
Result<DriverJob> BuildDriverJob(const protocol::Assign& assign,
                                 const std::vector<std::string>& model_dirs);

}  // namespace orch::agent
