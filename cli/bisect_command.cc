#include "cli/bisect_command.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/local_system.h"
#include "cli/run_local.h"
#include "cli/scratch_dir.h"
#include "cli/stored_status.h"
#include "planner/plan_json.h"
#include "report/bisect_render.h"
#include "report/bisect_report.h"
#include "report/render.h"
#include "report/report.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;

struct BisectOptions {
  run_local::RunOptions run;
  bool json = false;
};

// The bisection as the store holds it now (read-only, beside the running coordinator).
Result<report::BisectReport> Measure(const std::string& data_dir, const std::string& experiment) {
  ScratchDir scratch("orch-bisect");
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, OpenStoreToRead(data_dir, scratch));
  ORCH_ASSIGN_OR_RETURN(report::ExperimentInput input, report::LoadExperiment(*store, experiment));
  ORCH_ASSIGN_OR_RETURN(report::PlanView plan, report::ParsePlanView(input.plan.json));
  std::unique_ptr<report::RunSource> source = report::MakeStoreRunSource(*store);
  report::JobRuns runs(input.jobs, input.runs);
  ORCH_ASSIGN_OR_RETURN(std::optional<report::BisectReport> bisect,
                        report::BuildBisectReport(plan, runs, *source));
  if (!bisect) return Internal("the stored plan of " + experiment + " has no bisection");
  return std::move(*bisect);
}

// Adds what the verdict asks for as the cells of round `round`.
void AddRound(planner::BisectSpec& spec, const bisect::Verdict& verdict, int round) {
  for (bisect::AxisSet set : verdict.next) spec.cells.push_back({set, round, false});
  for (bisect::AxisSet set : verdict.repeat) {
    for (planner::BisectCell& cell : spec.cells) cell.repeated = cell.repeated || cell.set == set;
  }
}

std::string RoundCells(const planner::Plan& plan, int round) {
  std::string out;
  int count = 0;
  for (const planner::Cell& cell : plan.cells) {
    if (cell.round != round) continue;
    out += (out.empty() ? "" : ", ") + cell.label;
    ++count;
  }
  return std::to_string(count) + " cells: " + out;
}

// With --json, stdout holds the JSON alone: the rounds' progress goes to stderr meanwhile.
class ProgressToStderr {
 public:
  explicit ProgressToStderr(bool active)
      : saved_(active ? std::cout.rdbuf(std::cerr.rdbuf()) : nullptr) {}
  ~ProgressToStderr() { Restore(); }
  void Restore() {
    if (saved_ != nullptr) std::cout.rdbuf(saved_);
    saved_ = nullptr;
  }

 private:
  std::streambuf* saved_;
};

int RunBisect(BisectOptions& options) {
  ProgressToStderr progress(options.json);
  run_local::RunOptions& run = options.run;
  run.command = "bisect";
  run_local::InstallStopSignals();
  Result<planner::Plan> plan = run_local::PlanOrReport(run);
  if (!plan.ok()) return run_local::Fail(plan.status().message(), kExitInvalidInput);
  if (!plan->spec.bisect) {
    std::cerr << "orch bisect: " << run.spec
              << " has no [bisect] section (docs/bisect.md); orch run runs a one-axis-at-a-time "
                 "spec\n";
    return kExitInvalidInput;
  }
  fs::path data_dir = fs::absolute(run.data_dir);
  LocalSystem system(data_dir.string(), (data_dir / "local").string());
  ClientOptions client;
  int agents = 0;
  if (int started = run_local::StartLocal(*plan, run, system, client, agents); started != kExitOk) {
    return started;
  }
  const std::string experiment = plan->spec.name;
  const int max_rounds = plan->spec.bisect->max_rounds;
  Result<report::BisectReport> measured = InvalidArgument("no round ran");
  for (int round = 1;; ++round) {
    std::cout << "orch bisect: round " << round << " of at most " << max_rounds << ", "
              << RoundCells(*plan, round) << std::endl;
    int driven =
        run_local::Drive(system, client, experiment, planner::PlanToJson(*plan), run, agents);
    if (driven != kExitOk) return driven;
    measured = Measure(run.data_dir, experiment);
    if (!measured.ok()) {
      std::cerr << "orch bisect: " << measured.status().message() << "\n";
      return kExitError;
    }
    const bisect::Verdict& verdict = measured->verdict;
    for (const std::string& line : report::BisectVerdictLines(*measured)) {
      std::cout << "orch bisect: " << line << "\n";
    }
    if (verdict.kind != bisect::VerdictKind::kSearching) break;
    if (round >= max_rounds) {
      std::cout << "orch bisect: max_rounds (" << max_rounds << ") reached\n";
      break;
    }
    planner::Spec spec = plan->spec;
    AddRound(*spec.bisect, verdict, round + 1);
    planner::PlanOutcome next = planner::ExpandSpec(std::move(spec));
    if (!next.plan) {
      for (const planner::Diagnostic& d : next.diagnostics.all())
        std::cerr << d.Format(run.spec) << "\n";
      return run_local::Fail("round " + std::to_string(round + 1) + " cannot be planned",
                             kExitError);
    }
    *plan = std::move(*next.plan);
  }
  system.Stop();
  progress.Restore();
  std::cout << (options.json ? report::RenderBisectJson(experiment, *measured)
                             : "\n" + report::RenderBisectText(*measured));
  bisect::VerdictKind kind = measured->verdict.kind;
  return kind == bisect::VerdictKind::kExplained || kind == bisect::VerdictKind::kAgree
             ? kExitOk
             : kExitError;
}

}  // namespace

void RegisterBisectCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<BisectOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "bisect",
      "From two setups that disagree to the change that explains it: runs a spec with\n"
      "[bisect] on this machine like orch run, round by round (each axis alone from `from`,\n"
      "each left out of `to`, the walk; then sets of the axes that moved), until a set is\n"
      "sufficient and necessary within the tolerance (docs/bisect.md). Ctrl-C stops it;\n"
      "running it again on the same --data-dir resumes. Exit status: 0 explained (or from\n"
      "and to agree), 1 not explained or a job failed, 2 invalid spec or arguments, 128+N\n"
      "stopped by signal N.");
  cmd->add_option("SPEC", options->run.spec, "a spec with [bisect] (docs/bisect.md)")->required();
  run_local::AddLocalOptions(*cmd, options->run);
  cmd->add_flag(
      "--json", options->json,
      "print the result as JSON (schema orch.bisect/1); the rounds' progress goes to stderr");
  cmd->callback([options, &exit_code] { exit_code = RunBisect(*options); });
}

}  // namespace orch::cli
