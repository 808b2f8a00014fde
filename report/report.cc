#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/attribution.h"
#include "report/fingerprint_pairs.h"
#include "report/job_runs.h"
#include "report/task_catalog.h"

namespace orch::report {
namespace {

// What one planned job contributes: a finished complete run, nothing yet, or a failure.
struct JobOutcome {
  enum Kind { kDone, kInProgress, kFailed } kind = kInProgress;
  const store::RunRecord* run = nullptr;  // kDone only; borrowed from the input
  std::string reason;                     // kFailed only
};

bool Terminal(store::JobState state) {
  return state == store::JobState::kSucceeded || state == store::JobState::kFailed ||
         state == store::JobState::kCancelled;
}

std::string FailureReason(const store::JobRecord& job,
                          const std::vector<const store::RunRecord*>& runs) {
  if (!job.last_error.empty()) return job.last_error;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (!(*it)->error.empty()) return (*it)->error;
  }
  return "job " + std::string(store::JobStateName(job.state));
}

// Resolves planned jobs against the input's job and run records.
class Experiment {
 public:
  explicit Experiment(const ExperimentInput& input) : index_(input.jobs, input.runs) {}

  JobOutcome Resolve(const std::string& job_id) const {
    const store::JobRecord* job = index_.Job(job_id);
    if (job == nullptr) return {};
    if (const store::RunRecord* chosen = index_.Chosen(job_id)) {
      return {JobOutcome::kDone, chosen, ""};
    }
    if (Terminal(job->state)) {
      return {JobOutcome::kFailed, nullptr, FailureReason(*job, index_.Runs(job_id))};
    }
    return {};
  }

  std::vector<const store::RunRecord*> UsableRuns(const std::string& job_id) const {
    return index_.UsableRuns(job_id);
  }

 private:
  JobRuns index_;
};

// The runs of one cell and workload, by repeat.
struct CellRuns {
  int planned = 0;
  int failed = 0;
  int in_progress = 0;
  std::string first_failure;
  std::vector<const store::RunRecord*> done;  // by repeat index
  std::vector<int> done_repeats;              // the plan's repeat of each of done
};

Token MakeToken(std::int32_t id, const ReportOptions& options) {
  Token token{id, std::nullopt};
  if (options.decoder != nullptr && id >= 0) token.text = options.decoder->Decode(id);
  return token;
}

double OrZero(double v) { return std::isnan(v) ? 0.0 : v; }

class Builder {
 public:
  Builder(const ExperimentInput& input, const PlanView& plan, RunSource& source,
          const ReportOptions& options)
      : input_(input),
        experiment_(input),
        plan_(plan),
        source_(source),
        options_(options),
        identities_(source) {}

  Result<Report> Build() {
    Report report;
    report.experiment = plan_.experiment;
    CountJobs(report);
    report.provenance = CollectProvenance(plan_, input_.runs, source_);
    for (const PlannedWorkload& workload : plan_.workloads) {
      // A task's per-case workloads are reported by case, in report.tasks.
      if (!workload.task) report.workloads.push_back(BuildWorkload(workload));
    }
    RankAxes(report);
    ORCH_RETURN_IF_ERROR(BuildTasks(report));
    return report;
  }

 private:
  Status BuildTasks(Report& report) {
    if (plan_.tasks.empty()) return Status();
    std::unique_ptr<TaskCatalog> own;
    const TaskCatalog* catalog = options_.tasks;
    if (catalog == nullptr) {
      ORCH_ASSIGN_OR_RETURN(own, MakePlanTaskCatalog(plan_));
      catalog = own.get();
    }
    auto resolve = [this](const std::string& job_id) {
      JobOutcome outcome = experiment_.Resolve(job_id);
      TaskJobState state{TaskJobState::kInProgress, outcome.run, outcome.reason};
      if (outcome.kind == JobOutcome::kDone) state.kind = TaskJobState::kDone;
      if (outcome.kind == JobOutcome::kFailed) state.kind = TaskJobState::kFailed;
      return state;
    };
    ORCH_ASSIGN_OR_RETURN(report.tasks, BuildTaskReports(plan_, resolve, source_, *catalog));
    report.by_outcome_changes = RankAxesByOutcome(report.tasks);
    return Status();
  }

