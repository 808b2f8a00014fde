#include "cli/status_command.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/client_commands.h"
#include "cli/command.h"
#include "cli/status_text.h"

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

int RunStatus(const StatusOptions& options) {
  bool terminal = isatty(STDOUT_FILENO) == 1;
  std::string experiment =
      options.experiment.empty() ? options.experiment_flag : options.experiment;
  while (true) {
    Result<protocol::StatusReply> status =
        RequestStatus(options.client, protocol::StatusRequest{experiment, options.jobs});
    if (!status.ok()) {
      std::cerr << "orch status: " << status.status().message() << "\n";
      return kExitError;
    }
    if (!experiment.empty() && status->experiments.empty()) {
      std::cerr << "orch status: no experiment " << experiment
                << " (orch experiments lists them)\n";
      return kExitError;
    }
    if (options.json) {
      std::cout << FormatStatusJson(*status) << std::flush;
    } else {
      if (options.watch && terminal) std::cout << "\033[H\033[2J";
      std::cout << (options.jobs ? FormatJobsTable(*status) : FormatStatusText(*status, terminal))
                << std::flush;
    }
    if (!options.watch || AllDone(*status)) return kExitOk;
    std::this_thread::sleep_for(std::chrono::milliseconds(options.interval_ms));
  }
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
                "refresh every --interval until every experiment is done (Ctrl-C stops)");
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
      "experiments", "List the submitted experiments with their job counts per state and ETA.");
  cmd->add_flag("--json", options->json, "print JSON (schema orch.status/1, no jobs)");
  AddClientOptions(*cmd, options->client);
  cmd->callback([options, &exit_code] {
    Result<protocol::StatusReply> status =
        RequestStatus(options->client, protocol::StatusRequest{});
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
