#include "cli/bisect_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/bisect_stored.h"
#include "cli/command.h"
#include "cli/files.h"
#include "cli/local_system.h"
#include "cli/plan_text.h"
#include "cli/run_local.h"
#include "cli/scratch_dir.h"
#include "cli/stored_status.h"
#include "planner/plan_to_json.h"
#include "report/bisect_render.h"
#include "report/bisect_report.h"
#include "report/render.h"
#include "report/report.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;

struct BisectOptions {
  run_local::RunOptions run;
  std::vector<std::string> what;  // SPEC, or A B
  bool json = false;
  // A B only
  std::string store;  // "" = --data-dir
  std::string name;
  double tolerance = 0.05;
  int max_rounds = 4;
  bool plan_only = false;
  std::optional<report::BisectOrigin> origin;
  // A coordinator that runs elsewhere: its endpoint, and the keys to reach it with.
  std::string coordinator;
  std::string key;
  std::string coordinator_key;
};

// The bisection as the store holds it now (read-only, beside the running coordinator).
Result<report::BisectReport> Measure(const std::string& data_dir, const std::string& experiment) {
  ScratchDir scratch("orch-bisect");
  ORCH_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, OpenStoreToRead(data_dir, scratch));
  ORCH_ASSIGN_OR_RETURN(report::ExperimentInput input, report::LoadExperiment(*store, experiment));
  ORCH_ASSIGN_OR_RETURN(report::PlanView plan, report::ParsePlanView(input.plan.json));
  std::unique_ptr<report::RunSource> source = report::MakeStoreRunSource(*store);
  std::optional<report::BisectReport> bisect;
  if (plan.tasks.empty()) {
    report::JobRuns runs(input.jobs, input.runs);
    ORCH_ASSIGN_OR_RETURN(bisect, report::BuildBisectReport(plan, runs, *source));
  } else {
    // Task workloads: the whole report, whose task outcomes the bisection shows per cell.
    ORCH_ASSIGN_OR_RETURN(report::Report whole, report::BuildReport(input, *source, {}));
    bisect = std::move(whole.bisect);
  }
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

// Grows `plan` by the cells round `round` measures (what `verdict` asks for); false,
// after printing why, when the grown spec does not plan.
bool NextRound(planner::Plan& plan, const bisect::Verdict& verdict, int round,
               const std::string& spec_file) {
  planner::Spec spec = plan.spec;
  AddRound(*spec.bisect, verdict, round);
  planner::PlanOutcome next = planner::ExpandSpec(std::move(spec));
  if (!next.plan) {
    for (const planner::Diagnostic& d : next.diagnostics.all())
      std::cerr << d.Format(spec_file) << "\n";
    return false;
  }
  plan = std::move(*next.plan);
  return true;
}

// The bisection (with where it started, for A B) as text or JSON; the exit status.
int PrintResult(const BisectOptions& options, const std::string& experiment,
                const report::BisectReport& measured) {
  const report::BisectOrigin* origin = options.origin ? &*options.origin : nullptr;
  std::cout << (options.json ? report::RenderBisectJson(experiment, measured, origin)
                             : "\n" + report::RenderBisectText(measured, {}, origin));
  bisect::VerdictKind kind = measured.verdict.kind;
  return kind == bisect::VerdictKind::kExplained || kind == bisect::VerdictKind::kAgree
             ? kExitOk
             : kExitError;
}

