// The client commands that talk to a running coordinator: `orch submit SPEC`,
// `orch cancel EXPERIMENT`, `orch retry EXPERIMENT`, `orch drain AGENT` (here),
// `orch status` and `orch experiments`
// (cli/status_command.h). Each takes --coordinator ENDPOINT (default: the
// environment variable ORCH_COORDINATOR, else tcp://127.0.0.1:7700) and
// --timeout SECONDS, or --data-dir DIR of an `orch run` on this machine, whose
// endpoint and keys come from DIR/client.json (cli/client_file.h). Exit status: 0 done, 1 refused or unreachable, 2 invalid
// input (nothing was sent).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

#include "base/status.h"
#include "protocol/messages.h"

namespace orch::cli {

void RegisterSubmitCommand(CLI::App& app, int& exit_code);
void RegisterCancelCommand(CLI::App& app, int& exit_code);
void RegisterDrainCommand(CLI::App& app, int& exit_code);
void RegisterRetryCommand(CLI::App& app, int& exit_code);

struct ClientOptions {
  std::string coordinator;  // endpoint
  int timeout_s = 10;
  // CurveZMQ (docs/security.md): this user's secret key file and the
  // coordinator's public key file; both empty for a plain coordinator.
  std::string key;
  std::string coordinator_key;
  // --data-dir: an orch run's, whose client file gives the three above unless
  // --coordinator, --key or --coordinator-key was given (`endpoint_given`).
  std::string data_dir = {};
  bool endpoint_given = false;
};

// Adds --coordinator, --timeout, --key, --coordinator-key and --data-dir to `cmd`
// (defaults: $ORCH_COORDINATOR else tcp://127.0.0.1:7700, 10 s, $ORCH_KEY,
// $ORCH_COORDINATOR_KEY, none); --data-dir not where `cmd` has one already.
void AddClientOptions(CLI::App& cmd, ClientOptions& options);

// `options` with the endpoint and keys of the run in --data-dir when it names one
// (and no endpoint or key was given); the error says when that run has ended.
Result<ClientOptions> ResolveClient(const ClientOptions& options);
// Whether --data-dir names a run (and no endpoint or key was given) whose client
// file says it has ended: its store is all there is.
bool RunEnded(const ClientOptions& options);

// A StatusRequest's reply; FailedPrecondition with the coordinator's message when
// it refuses (a key without the role), Unavailable for no or another reply.
Result<protocol::StatusReply> RequestStatus(const ClientOptions& client,
                                            const protocol::StatusRequest& request);

// Sends `request` to the coordinator and waits up to the timeout for the first
// reply it decodes. Unavailable when none comes.
Result<protocol::Message> Request(const ClientOptions& options, const protocol::Message& request);

}  // namespace orch::cli
