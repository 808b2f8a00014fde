// Identity keys (docs/security.md): one Ed25519 key pair per coordinator, agent,
// user and contributor. Its X25519 form is the CURVE key of the ZeroMQ sockets
// (CurveZMQ); the Ed25519 form signs bundles. The same key therefore names a
// peer on the wire and the author of a bundle.
//
// Files are zcert-compatible (czmq's zcert_save layout, ZPL text): a public file
// NAME.key (mode 0644) and a secret file NAME.key_secret (mode 0600), keys in
// Z85 (ZeroMQ RFC 32). Both have a `metadata` section (name, role, the Ed25519
// public key; the secret file also the Ed25519 secret key) and a `curve`
// section (public-key; the secret file also secret-key), so czmq tools and
// ZeroMQ bindings read them as certificates.
//
// Errors name the file, and the line or field; a secret file readable by
// group or others is refused ("chmod 600 FILE").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace orch::protocol {

// Roles a key may hold (docs/security.md): what its holder may ask of a coordinator.
inline constexpr std::string_view kRoles[] = {"coordinator", "agent",       "submitter", "admin",
                                              "viewer",      "contributor", "pilot"};
bool IsRole(std::string_view role);

// Whether a key of `role` named `key_name` may speak as agent `agent_id`: an `agent` key
// only as itself; a `pilot` key (shared by the agents a scheduler starts in batch jobs,
// docs/slurm.md) as itself and as `KEY_NAME.SUFFIX`; other roles never.
bool SpeaksAs(std::string_view role, std::string_view key_name, std::string_view agent_id);
// Roles whose keys run agents: agent, pilot.
bool IsAgentRole(std::string_view role);

struct PublicIdentity {
  std::string name;          // 1..64 of [A-Za-z0-9._-]
  std::string role;          // one of kRoles
  std::string curve_public;  // Z85, 40 characters (32 bytes)
  std::string sign_public;   // Z85, 40 characters (32 bytes, Ed25519)
  friend bool operator==(const PublicIdentity&, const PublicIdentity&) = default;
};

struct SecretIdentity {
  PublicIdentity identity;
  std::string curve_secret;  // Z85, 40 characters
  std::string sign_secret;   // Z85, 80 characters (64 bytes, Ed25519 seed + public)
};

// A fresh key pair. InvalidArgument for a bad name or role.
Result<SecretIdentity> GenerateIdentity(const std::string& name, const std::string& role);

// Writes DIR/NAME.key and DIR/NAME.key_secret (creating DIR, mode 0700),
// atomically, with the modes above. AlreadyExists when either file exists,
// unless `overwrite`. Returns the two paths.
Result<std::pair<std::string, std::string>> WriteIdentity(const SecretIdentity& secret,
                                                          const std::string& dir, bool overwrite);

Result<PublicIdentity> ReadPublicKeyFile(const std::string& path);
// The secret file; its public half must match its secret keys.
Result<SecretIdentity> ReadSecretKeyFile(const std::string& path);
// Every NAME.key file directly in `dir`, by file name. Two keys with one name,
// or one public key under two names, are an error.
Result<std::vector<PublicIdentity>> ReadAllowedKeys(const std::string& dir);

// Z85 (RFC 32): `bytes` must be a multiple of 4 long; text a multiple of 5.
std::string Z85Encode(std::string_view bytes);
Result<std::string> Z85Decode(std::string_view text);

}  // namespace orch::protocol