int RunBisect(BisectOptions& options) {
  ProgressToStderr progress(options.json);
  run_local::RunOptions& run = options.run;
  run.command = "bisect";
  run_local::InstallStopSignals("bisect");
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
  const bool remote = !options.coordinator.empty();
  // Where the rounds' results are read: the local system's store, or the remote
  // coordinator's (--store).
  const std::string store = remote ? options.store : run.data_dir;
  if (remote) {
    client = ClientOptions{options.coordinator, 10, options.key, options.coordinator_key};
  } else if (int started = run_local::StartLocal(*plan, run, system, client, agents);
             started != kExitOk) {
    return started;
  }
  const std::string experiment = plan->spec.name;
  const int max_rounds = plan->spec.bisect->max_rounds;
  Result<report::BisectReport> measured = InvalidArgument("no round ran");
  for (int round = 1;; ++round) {
    std::cout << "orch bisect: round " << round << " of at most " << max_rounds << ", "
              << RoundCells(*plan, round) << std::endl;
    const std::string plan_json = planner::PlanToJson(*plan);
    int driven = remote ? run_local::DriveRemote(client, experiment, plan_json, run)
                        : run_local::Drive(system, client, experiment, plan_json, run, agents);
    if (driven != kExitOk) return driven;
    measured = Measure(store, experiment);
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
    if (!NextRound(*plan, verdict, round + 1, run.spec)) {
      return run_local::Fail("round " + std::to_string(round + 1) + " cannot be planned",
                             kExitError);
    }
  }
  system.Stop();
  progress.Restore();
  return PrintResult(options, experiment, *measured);
}

// Writes `text` to `path` unless the file holds it already; a file that holds something
// else (an edited spec) is left alone and is an error.
Status WriteSpec(const fs::path& path, const std::string& text) {
  std::error_code ec;
  if (fs::exists(path, ec)) {
    Result<std::string> old = ReadFile(path.string());
    if (old.ok() && *old == text) return Status::Ok();
    return InvalidArgument(path.string() +
                           " exists and differs from the spec A and B give: run orch bisect " +
                           path.string() + " to use it as it is, or remove it");
  }
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return IoError("cannot write " + path.string());
  return Status::Ok();
}

int RunStoredBisect(BisectOptions& options) {
  const std::string& a = options.what[0];
  const std::string& b = options.what[1];
  StoredBisectOptions stored{options.store.empty() ? options.run.data_dir : options.store,
                             options.name, options.tolerance, options.max_rounds};
  Result<StoredBisect> prepared = PrepareStoredBisect(a, b, stored);
  if (!prepared.ok()) {
    std::cerr << "orch bisect: " << prepared.status().message() << "\n";
    return prepared.status().code() == StatusCode::kInvalidArgument ||
                   prepared.status().code() == StatusCode::kNotFound
               ? kExitInvalidInput
               : kExitError;
  }
  if (prepared->origin.same_coordinate) {
    // Nothing to switch: the two runs and their hosts are the whole answer.
    const report::BisectOrigin& origin = prepared->origin;
    std::cout << (options.json ? report::RenderOriginJson(origin)
                               : report::RenderOriginText(origin, std::nullopt));
    const bool same = origin.compared.note.empty() && origin.compared.same_stream;
    return same ? kExitOk : kExitError;
  }
  Result<std::string> text = planner::BisectSpecText(prepared->source);
  if (!text.ok()) {
    std::cerr << "orch bisect: " << text.status().message() << "\n";
    return kExitInvalidInput;
  }
  fs::path spec = fs::path(options.run.data_dir) / (prepared->source.name + ".toml");
  if (Status written = WriteSpec(spec, *text); !written.ok()) {
    std::cerr << "orch bisect: " << written.message() << "\n";
    return kExitInvalidInput;
  }
  options.run.spec = spec.string();
  // orch wrote the spec: the model files it names are where A's spec had them.
  options.run.allow_outside_spec_dir = true;
  options.run.resume = spec.string() + " --allow-outside-spec-dir";
  options.origin = prepared->origin;
  std::ostream& progress = options.json ? std::cerr : std::cout;
  progress << "orch bisect: the spec of this bisection is " << spec.string()
           << " (orch plan shows its walk; orch bisect " << options.run.resume << " --data-dir "
           << options.run.data_dir << " runs it as it is)" << std::endl;
  if (options.plan_only) {
    Result<planner::Plan> plan = run_local::PlanOrReport(options.run);
    if (!plan.ok()) return kExitInvalidInput;
    std::cout << (options.json ? planner::PlanToJson(*plan) + "\n" : FormatPlanText(*plan));
    return kExitOk;
  }
  return RunBisect(options);
}

