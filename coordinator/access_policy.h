// Who may say what to the coordinator (docs/security.md). Pure.
//
// With CURVE every message comes with the name of the key its connection
// authenticated with (TransportEvent::user); the key's role decides:
//   agent      Hello, Heartbeat, RunStarted, DigestChunk, RunFinished, and only
//              as itself: the peer id its connection holds (the agent id) must
//              be its key's name
//   pilot      the same, as its key's name or as NAME.SUFFIX (the pilot jobs of
//              a scheduler share one key; protocol::SpeaksAs)
//   submitter  StatusRequest; Submit of a new experiment or of one it submitted
//              (an edited plan; a part of a plan passes, and the service checks the
//              whole plan); Cancel / Retry / ExportRequest of the experiments it
//              submitted; ImportRequest (the service checks the bundle's experiment)
//   viewer     StatusRequest
//   admin      every request (Submit, StatusRequest, Cancel, Retry, Drain, ExportRequest,
//              ImportRequest), any
//              experiment; not the agents' messages
// Keys of other roles (coordinator, contributor) may send nothing. Without
// CURVE (plain mode: loopback, or `insecure = true`) nobody is authenticated and
// every peer may send everything; results are still taken only from the
// connection of the run's agent (coordinator_core.h).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "protocol/messages.h"

namespace orch::coordinator {

struct AccessPolicy {
  bool authenticated = false;                // CURVE on: enforce the roles
  std::map<std::string, std::string> roles;  // key name -> role
};

// Who submitted `experiment`: nullopt when there is no such experiment, "" when
// nobody is recorded (submitted without authentication).
using OwnerOf = std::function<std::optional<std::string>(const std::string& experiment)>;

// Empty when `user` (the authenticated key's name) may send `message` from the
// connection `peer`; else the reason, naming the role needed.
std::string WhyRefused(const AccessPolicy& policy, const std::string& user, const std::string& peer,
                       const protocol::Message& message, const OwnerOf& owner_of);

}  // namespace orch::coordinator
