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
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "protocol/messages.h"
#include "protocol/zmq_transport.h"

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

// A connection to the coordinator kept for many requests (`orch run` asks for progress
// every few ms): one ZeroMQ context and one CurveZMQ handshake for all of them, opened
// at the first call. Request() is one Call on a new one.
class CoordinatorClient {
 public:
  explicit CoordinatorClient(ClientOptions options);
  ~CoordinatorClient();
  CoordinatorClient(const CoordinatorClient&) = delete;
  CoordinatorClient& operator=(const CoordinatorClient&) = delete;

  // As Request(). After a failure the connection is closed (a reply that comes after
  // its request gave up must not answer the next one); the next call opens another.
  Result<protocol::Message> Call(const protocol::Message& request);

 private:
  Status Open();
  void Close();
  Result<protocol::Message> Exchange(const protocol::Message& request);

  ClientOptions given_;
  ClientOptions options_;  // given_ resolved (ResolveClient) at Open
  std::optional<protocol::CurveClientKeys> curve_;
  std::unique_ptr<protocol::ZmqContext> context_;
  std::unique_ptr<protocol::ZmqTransport> transport_;
};

// A StatusRequest's reply; FailedPrecondition with the coordinator's message when
// it refuses (a key without the role), Unavailable for no or another reply.
Result<protocol::StatusReply> RequestStatus(const ClientOptions& client,
                                            const protocol::StatusRequest& request);
Result<protocol::StatusReply> RequestStatus(CoordinatorClient& client,
                                            const protocol::StatusRequest& request);

// Sends `request` to the coordinator and waits up to the timeout for the first
// reply it decodes. Unavailable when none comes; InvalidArgument, sending nothing,
// for a message larger than a frame ("message too large", protocol/transport.h).
Result<protocol::Message> Request(const ClientOptions& options, const protocol::Message& request);

// Bytes per part of a file sent in parts: well under the protocol's frame limit.
inline constexpr std::size_t kPartBytes = std::size_t{8} << 20;

// A part of a file as RequestInParts hands it to the message that carries it; an empty
// upload_id: the whole file, in one message (as peers before parts existed expect).
struct FilePart {
  std::string bytes;
  std::string upload_id;
  std::uint64_t offset = 0;
  std::uint64_t total_size = 0;
};

// Sends `file` in one request (`carry` makes its message) when it is at most
// kPartBytes, else in parts of kPartBytes sharing a random upload id, one request each
// (Submit and ImportRequest, docs/protocol.md). The reply to the last part, or to the
// first part the coordinator refuses, is the outcome; `progress(sent, total)` is called
// after each part but the last.
Result<protocol::Message> RequestInParts(
    const ClientOptions& options, const std::string& file,
    const std::function<protocol::Message(FilePart)>& carry,
    const std::function<void(std::uint64_t sent, std::uint64_t total)>& progress);

// OK when a plan's JSON of `bytes` is within what a coordinator takes
// (coordinator::kMaxPlanBytes); else InvalidArgument naming the experiment, the size and
// the bound. Checked before anything is sent.
Status PlanFits(const std::string& experiment, std::uint64_t bytes);

// Submits a plan (in parts when it is larger than kPartBytes) and returns the reply;
// `command` ("submit", "run") prefixes the progress lines.
Result<protocol::Message> SubmitPlan(const ClientOptions& options, const std::string& plan_json,
                                     const std::string& command);

}  // namespace orch::cli
