// What the two modes of `orch run` share (cli/run_command.cc): a spec, or a lab's plan
// bundle (cli/run_bundle.cc). Internal to those two files.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "cli/client_commands.h"
#include "cli/local_system.h"
#include "planner/plan.h"

namespace orch::cli::run_local {

struct RunOptions {
  std::string command = "run";  // the subcommand, for the line that says how to resume
  std::string spec;
  // What `orch COMMAND` resumes with besides --data-dir; "" for the spec (or --bundle).
  std::string resume;
  int agents = 0;  // 0: sized to the machine
  std::string data_dir = "orch-data";
  std::vector<std::string> drivers;     // ENGINE=EXECUTABLE
  std::vector<std::string> servers;     // ENGINE=URL or ENGINE=PROGRAM (a llama-server)
  std::vector<std::string> model_dirs;  // --model-dir
  std::string hardware = "cpu";
  int timeout_s = 3600;
  bool allow_outside_spec_dir = false;
  // Offline mode (docs/bundles.md): the plan bundle to run instead of SPEC, the
  // contributor's secret key that signs the result bundle, where that goes, and the
  // coordinator's public key to check the plan bundle with (optional).
  std::string bundle;
  std::string key;
  std::string results;
  std::string coordinator_key;
  bool write_results_only = false;
};

// The options of the local system both `orch run SPEC` and `orch bisect SPEC` start:
// --agents, --data-dir, --driver, --server, --model-dir, --hardware, --timeout,
// --allow-outside-spec-dir.
void AddLocalOptions(CLI::App& command, RunOptions& options);

// Stop signals for the whole run: SIGINT, SIGTERM and SIGHUP stop it; SIGPIPE is ignored.
// `command` ("run", "bisect") prefixes what the shared code prints: "orch bisect: ...".
void InstallStopSignals(const std::string& command = "run");
// This orch binary, which the coordinator and agents are started from.
std::string SelfPath();
// Prints "orch COMMAND: MESSAGE" on stderr and returns `code`.
int Fail(const std::string& message, int code);
// ENGINE=EXECUTABLE flags as a map; the error names the flag.
Result<std::map<std::string, std::string>> ParseDrivers(const std::vector<std::string>& flags);
// Gives every engine a driver (its flag, or the llama.cpp default); the error names every
// engine left without one, where orch looked, and the flag that gives it.
Status ResolveDrivers(const std::set<std::string>& engines,
                      std::map<std::string, std::string>& drivers);
// Gives every server engine (docs/drivers.md, "Server engines") a [[servers]] entry for
// the local agents: its --server flag (ENGINE=URL attaches, ENGINE=PROGRAM launches that
// llama-server with the llama-server preset), else for llama-server@REL the llama-server
// scripts/setup built; the error names every engine left without one, where orch looked,
// and the flag that gives it.
Result<std::vector<LocalServer>> ResolveServers(const std::set<std::string>& engines,
                                                const std::vector<std::string>& flags);
// The spec of options.spec planned; its errors are printed.
Result<planner::Plan> PlanOrReport(const RunOptions& options);
// Starts the coordinator and the local agents `plan` needs (drivers, servers, model files,
// agents sized to the machine) in `system`; sets `client` and `agents`. Returns kExitOk, or
// the exit status after printing why not.
int StartLocal(const planner::Plan& plan, const RunOptions& options, LocalSystem& system,
               ClientOptions& client, int& agents);
// A stop signal (SIGINT, SIGTERM, SIGHUP) arrived: stops `system` and says how to resume;
// the exit status.
int Interrupted(LocalSystem& system, const RunOptions& options);
// A round on a coordinator that runs elsewhere (`orch bisect --coordinator`): submit,
// say which jobs no connected agent can run (they wait), watch until every job is done;
// the exit status. Ctrl-C stops the watching, not the jobs.
int DriveRemote(const ClientOptions& client, const std::string& experiment,
                const std::string& plan_json, const RunOptions& options);
// Everything after the daemons are up: submit, fail fast, watch; the exit status.
int Drive(LocalSystem& system, const ClientOptions& client, const std::string& experiment,
          const std::string& plan_json, const RunOptions& options, int agents);

}  // namespace orch::cli::run_local
