// Turning key files (protocol/identity_key.h) into what the sockets and the
// coordinator's access policy need. Used by `orch coordinator`, `orch agent`,
// every client command and `orch run` (docs/security.md).
#pragma once

#include <map>
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

// The keys in the allowed-keys folder `dir` as the coordinator admits them: the CURVE
// keys its ZAP handler lets in and the role of each name. The folder's "state"
// (every NAME.key file's name, size, modification time and inode) tells a reload
// whether anything changed since.
struct AllowedKeys {
  std::map<std::string, std::string> curve;  // public key (Z85) -> name
  std::map<std::string, std::string> roles;  // name -> role
  std::string state;
};
Result<AllowedKeys> LoadAllowedKeys(const std::string& dir);
// The folder's state alone (cheap: no file is read); "" when it cannot be listed.
std::string AllowedKeysState(const std::string& dir);

// A client's own secret key file and the coordinator's public key file: both
// given (CURVE), or neither (nullopt: plain). `what` names the options in errors.
Result<std::optional<protocol::CurveClientKeys>> LoadClientKeys(
    const std::string& key_file, const std::string& coordinator_key_file, const std::string& what);

}  // namespace orch::cli