  void CountJobs(Report& report) const {
    for (const PlannedJob& job : plan_.jobs) {
      ++report.jobs_total;
      JobOutcome outcome = experiment_.Resolve(job.id);
      if (outcome.kind == JobOutcome::kDone) ++report.jobs_succeeded;
      if (outcome.kind == JobOutcome::kFailed) ++report.jobs_failed;
      if (outcome.kind == JobOutcome::kInProgress) ++report.jobs_in_progress;
    }
    report.partial = report.jobs_in_progress > 0;
  }

  std::map<int, const PlannedJob*> JobsOf(const std::string& cell,
                                          const std::string& workload) const {
    std::map<int, const PlannedJob*> by_repeat;
    for (const PlannedJob& job : plan_.jobs) {
      if (job.cell == cell && job.workload == workload) by_repeat[job.repeat] = &job;
    }
    return by_repeat;
  }

  CellRuns Gather(const std::string& cell, const std::string& workload) const {
    CellRuns runs;
    for (const auto& [repeat, job] : JobsOf(cell, workload)) {
      ++runs.planned;
      JobOutcome outcome = experiment_.Resolve(job->id);
      if (outcome.kind == JobOutcome::kDone) {
        runs.done.push_back(outcome.run);
        runs.done_repeats.push_back(repeat);
      }
      if (outcome.kind == JobOutcome::kInProgress) ++runs.in_progress;
      if (outcome.kind == JobOutcome::kFailed) {
        if (runs.failed++ == 0) runs.first_failure = outcome.reason;
      }
    }
    return runs;
  }

  // The baseline's own extent and warnings; false (status kError) when its run is unreadable.
  bool MeasureBaseline(const store::RunRecord& run, const PlannedWorkload& workload,
                       CellReport& baseline) {
    baseline.reference_run = run.id;
    Result<RunExtent> extent = MeasureRun(source_, run.id, run.summary);
    if (!extent.ok()) {
      baseline.status = CellStatus::kError;
      baseline.reason = extent.status().message();
      return false;
    }
    baseline.extent = *extent;
    baseline.warnings = RunWarnings(workload, "baseline run", baseline.extent);
    baseline.effective = ParseEffective(run.summary);
    if (workload.kind == WorkloadKind::kGenerate) {
      baseline.generation.reference_text = GeneratedTextOf(run.summary, options_.decoder);
    }
    baseline.effective_differences =
        EffectiveDifferences(CellCoordinate(plan_.baseline, "", ""), baseline.effective);
    return true;
  }

  // Fills status, reason and repeatability; false when the cell has no usable run.
  bool Prepare(const CellRuns& runs, const PlannedWorkload& workload, CellReport& cell) {
    cell.repeats.planned = runs.planned;
    cell.requested =
        workload.kind == WorkloadKind::kGenerate ? workload.max_tokens : workload.positions;
    if (runs.done.empty()) {
      if (runs.in_progress > 0) {
        cell.status = CellStatus::kInProgress;
        cell.reason = std::to_string(runs.in_progress) + " of " + std::to_string(runs.planned) +
                      " runs not finished";
      } else {
        cell.status = CellStatus::kFailed;
        cell.reason = "all " + std::to_string(runs.planned) +
                      (runs.planned == 1 ? " run failed: " : " runs failed: ") + runs.first_failure;
      }
      return false;
    }
    Status status = Repeats(runs, workload, cell.repeats);
    if (!status.ok()) {
      cell.status = CellStatus::kError;
      cell.reason = status.message();
      return false;
    }
    cell.status = CellStatus::kCompared;
    return true;
  }

