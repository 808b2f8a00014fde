// Turning key files (protocol/identity_key.h) into what the sockets and the
// coordinator's access policy need. Used by `orch coordinator`, `orch agent`,
// every client command and `orch run` (docs/security.md).
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "coordinator/access_policy.h"
#include "coordinator/coordinator_service.h"
#include "protocol/identity_key.h"
#include "protocol/zmq_transport.h"

namespace orch::cli {

struct ServerSecurity {
  protocol::CurveServerKeys curve;
  coordinator::AccessPolicy policy;  // authenticated, with every allowed key's role
  coordinator::BundleKeys bundles;   // the own key and the allowed-keys folder
};

// The coordinator's secret key file, which must be of role coordinator, and the folder
// of the public keys it admits.
Result<ServerSecurity> LoadServerSecurity(const std::string& key_file,
                                          const std::string& allowed_dir);

// A client's own secret key file and the coordinator's public key file: both
// given (CURVE), or neither (nullopt: plain). `what` names the options in errors.
Result<std::optional<protocol::CurveClientKeys>> LoadClientKeys(
    const std::string& key_file, const std::string& coordinator_key_file, const std::string& what);

}  // namespace orch::cli
