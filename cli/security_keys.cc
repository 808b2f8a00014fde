#include "cli/security_keys.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <vector>

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
  ORCH_ASSIGN_OR_RETURN(AllowedKeys allowed, LoadAllowedKeys(allowed_dir));
  ServerSecurity security;
  security.curve.secret_key = own.curve_secret;
  security.curve.allowed = std::move(allowed.curve);
  security.policy.authenticated = true;
  security.policy.roles = std::move(allowed.roles);
  security.bundles = {own, allowed_dir};
  return security;
}

std::string AllowedKeysState(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> entries;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension() != ".key") continue;
    struct stat info {};
    if (::stat(entry.path().c_str(), &info) != 0) continue;
    entries.push_back(entry.path().filename().string() + ":" + std::to_string(info.st_size) + ":" +
                      std::to_string(info.st_mtim.tv_sec) + "." +
                      std::to_string(info.st_mtim.tv_nsec) + ":" + std::to_string(info.st_ino));
  }
  if (error) return "";
  std::sort(entries.begin(), entries.end());
  std::string state;
  for (const std::string& e : entries) state += e + "\n";
  return state;
}

Result<AllowedKeys> LoadAllowedKeys(const std::string& dir) {
  AllowedKeys keys;
  keys.state = AllowedKeysState(dir);
  ORCH_ASSIGN_OR_RETURN(std::vector<protocol::PublicIdentity> allowed,
                        protocol::ReadAllowedKeys(dir));
  for (const protocol::PublicIdentity& key : allowed) {
    keys.curve[key.curve_public] = key.name;
    keys.roles[key.name] = key.role;
  }
  return keys;
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
