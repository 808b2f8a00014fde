// The `orch` binary: parses the command line and builds the real adapters. This is the
// only place where real implementations (files, sockets, clocks) are constructed.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/agent_command.h"
#include "cli/agents_command.h"
#include "cli/bisect_command.h"
#include "cli/bundle_commands.h"
#include "cli/client_commands.h"
#include "cli/command.h"
#include "cli/coordinator_command.h"
#include "cli/fingerprint_command.h"
#include "cli/history_command.h"
#include "cli/keygen_command.h"
#include "cli/model_command.h"
#include "cli/plan_command.h"
#include "cli/report_command.h"
#include "cli/run_command.h"
#include "cli/slurm_command.h"
#include "cli/status_command.h"
#include "cli/store_command.h"
#include "cli/unknown_option.h"

int main(int argc, char** argv) {
  CLI::App app{
      "orch: finds where and why the same LLM weights give different tokens on\n"
      "different inference stacks. Run `orch COMMAND --help` for each command."};
  app.name("orch");
  app.require_subcommand(1);
  app.set_version_flag("--version", "orch 0.1.0");

  int exit_code = orch::cli::kExitOk;
  orch::cli::RegisterPlanCommand(app, exit_code);
  orch::cli::RegisterReportCommand(app, exit_code);
  orch::cli::RegisterStoreCommand(app, exit_code);
  orch::cli::RegisterRunCommand(app, exit_code);
  orch::cli::RegisterBisectCommand(app, exit_code);
  orch::cli::RegisterFingerprintCommand(app, exit_code);
  orch::cli::RegisterModelCommand(app, exit_code);
  orch::cli::RegisterKeygenCommand(app, exit_code);
  orch::cli::RegisterExportCommand(app, exit_code);
  orch::cli::RegisterImportCommand(app, exit_code);
  orch::cli::RegisterSlurmCommand(app, exit_code);
  orch::cli::RegisterAgentCommand(app, exit_code);
  orch::cli::RegisterCoordinatorCommand(app, exit_code);
  orch::cli::RegisterSubmitCommand(app, exit_code);
  orch::cli::RegisterStatusCommand(app, exit_code);
  orch::cli::RegisterExperimentsCommand(app, exit_code);
  orch::cli::RegisterCancelCommand(app, exit_code);
  orch::cli::RegisterRetryCommand(app, exit_code);
  orch::cli::RegisterDrainCommand(app, exit_code);
  orch::cli::RegisterHistoryCommand(app, exit_code);
  orch::cli::RegisterEventsCommand(app, exit_code);
  orch::cli::RegisterAgentsCommand(app, exit_code);

  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  if (std::string unknown = orch::cli::UnknownOptionError(app, args); !unknown.empty()) {
    std::fprintf(stderr, "%s\nRun with --help for more information.\n", unknown.c_str());
    return orch::cli::kExitInvalidInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help/version or the usage error
    return code == 0 ? orch::cli::kExitOk : orch::cli::kExitInvalidInput;
  }
  return exit_code;
}