int Bisect(BisectOptions& options) {
  const bool stored_form = options.what.size() == 2;
  if (!options.coordinator.empty() && options.store.empty()) {
    std::cerr << "orch bisect: --coordinator needs --store DIR, the coordinator's data "
                 "directory, where each round's results are read (docs/bisect.md)\n";
    return kExitInvalidInput;
  }
  if (!stored_form) {
    for (const auto& [flag, given] :
         {std::pair<const char*, bool>{"--store",
                                       !options.store.empty() && options.coordinator.empty()},
          {"--name", !options.name.empty()},
          {"--tolerance", options.tolerance != 0.05},
          {"--max-rounds", options.max_rounds != 4},
          {"--plan", options.plan_only}}) {
      if (given) {
        std::cerr << "orch bisect: " << flag
                  << " is for orch bisect A B; a spec sets its bisection in [bisect]\n";
        return kExitInvalidInput;
      }
    }
    options.run.spec = options.what[0];
    return RunBisect(options);
  }
  return RunStoredBisect(options);
}

}  // namespace

void RegisterBisectCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<BisectOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "bisect",
      "From two setups that disagree to the change that explains it (docs/bisect.md).\n"
      "orch bisect SPEC runs a spec with [bisect]; orch bisect A B starts from two runs or\n"
      "jobs of the store (run ids, job ids or a job id's first 6+ characters, as orch\n"
      "history prints them), writes their bisection's spec into --data-dir and runs it. On\n"
      "this machine like orch run, round by round (each axis alone from `from`, each left\n"
      "out of `to`, the walk; then sets of the axes that moved), until a set is sufficient\n"
      "and necessary within the tolerance. Ctrl-C stops it; running it again on the same\n"
      "--data-dir resumes. Exit status: 0 explained (or from and to agree), 1 not explained\n"
      "or a job failed, 2 invalid spec or arguments, 128+N stopped by signal N.");
  cmd->add_option("SPEC_OR_A_B", options->what,
                  "a spec with [bisect], or two run or job ids of the store (A B)")
      ->required()
      ->expected(1, 2);
  run_local::AddLocalOptions(*cmd, options->run);
  cmd->add_flag(
      "--json", options->json,
      "print the result as JSON (schema orch.bisect/1); the rounds' progress goes to stderr");
  cmd->add_option("--store", options->store,
                  "DIR: the data directory that holds A and B (default: --data-dir), and with "
                  "--coordinator the coordinator's, where each round's results are read");
  cmd->add_option("--name", options->name,
                  "A B: the bisection's experiment name (default bisect-A12-B12)");
  cmd->add_option("--tolerance", options->tolerance,
                  "A B: the share of KLD(B, A) a set may leave unexplained (default 0.05)")
      ->check(CLI::Range(0.0, 0.999999));
  cmd->add_option("--max-rounds", options->max_rounds, "A B: rounds at most (default 4, 1..20)")
      ->check(CLI::Range(1, 20));
  cmd->add_option("--coordinator", options->coordinator,
                  "ENDPOINT: submit each round to this coordinator instead of starting one "
                  "with local agents; needs --store, its data directory, readable here");
  cmd->add_option("--key", options->key,
                  "FILE: with --coordinator, your secret key (orch keygen), for a coordinator "
                  "with keys");
  cmd->add_option("--coordinator-key", options->coordinator_key,
                  "FILE: with --coordinator, the coordinator's public key");
  cmd->add_flag("--plan", options->plan_only,
                "A B: write the spec and print its first round as orch plan does; run nothing");
  cmd->callback([options, &exit_code] { exit_code = Bisect(*options); });
}

}  // namespace orch::cli
