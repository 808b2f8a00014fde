#include "cli/client_commands.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <random>

#include "cli/client_file.h"
#include "cli/command.h"
#include "cli/files.h"
#include "cli/security_keys.h"
#include "cli/spec_model_files.h"
#include "cli/status_text.h"
#include "coordinator/coordinator_service.h"
#include "planner/plan.h"
#include "planner/plan_to_json.h"
#include "protocol/codec.h"
#include "protocol/endpoint.h"
#include "protocol/zmq_transport.h"

namespace orch::cli {
namespace {

std::string ClientId() {
  std::random_device device;
  return "cli-" + std::to_string(device()) + std::to_string(device());
}

// Prints the coordinator's answer to a command; the exit status follows it.
int Report(const char* command, const Result<protocol::Message>& reply) {
  if (!reply.ok()) {
    std::cerr << "orch " << command << ": " << reply.status().message() << "\n";
    return kExitError;
  }
  const auto* answer = std::get_if<protocol::CommandReply>(&*reply);
  if (answer == nullptr) {
    std::cerr << "orch " << command << ": unexpected " << protocol::MessageName(*reply)
              << " from the coordinator\n";
    return kExitError;
  }
  if (answer->ok) {
    std::cout << answer->message << "\n";
  } else {
    std::cerr << "orch " << command << ": " << answer->message << "\n";
  }
  return answer->ok ? kExitOk : kExitError;
}

// Says at once which of the experiment's jobs no connected agent can run, and why; then
// `more` (the spec's model files whose content is not the declared hash).
void WarnAboutUnrunnableJobs(const ClientOptions& options, const std::string& experiment,
                             const std::function<std::string()>& more) {
  Result<protocol::StatusReply> status =
      RequestStatus(options, protocol::StatusRequest{experiment, false});
  if (!status.ok()) return;
  std::size_t count = 0;
  std::string table = FormatUnrunnableJobs(*status, &count);
  if (table.empty()) return;
  std::cerr << "orch submit: " << count
            << " jobs can run on no connected agent; they wait until one that can registers:\n"
            << table << more();
}

int RunSubmit(const std::string& spec, const ClientOptions& options, bool allow_outside) {
  Result<std::string> text = ReadFile(spec);
  if (!text.ok()) {
    std::cerr << "orch submit: " << text.status().message() << "\n";
    return kExitError;
  }
  FileSourceReader reader(
      std::filesystem::path(spec).parent_path().string(),
      allow_outside ? planner::SourceScope::kAnywhere : planner::SourceScope::kSpecDirOnly);
  planner::PlanOutcome outcome = planner::PlanSpec(*text, spec, reader);
  if (!outcome.plan) {
    for (const planner::Diagnostic& d : outcome.diagnostics.all()) {
      std::cerr << d.Format(spec) << "\n";
    }
    std::cerr << "orch submit: invalid spec " << spec << "; nothing was submitted\n";
    return kExitInvalidInput;
  }
  std::string plan_json = planner::PlanToJson(*outcome.plan);
  if (Status fits = PlanFits(outcome.plan->spec.name, plan_json.size()); !fits.ok()) {
    std::cerr << "orch submit: " << fits.message() << "; nothing was submitted\n";
    return kExitInvalidInput;
  }
  int code = Report("submit", SubmitPlan(options, plan_json, "submit"));
  if (code == kExitOk) {
    WarnAboutUnrunnableJobs(options, outcome.plan->spec.name, [&] {
      return SpecModelMismatchLines(outcome.plan->spec, reader, "orch submit: ");
    });
  }
  return code;
}

}  // namespace

void AddClientOptions(CLI::App& cmd, ClientOptions& options) {
  const char* env = std::getenv("ORCH_COORDINATOR");
  options.coordinator = env != nullptr && *env != '\0' ? env : "tcp://127.0.0.1:7700";
  auto given = [&options](const std::string&) { options.endpoint_given = true; };
  cmd.add_option("--coordinator", options.coordinator,
                 "coordinator endpoint (default: $ORCH_COORDINATOR, else "
                 "tcp://127.0.0.1:7700)")
      ->each(given);
  cmd.add_option("--timeout", options.timeout_s, "seconds to wait for the coordinator (10)")
      ->check(CLI::PositiveNumber);
  const char* key = std::getenv("ORCH_KEY");
  const char* server_key = std::getenv("ORCH_COORDINATOR_KEY");
  options.key = key != nullptr ? key : "";
  options.coordinator_key = server_key != nullptr ? server_key : "";
  cmd.add_option("--key", options.key,
                 "FILE: your secret key (orch keygen), for a coordinator with keys "
                 "(default $ORCH_KEY)")
      ->each(given);
  cmd.add_option("--coordinator-key", options.coordinator_key,
                 "FILE: the coordinator's public key (default $ORCH_COORDINATOR_KEY)")
      ->each(given);
  // orch import has a --data-dir of its own: a stopped store to write into.
  if (cmd.get_option_no_throw("--data-dir") != nullptr) return;
  cmd.add_option("--data-dir", options.data_dir,
                 "DIR: the --data-dir of an orch run on this machine; its coordinator and "
                 "keys come from DIR/client.json");
}

Result<ClientOptions> ResolveClient(const ClientOptions& options) {
  if (options.data_dir.empty() || options.endpoint_given) return options;
  ORCH_ASSIGN_OR_RETURN(ClientFile run, ReadClientFile(options.data_dir));
  if (run.ended) return Status(StatusCode::kUnavailable, RunEndedMessage(options.data_dir, ""));
  ClientOptions resolved = options;
  resolved.coordinator = run.coordinator;
  resolved.key = run.key;
  resolved.coordinator_key = run.coordinator_key;
  return resolved;
}

// What a refused client is told: the transport's reason and what to do about it.
std::string RefusalAdvice(const std::string& why, const ClientOptions& options) {
  return why + " (key " + (options.key.empty() ? std::string("none") : options.key) +
         ": add its public key to the coordinator's allowed_keys, which it re-reads without a "
         "restart; or check --coordinator-key; docs/security.md)";
}

bool RunEnded(const ClientOptions& options) {
  if (options.data_dir.empty() || options.endpoint_given) return false;
  Result<ClientFile> run = ReadClientFile(options.data_dir);
  return run.ok() && run->ended;
}

CoordinatorClient::CoordinatorClient(ClientOptions options) : given_(std::move(options)) {}

CoordinatorClient::~CoordinatorClient() {
  transport_.reset();  // before its context
  context_.reset();
}

Status CoordinatorClient::Open() {
  ORCH_ASSIGN_OR_RETURN(options_, ResolveClient(given_));
  std::string bad = protocol::WhyBadEndpoint(options_.coordinator, protocol::EndpointUse::kConnect);
  if (!bad.empty()) return InvalidArgument("--coordinator " + bad);
  ORCH_ASSIGN_OR_RETURN(
      curve_, LoadClientKeys(options_.key, options_.coordinator_key, "--key/--coordinator-key"));
  context_ = std::make_unique<protocol::ZmqContext>();
  Result<std::unique_ptr<protocol::ZmqTransport>> client =
      curve_ ? protocol::ConnectZmqClient(*context_, options_.coordinator, ClientId(), *curve_)
             : protocol::ConnectZmqClient(*context_, options_.coordinator, ClientId());
  if (!client.ok()) return client.status();
  transport_ = std::move(*client);
  return Status::Ok();
}

void CoordinatorClient::Close() {
  transport_.reset();
  context_.reset();
}

Result<protocol::Message> CoordinatorClient::Call(const protocol::Message& request) {
  if (transport_ == nullptr) ORCH_RETURN_IF_ERROR(Open());
  Result<protocol::Message> reply = Exchange(request);
  // A reply that comes after its request gave up must not answer the next one.
  if (!reply.ok()) Close();
  return reply;
}

Result<protocol::Message> CoordinatorClient::Exchange(const protocol::Message& request) {
  protocol::ZmqTransport& client = *transport_;
  std::string frame = protocol::Encode(request);
  Status sent = client.Send(protocol::kServerPeer, frame);
  // A request ZeroMQ cannot queue yet (no connection is up: the server may be refusing
  // this client's key) is sent again while the link's events are watched.
  if (!sent.ok() && sent.code() != StatusCode::kUnavailable) return sent;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options_.timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!sent.ok()) sent = client.Send(protocol::kServerPeer, frame);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!sent.ok()) left = std::min(left, std::chrono::milliseconds(50));
    if (!client.Wait(std::max(left, std::chrono::milliseconds(1)))) continue;
    while (auto event = client.Receive()) {
      if (event->kind == protocol::TransportEvent::Kind::kRefused) {
        return Status(StatusCode::kUnavailable, RefusalAdvice(event->frame, options_));
      }
      if (event->kind != protocol::TransportEvent::Kind::kFrame) continue;
      Result<protocol::Message> reply = protocol::Decode(event->frame);
      if (reply.ok()) return reply;
    }
  }
  std::string problem = client.LinkProblem();
  if (problem.empty() && !sent.ok()) problem = "the request was never sent: " + sent.message();
  if (!given_.data_dir.empty() && !given_.endpoint_given) {
    return Status(StatusCode::kUnavailable, "no answer from the coordinator at " +
                                                options_.coordinator + ": " +
                                                RunEndedMessage(given_.data_dir, ""));
  }
  std::string within = "no answer from the coordinator at " + options_.coordinator + " within " +
                       std::to_string(options_.timeout_s) + " s: ";
  if (!problem.empty()) return Status(StatusCode::kUnavailable, within + problem);
  return Status(StatusCode::kUnavailable,
                within + "it took the connection but sent nothing back" +
                    (curve_ ? ""
                            : " (a coordinator with keys answers only clients with --key and "
                              "--coordinator-key, docs/security.md)"));
}

