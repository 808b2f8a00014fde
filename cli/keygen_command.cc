#include "cli/keygen_command.h"

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "protocol/identity_key.h"

namespace orch::cli {
namespace {

struct KeygenOptions {
  std::string name;
  std::string role = "agent";
  std::string dir = "keys";
  bool force = false;
  bool json = false;
};

int RunKeygen(const KeygenOptions& options) {
  Result<protocol::SecretIdentity> key = protocol::GenerateIdentity(options.name, options.role);
  if (!key.ok()) {
    std::cerr << "orch keygen: " << key.status().message() << "\n";
    return kExitInvalidInput;
  }
  Result<std::pair<std::string, std::string>> files =
      protocol::WriteIdentity(*key, options.dir, options.force);
  if (!files.ok()) {
    std::cerr << "orch keygen: " << files.status().message() << "\n";
    return files.status().code() == StatusCode::kAlreadyExists ? kExitInvalidInput : kExitError;
  }
  const protocol::PublicIdentity& id = key->identity;
  if (options.json) {
    std::cout << nlohmann::json{{"name", id.name},
                                {"role", id.role},
                                {"curve_public_key", id.curve_public},
                                {"ed25519_public_key", id.sign_public},
                                {"public_file", files->first},
                                {"secret_file", files->second}}
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  std::cout << id.name << " " << id.role << " curve:" << id.curve_public
            << " ed25519:" << id.sign_public << "\n"
            << "public key  " << files->first << "  (give it to the coordinator's admin)\n"
            << "secret key  " << files->second << "  (mode 0600; never share it)\n";
  return kExitOk;
}

}  // namespace

void RegisterKeygenCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<KeygenOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "keygen",
      "Make an identity key: an Ed25519 key pair whose X25519 form is the CURVE key of\n"
      "orch's sockets (docs/security.md). Writes DIR/NAME.key (public, zcert format) and\n"
      "DIR/NAME.key_secret (mode 0600). Exit status: 0 written, 2 invalid name or role, or\n"
      "the key exists (--force replaces it), 1 the files cannot be written.");
  cmd->add_option("NAME", options->name, "the key's name (an agent's id, a user's name)")
      ->required();
  cmd->add_option(
      "--role", options->role,
      "coordinator, agent, pilot, submitter, admin, viewer or contributor (default agent)");
  cmd->add_option("--dir", options->dir, "where the two files go (default ./keys)");
  cmd->add_flag("--force", options->force, "replace an existing key of that name");
  cmd->add_flag("--json", options->json, "print the public key and the paths as JSON");
  cmd->callback([options, &exit_code] { exit_code = RunKeygen(*options); });
}

}  // namespace orch::cli