  Status Repeats(const CellRuns& runs, const PlannedWorkload& workload, Repeatability& out) {
    out.available = static_cast<int>(runs.done.size());
    out.unique_streams = 1;
    for (const store::RunRecord* run : runs.done) out.run_ids.push_back(run->id);
    out.run_repeats = runs.done_repeats;
    std::set<std::uint64_t> hashes;
    PairOptions options{workload.kind == WorkloadKind::kGenerate};
    for (std::size_t i = 1; i < runs.done.size(); ++i) {
      ORCH_ASSIGN_OR_RETURN(PairResult r,
                            ComparePair(source_, runs.done[0]->id, runs.done[i]->id, options));
      hashes.insert(r.reference_hash);
      hashes.insert(r.other_hash);
      if (!r.bit_identical()) {
        std::uint64_t at = r.summary.first_divergence.value_or(r.summary.compared);
        out.first_difference = std::min(out.first_difference.value_or(at), at);
      }
      out.noise = std::max(out.noise, OrZero(r.summary.max_abs_top1_logit_delta));
      out.returned_top_k = out.returned_top_k || r.returned_top_k.any();
      if (workload.kind == WorkloadKind::kGenerate) {
        out.generated_length = r.reference_generated;
        out.generated_common_prefix =
            std::min(out.generated_common_prefix.value_or(r.generated_common_prefix),
                     r.generated_common_prefix);
      }
    }
    if (!hashes.empty()) out.unique_streams = static_cast<int>(hashes.size());
    return Status();
  }

  WorkloadReport BuildWorkload(const PlannedWorkload& workload) {
    WorkloadReport out;
    out.workload = workload;
    const PlannedCell* baseline_cell = nullptr;
    for (const PlannedCell& c : plan_.cells) {
      if (c.is_baseline()) baseline_cell = &c;
    }
    out.baseline.cell =
        baseline_cell != nullptr ? *baseline_cell : PlannedCell{"baseline", "", "", {}, 0};
    CellRuns baseline_runs = Gather(out.baseline.cell.label, workload.name);
    bool has_baseline = Prepare(baseline_runs, workload, out.baseline);
    Tally(workload, out.baseline);
    if (has_baseline)
      has_baseline = MeasureBaseline(*baseline_runs.done[0], workload, out.baseline);
    for (const PlannedCell& c : plan_.cells) {
      if (c.is_baseline()) continue;
      CellRuns runs = Gather(c.label, workload.name);
      if (runs.planned == 0) continue;  // the axis does not apply to this workload
      CellReport cell;
      cell.cell = c;
      const bool prepared = Prepare(runs, workload, cell);
      Tally(workload, cell);
      if (!prepared) {
        out.cells.push_back(std::move(cell));
        continue;
      }
      if (!has_baseline) {
        cell.status = CellStatus::kNoBaseline;
        cell.reason = "baseline: " + out.baseline.reason;
      } else {
        CompareCell(*baseline_runs.done[0], *runs.done[0], out.baseline, workload, cell);
      }
      out.cells.push_back(std::move(cell));
    }
    return out;
  }

  void CompareCell(const store::RunRecord& reference, const store::RunRecord& other,
                   const CellReport& baseline, const PlannedWorkload& workload, CellReport& cell) {
    cell.reference_run = reference.id;
    cell.reference_repeat = 0;
    cell.other_run = other.id;
    PairOptions options{workload.kind == WorkloadKind::kGenerate};
    Result<PairResult> result = ComparePair(source_, reference.id, other.id, options);
    if (!result.ok()) {
      cell.status = CellStatus::kError;
      cell.reason = result.status().message();
      return;
    }
    cell.result = std::move(*result);
    ClassifyFlips(baseline, cell);
    DecodeFlips(cell);
    Warn(other, baseline, workload, cell);
    if (const auto& d = cell.result.first_token_difference) {
      cell.generated_reference = MakeToken(d->reference_token, options_);
      cell.generated_other = MakeToken(d->other_token, options_);
    }
    cell.fingerprints = CompareFingerprints(source_, reference, other);
    Effective(other, baseline, cell);
    if (workload.kind == WorkloadKind::kGenerate) Generation(reference, other, baseline, cell);
  }

