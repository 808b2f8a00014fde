#include "cli/plan_command.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/files.h"
#include "cli/plan_text.h"
#include "planner/plan.h"
#include "planner/plan_to_json.h"

namespace orch::cli {
namespace {

struct PlanOptions {
  std::string spec;
  bool json = false;
  std::string output;
  bool allow_outside_spec_dir = false;
};

int ReportInvalid(const PlanOptions& options, const planner::Diagnostics& diagnostics) {
  for (const planner::Diagnostic& d : diagnostics.all()) {
    std::cerr << d.Format(options.spec) << "\n";
  }
  if (options.json) std::cout << planner::DiagnosticsToJson(options.spec, diagnostics);
  int errors = diagnostics.error_count();
  std::cerr << "orch plan: " << errors << (errors == 1 ? " error" : " errors") << " in "
            << options.spec << "; nothing was written\n";
  return kExitInvalidInput;
}

int RunPlan(const PlanOptions& options) {
  Result<std::string> text = ReadFile(options.spec);
  if (!text.ok()) {
    std::cerr << "orch plan: " << text.status().message() << "\n";
    return kExitError;
  }
  FileSourceReader reader(std::filesystem::path(options.spec).parent_path().string(),
                          options.allow_outside_spec_dir ? planner::SourceScope::kAnywhere
                                                         : planner::SourceScope::kSpecDirOnly);
  planner::PlanOutcome outcome = planner::PlanSpec(*text, options.spec, reader);
  if (!outcome.plan) return ReportInvalid(options, outcome.diagnostics);

  const planner::Plan& plan = *outcome.plan;
  std::string json = planner::PlanToJson(plan);
  if (!options.output.empty()) {
    Status written = WriteFileAtomically(options.output, json);
    if (!written.ok()) {
      std::cerr << "orch plan: " << written.message() << "\n";
      return kExitError;
    }
  }
  std::cout << (options.json ? json : FormatPlanText(plan));
  return kExitOk;
}

}  // namespace

void RegisterPlanCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<PlanOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Validate an experiment spec and expand it one axis at a time into jobs.\n"
      "Works offline. Exit status: 0 ok, 2 invalid spec (all problems listed), 1 other "
      "error.");
  cmd->add_option("SPEC", options->spec, "experiment spec (TOML, see docs/spec.md)")->required();
  cmd->add_flag("--json", options->json,
                "print the plan as JSON (schema orch.plan/1, docs/plan-json.md)");
  cmd->add_option("-o,--output", options->output,
                  "also write the JSON plan to FILE (atomically; untouched on error)");
  cmd->add_flag("--allow-outside-spec-dir", options->allow_outside_spec_dir,
                "let text_file read files outside the spec's directory (absolute paths, "
                "\"..\", symlinks leading out); their content goes into the plan");
  cmd->callback([options, &exit_code] { exit_code = RunPlan(*options); });
}

}  // namespace orch::cli