Result<protocol::Message> Request(const ClientOptions& options, const protocol::Message& request) {
  CoordinatorClient client(options);
  return client.Call(request);
}

namespace {

std::string RandomUploadId() {
  std::random_device random;
  std::string id = "u-";
  for (int i = 0; i < 4; ++i) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", random());
    id += hex;
  }
  return id;
}

}  // namespace

Result<protocol::Message> RequestInParts(
    const ClientOptions& options, const std::string& file,
    const std::function<protocol::Message(FilePart)>& carry,
    const std::function<void(std::uint64_t sent, std::uint64_t total)>& progress) {
  if (file.size() <= kPartBytes) return Request(options, carry(FilePart{file, "", 0, 0}));
  std::string upload = RandomUploadId();
  for (std::size_t offset = 0;; offset += kPartBytes) {
    std::size_t n = std::min(kPartBytes, file.size() - offset);
    ORCH_ASSIGN_OR_RETURN(
        protocol::Message reply,
        Request(options, carry(FilePart{file.substr(offset, n), upload, offset, file.size()})));
    const auto* answer = std::get_if<protocol::CommandReply>(&reply);
    if (offset + n == file.size() || answer == nullptr || !answer->ok) return reply;
    progress(offset + n, file.size());
  }
}

Status PlanFits(const std::string& experiment, std::uint64_t bytes) {
  if (bytes <= coordinator::kMaxPlanBytes) return Status::Ok();
  return InvalidArgument("the plan of experiment " + experiment + " is " +
                         std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB of JSON (" +
                         std::to_string(bytes) + " bytes), above the " +
                         std::to_string(coordinator::kMaxPlanBytes >> 20) +
                         " MiB a coordinator takes: split the experiment into smaller ones "
                         "(fewer workloads, cells or repeats per spec)");
}

Result<protocol::Message> SubmitPlan(const ClientOptions& options, const std::string& plan_json,
                                     const std::string& command) {
  ClientOptions client = options;
  // The last part of a large plan is answered once the whole plan is stored.
  if (plan_json.size() > kPartBytes) client.timeout_s = std::max(client.timeout_s, 60);
  return RequestInParts(
      client, plan_json,
      [](FilePart part) -> protocol::Message {
        return protocol::Submit{std::move(part.bytes), std::move(part.upload_id), part.offset,
                                part.total_size};
      },
      [&command](std::uint64_t sent, std::uint64_t total) {
        std::cerr << "orch " << command << ": sent " << (sent >> 20) << " of " << (total >> 20)
                  << " MiB of the plan" << std::endl;
      });
}

Result<protocol::StatusReply> RequestStatus(const ClientOptions& options,
                                            const protocol::StatusRequest& request) {
  CoordinatorClient client(options);
  return RequestStatus(client, request);
}

Result<protocol::StatusReply> RequestStatus(CoordinatorClient& client,
                                            const protocol::StatusRequest& request) {
  ORCH_ASSIGN_OR_RETURN(protocol::Message reply, client.Call(request));
  if (const auto* refused = std::get_if<protocol::CommandReply>(&reply)) {
    return Status(StatusCode::kFailedPrecondition, refused->message);
  }
  const auto* status = std::get_if<protocol::StatusReply>(&reply);
  if (status == nullptr) {
    return Status(
        StatusCode::kUnavailable,
        std::string("unexpected ") + protocol::MessageName(reply) + " from the coordinator");
  }
  return *status;
}

void RegisterSubmitCommand(CLI::App& app, int& exit_code) {
  struct Options {
    std::string spec;
    ClientOptions client;
    bool allow_outside_spec_dir = false;
  };
  auto options = std::make_shared<Options>();  // shared with the callback below
  CLI::App* cmd =
      app.add_subcommand("submit",
                         "Plan a spec (as `orch plan` does) and submit it to the coordinator.\n"
                         "Resubmitting the same plan is harmless: stored jobs keep their state.");
  cmd->add_option("SPEC", options->spec, "experiment spec (TOML, see docs/spec.md)")->required();
  cmd->add_flag("--allow-outside-spec-dir", options->allow_outside_spec_dir,
                "let text_file read files outside the spec's directory (absolute paths, "
                "\"..\", symlinks leading out); their content goes into the plan");
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] {
    exit_code = RunSubmit(options->spec, options->client, options->allow_outside_spec_dir);
  });
}