  // Along the common prefix, the first divergence against the baseline's repeat noise.
  void Generation(const store::RunRecord& reference, const store::RunRecord& other,
                  const CellReport& baseline, CellReport& cell) const {
    GenerationNoiseBand noise;
    noise.repeats = baseline.repeats.available;
    noise.available = noise.repeats > 1;
    if (noise.available) noise.band = baseline.repeats.noise;
    cell.generation = DescribeGeneration(cell.result, noise);
    cell.generation.reference_text = GeneratedTextOf(reference.summary, options_.decoder);
    cell.generation.other_text = GeneratedTextOf(other.summary, options_.decoder);
  }

  // The cell's effective settings against its coordinate, and against the baseline's.
  void Effective(const store::RunRecord& other, const CellReport& baseline,
                 CellReport& cell) const {
    const std::string& axis = cell.cell.axis;
    cell.effective = ParseEffective(other.summary);
    auto requested = CellCoordinate(plan_.baseline, axis, cell.cell.value);
    // A bisection's combination changes several axes at once.
    for (const auto& [name, value] : cell.cell.changes)
      requested = CellCoordinate(requested, name, value);
    cell.effective_differences = EffectiveDifferences(requested, cell.effective);
    if (!SameEffective(baseline.effective, cell.effective, axis)) return;
    cell.same_effective_as_baseline = true;
    std::string ran_as =
        RanAsText(axis, baseline.effective_differences, cell.effective_differences);
    if (ran_as.empty()) ran_as = axis + " ran as " + cell.effective.axes.at(axis) + " in both";
    cell.effective_note = "ran the same effective configuration as baseline: " + ran_as;
    if (!cell.result.bit_identical()) {
      cell.effective_note += "; the streams still differ, not because of " + axis;
    }
  }

  void DecodeFlips(CellReport& cell) const {
    for (const Flip& flip : cell.result.flips) {
      FlipTokens tokens{
          MakeToken(flip.reference_token, options_), MakeToken(flip.other_token, options_), {}};
      for (std::int32_t id : flip.context) tokens.context.push_back(MakeToken(id, options_));
      cell.flip_tokens.push_back(std::move(tokens));
    }
    if (cell.flip_tokens.empty()) return;
    cell.first_flip_reference = cell.flip_tokens[0].reference;
    cell.first_flip_other = cell.flip_tokens[0].other;
  }

  // The cell run's extent (from the comparison) and the warnings of both sides.
  static void Warn(const store::RunRecord& other, const CellReport& baseline,
                   const PlannedWorkload& workload, CellReport& cell) {
    const PairResult& r = cell.result;
    cell.extent = {r.summary.other_length, r.other_generated, ParseGenerationStop(other.summary)};
    if (auto compared = ComparedWarning(workload, r.summary)) {
      cell.warnings.push_back(*compared);
    }
    if (workload.kind != WorkloadKind::kGenerate) return;
    auto add = [&cell](const std::vector<Warning>& more) {
      cell.warnings.insert(cell.warnings.end(), more.begin(), more.end());
    };
    add(RunWarnings(workload, "baseline run", baseline.extent));
    add(RunWarnings(workload, "cell run", cell.extent));
  }

  static void ClassifyFlips(const CellReport& baseline, CellReport& cell) {
    cell.repeat_noise = std::max(baseline.repeats.noise, cell.repeats.noise);
    cell.perturbation = OrZero(cell.result.summary.mean_abs_top1_logit_delta);
    cell.noise_band = std::max(cell.repeat_noise, cell.perturbation);
    for (Flip& flip : cell.result.flips) {
      flip.near_tie = !std::isnan(flip.margin) && flip.margin <= cell.noise_band;
      if (flip.near_tie) ++cell.near_tie_flips;
    }
  }

