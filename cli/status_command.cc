#include "cli/status_command.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/client_commands.h"
#include "cli/client_file.h"
#include "cli/command.h"
#include "cli/status_text.h"
#include "cli/stored_status.h"

namespace orch::cli {
namespace {

bool AllDone(const protocol::StatusReply& status) {
  if (status.experiments.empty()) return false;
  return std::all_of(status.experiments.begin(), status.experiments.end(),
                     [](const auto& e) { return e.running == 0 && e.pending == 0; });
}

struct StatusOptions {
  bool watch = false;
  bool json = false;
  bool jobs = false;
  std::string experiment;
  std::string experiment_flag;
  int interval_ms = 1000;
  ClientOptions client;
};

void Print(const StatusOptions& options, const protocol::StatusReply& status, bool terminal) {
  if (options.json) {
    std::cout << FormatStatusJson(status) << std::flush;
    return;
  }
  if (options.watch && terminal) std::cout << "\033[H\033[2J";
  std::cout << (options.jobs ? FormatJobsTable(status) : FormatStatusText(status, terminal))
            << std::flush;
}

// The run in --data-dir has ended: the final counts from its store, and where it is.
int Ended(const StatusOptions& options, const std::string& experiment) {
  Result<protocol::StatusReply> stored = StoredStatus(options.client.data_dir);
  if (!stored.ok()) {
    std::cerr << "orch status: " << stored.status().message() << "\n";
    return kExitError;
  }
  std::erase_if(stored->experiments,
                [&](const auto& e) { return !experiment.empty() && e.experiment != experiment; });
  std::cout << (options.json ? FormatStatusJson(*stored) : FormatExperimentsTable(*stored));
  std::cerr << "orch status: " << RunEndedMessage(options.client.data_dir, experiment) << "\n";
  return kExitOk;
}

// No status came: the run ended meanwhile, or (while watching) the coordinator went away.
int NoStatus(const StatusOptions& options, const std::string& experiment, const Status& error,
             bool watched) {
  if (RunEnded(options.client)) return Ended(options, experiment);
  if (watched && error.code() == StatusCode::kUnavailable) {
    Result<ClientOptions> client = ResolveClient(options.client);
    std::cerr << "orch status: the coordinator stopped answering at "
              << (client.ok() ? client->coordinator : options.client.coordinator)
              << "; the last status is above\n";
    return kExitError;
  }
  std::cerr << "orch status: " << error.message() << "\n";
  return kExitError;
}

int RunStatus(const StatusOptions& options) {
  bool terminal = isatty(STDOUT_FILENO) == 1;
  std::string experiment =
      options.experiment.empty() ? options.experiment_flag : options.experiment;
  for (bool watched = false;; watched = true) {
    if (RunEnded(options.client)) return Ended(options, experiment);
    Result<protocol::StatusReply> status =
        RequestStatus(options.client, protocol::StatusRequest{experiment, options.jobs});
    if (!status.ok()) return NoStatus(options, experiment, status.status(), watched);
    if (!experiment.empty() && status->experiments.empty()) {
      std::cerr << "orch status: no experiment " << experiment
                << " (orch experiments lists them)\n";
      return kExitError;
    }
    Print(options, *status, terminal);
    if (!options.watch) return kExitOk;
    if (AllDone(*status)) {
      std::cerr << "orch status: " << (experiment.empty() ? "every experiment" : experiment)
                << " is done\n";
      return kExitOk;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(options.interval_ms));
  }
}

// `orch experiments`: the coordinator's list, or with --data-dir of a run that has
// ended (or of a store no run has written a client file to, or whose coordinator does
// not answer) the store's.
Result<protocol::StatusReply> ListExperiments(const ClientOptions& client) {
  bool store_only = RunEnded(client) || (!client.data_dir.empty() && !ResolveClient(client).ok());
  if (store_only) return StoredStatus(client.data_dir);
  Result<protocol::StatusReply> status = RequestStatus(client, protocol::StatusRequest{});
  if (status.ok() || client.data_dir.empty() || status.status().code() != StatusCode::kUnavailable)
    return status;
  return StoredStatus(client.data_dir);
}

}  // namespace

void RegisterStatusCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<StatusOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "status",
      "Show progress per experiment, the running jobs, the jobs no agent can run and\n"
      "why, the agents and recent failures; --jobs: one line per job.");
  cmd->add_option("EXPERIMENT", options->experiment, "only this experiment");
  cmd->add_flag("--jobs", options->jobs,
                "one line per job: cell, workload, repeat, state, agent and host, "
                "attempts, elapsed, and why it waits or failed");
  cmd->add_flag("--watch", options->watch,
                "refresh every --interval until every experiment is done or the run in "
                "--data-dir ends (Ctrl-C stops)");
  cmd->add_flag("--json", options->json, "print JSON (schema orch.status/1)");
  cmd->add_option("--experiment", options->experiment_flag,
                  "only this experiment (same as EXPERIMENT)");
  cmd->add_option("--interval", options->interval_ms, "refresh interval in ms for --watch")
      ->check(CLI::PositiveNumber);
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] { exit_code = RunStatus(*options); });
}

void RegisterExperimentsCommand(CLI::App& app, int& exit_code) {
  struct Options {
    bool json = false;
    ClientOptions client;
  };
  auto options = std::make_shared<Options>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "experiments",
      "List the submitted experiments with their job counts per state and ETA; with\n"
      "--data-dir and no run answering there, those in its store.");
  cmd->add_flag("--json", options->json, "print JSON (schema orch.status/1, no jobs)");
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] {
    Result<protocol::StatusReply> status = ListExperiments(options->client);
    if (!status.ok()) {
      std::cerr << "orch experiments: " << status.status().message() << "\n";
      exit_code = kExitError;
      return;
    }
    status->jobs.clear();
    std::cout << (options->json ? FormatStatusJson(*status) : FormatExperimentsTable(*status));
    exit_code = kExitOk;
  });
}

}  // namespace orch::cli