void RegisterCancelCommand(CLI::App& app, int& exit_code) {
  struct Options {
    std::string experiment;
    ClientOptions client;
  };
  auto options = std::make_shared<Options>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand("cancel",
                                     "Cancel an experiment: its unfinished jobs are "
                                     "cancelled and their runs stopped.");
  cmd->add_option("EXPERIMENT", options->experiment, "experiment name")->required();
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] {
    exit_code =
        Report("cancel", Request(options->client, protocol::CancelExperiment{options->experiment}));
  });
}

void RegisterRetryCommand(CLI::App& app, int& exit_code) {
  struct Options {
    std::string experiment;
    bool failed = false;
    bool cancelled = false;
    ClientOptions client;
  };
  auto options = std::make_shared<Options>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "retry",
      "Run an experiment's failed and cancelled jobs again, each with a fresh retry\n"
      "budget (--failed or --cancelled: only those).");
  cmd->add_option("EXPERIMENT", options->experiment, "experiment name")->required();
  cmd->add_flag("--failed", options->failed, "retry the failed jobs");
  cmd->add_flag("--cancelled", options->cancelled, "retry the cancelled jobs");
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] {
    bool both = !options->failed && !options->cancelled;
    protocol::Retry retry{options->experiment, both || options->failed, both || options->cancelled};
    exit_code = Report("retry", Request(options->client, retry));
  });
}

void RegisterDrainCommand(CLI::App& app, int& exit_code) {
  struct Options {
    std::string agent;
    ClientOptions client;
  };
  auto options = std::make_shared<Options>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand("drain",
                                     "Drain an agent: it takes no new runs, "
                                     "finishes its current ones and exits.");
  cmd->add_option("AGENT", options->agent, "agent id")->required();
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] {
    exit_code = Report("drain", Request(options->client, protocol::Drain{options->agent}));
  });
}

}  // namespace orch::cli
