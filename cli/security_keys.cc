#include "cli/security_keys.h"

namespace orch::cli {

Result<ServerSecurity> LoadServerSecurity(const std::string& key_file,
                                          const std::string& allowed_dir) {
  ORCH_ASSIGN_OR_RETURN(protocol::SecretIdentity own, protocol::ReadSecretKeyFile(key_file));
  // Another role's key would sign plan bundles and serve sockets as if it were one.
  if (own.identity.role != "coordinator") {
    return InvalidArgument(key_file + ": key '" + own.identity.name + "' has role " +
                           own.identity.role +
                           "; a coordinator serves with a key of role coordinator (orch keygen " +
                           "NAME --role coordinator)");
  }
  ORCH_ASSIGN_OR_RETURN(std::vector<protocol::PublicIdentity> allowed,
                        protocol::ReadAllowedKeys(allowed_dir));
  ServerSecurity security;
  security.curve.secret_key = own.curve_secret;
  security.policy.authenticated = true;
  security.bundles = {own, allowed_dir};
  for (const protocol::PublicIdentity& key : allowed) {
    security.curve.allowed[key.curve_public] = key.name;
    security.policy.roles[key.name] = key.role;
  }
  return security;
}

Result<std::optional<protocol::CurveClientKeys>> LoadClientKeys(
    const std::string& key_file, const std::string& coordinator_key_file, const std::string& what) {
  if (key_file.empty() && coordinator_key_file.empty()) {
    return std::optional<protocol::CurveClientKeys>();
  }
  if (key_file.empty() || coordinator_key_file.empty()) {
    return InvalidArgument(what +
                           ": give both the own secret key and the coordinator's public "
                           "key, or neither");
  }
  ORCH_ASSIGN_OR_RETURN(protocol::SecretIdentity own, protocol::ReadSecretKeyFile(key_file));
  ORCH_ASSIGN_OR_RETURN(protocol::PublicIdentity server,
                        protocol::ReadPublicKeyFile(coordinator_key_file));
  return std::optional<protocol::CurveClientKeys>(
      protocol::CurveClientKeys{server.curve_public, own.identity.curve_public, own.curve_secret});
}

}  // namespace orch::cli