  // Quorum and conflicts over every usable run of the cell's jobs; a run whose stream
  // cannot be read is counted as unreadable, not as an error of the report.
  void Tally(const PlannedWorkload& workload, CellReport& cell) {
    std::vector<CellRun> runs;
    int unreadable = 0;
    for (const auto& [repeat, job] : JobsOf(cell.cell.label, workload.name)) {
      for (const store::RunRecord* run : experiment_.UsableRuns(job->id)) {
        Result<StreamIdentity> stream = ScanStreamIdentity(source_, run->id);
        if (!stream.ok()) {
          ++unreadable;
          continue;
        }
        runs.push_back({identities_.Of(*run), repeat, *stream});
      }
    }
    const std::vector<std::string>& chosen = cell.repeats.run_ids;
    cell.quorum = BuildQuorum(runs, chosen.empty() ? "" : chosen.front());
    cell.quorum.unreadable = unreadable;
    cell.conflicts = FindConflicts(runs);
    PairOptions options{workload.kind == WorkloadKind::kGenerate};
    for (Conflict& conflict : cell.conflicts) {
      Result<PairResult> r = ComparePair(source_, conflict.a.run_id, conflict.b.run_id, options);
      if (!r.ok()) continue;
      conflict.first_difference = r->summary.first_divergence.value_or(r->summary.compared);
    }
  }

  const ExperimentInput& input_;
  Experiment experiment_;
  const PlanView& plan_;
  RunSource& source_;
  const ReportOptions& options_;
  RunIdentities identities_;
};

}  // namespace

std::string_view CellStatusName(CellStatus status) {
  switch (status) {
    case CellStatus::kCompared:
      return "compared";
    case CellStatus::kFailed:
      return "failed";
    case CellStatus::kInProgress:
      return "in_progress";
    case CellStatus::kNoBaseline:
      return "no_baseline";
    case CellStatus::kError:
      return "error";
  }
  return "unknown";
}

Result<Report> BuildReport(const ExperimentInput& input, RunSource& source,
                           const ReportOptions& options) {
  Result<PlanView> plan = ParsePlanView(input.plan.json);
  if (!plan.ok()) return plan.status().WithContext("experiment " + input.plan.experiment);
  ORCH_ASSIGN_OR_RETURN(Report report, Builder(input, *plan, source, options).Build());
  JobRuns runs(input.jobs, input.runs);
  ORCH_ASSIGN_OR_RETURN(report.bisect, BuildBisectReport(*plan, runs, source));
  if (report.bisect) AddTaskOutcomes(*report.bisect, report.tasks);
  return report;
}

Result<ExperimentInput> LoadExperiment(store::Store& store, std::string_view experiment) {
  ExperimentInput input;
  Result<store::PlanRecord> plan = store.GetPlan(experiment);
  if (!plan.ok()) {
    if (plan.status().code() == StatusCode::kNotFound) {
      return NotFound("experiment \"" + std::string(experiment) +
                      "\" not found: no plan of that name was submitted to this store");
    }
    return plan.status().WithContext("load experiment " + std::string(experiment));
  }
  input.plan = std::move(*plan);
  ORCH_ASSIGN_OR_RETURN(input.jobs, store.ListJobs(experiment));
  std::set<std::string, std::less<>> job_ids;
  for (const store::JobRecord& job : input.jobs) job_ids.insert(job.id);
  // Only this experiment's runs are decoded: damage elsewhere does not fail its report.
  ORCH_ASSIGN_OR_RETURN(input.runs, store.ListRunsOfJobs(job_ids));
  return input;
}

}  // namespace orch::report
