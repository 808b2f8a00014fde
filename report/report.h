// The report of one experiment: per workload, the baseline's repeatability, every cell
// against the baseline's first repeat, generated-token prefixes, fingerprint differences,
// and the axes ranked by how far they moved the distribution. docs/report.md defines each
// field and the near-tie and cluster rules.
//
// BuildReport is the pure core: plan, job and run records in, a Report out, reading runs
// only through a RunSource. LoadExperiment gathers its input from a Store.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fingerprint/diff.h"
#include "report/bisect_report.h"
#include "report/effective.h"
#include "report/generation.h"
#include "report/pair_compare.h"
#include "report/plan_view.h"
#include "report/provenance.h"
#include "report/quorum.h"
#include "report/run_extent.h"
#include "report/run_source.h"
#include "report/task_cases.h"
#include "report/task_report.h"
#include "report/warnings.h"
#include "store/records.h"
#include "store/store.h"

namespace orch::report {

// The hook for showing token text next to token ids. No implementation is required: a
// report without one shows ids only.
class TokenDecoder {
 public:
  virtual ~TokenDecoder() = default;
  // The token's text, or nullopt when unknown.
  virtual std::optional<std::string> Decode(std::int32_t token) const = 0;
};

struct ExperimentInput {
  store::PlanRecord plan;
  std::vector<store::JobRecord> jobs;  // the experiment's jobs
  std::vector<store::RunRecord> runs;  // at least the runs of those jobs; others ignored
};

struct ReportOptions {
  const TokenDecoder* decoder = nullptr;  // borrowed for BuildReport; may be null
  // Evaluates the checks of the plan's task workloads; null: the cases and checks the
  // plan holds (report/task_catalog.h). Borrowed for BuildReport.
  const TaskCatalog* tasks = nullptr;
};

// A token id with its text when a decoder knew it.
struct Token {
  std::int32_t id = -1;
  std::optional<std::string> text;
};

// Repeatability of one cell's repeats of one workload.
struct Repeatability {
  int planned = 0;         // repeats in the plan
  int available = 0;       // repeats with a finished, complete run
  int unique_streams = 0;  // distinct digest streams among the available runs
  bool bit_identical() const { return available > 0 && unique_streams == 1; }
  // Against repeat 0: the smallest first differing position over the other repeats.
  std::optional<std::uint64_t> first_difference;
  // Generate workloads: the shortest generated-token common prefix with repeat 0.
  std::optional<std::uint64_t> generated_common_prefix;
  std::optional<std::uint64_t> generated_length;  // of repeat 0
  // Largest |Δlogit at top-1| between repeat 0 and another repeat (0 when identical).
  double noise = 0.0;
  // The repeats' streams are top-k-only rows: identity is of the returned values.
  bool returned_top_k = false;
  std::vector<std::string> run_ids;  // by repeat index, available runs only
  std::vector<int> run_repeats;      // the plan's repeat index of each of run_ids
};

// The tokens of one listed flip (report/pair_compare.h Flip), decoded.
struct FlipTokens {
  Token reference;
  Token other;
  std::vector<Token> context;  // the reference's input tokens up to the flip, oldest first
};

enum class CellStatus { kCompared, kFailed, kInProgress, kNoBaseline, kError };
std::string_view CellStatusName(CellStatus status);

struct FingerprintComparison {
  std::string kind;  // "host" or "engine"
  std::string reference_id;
  std::string other_id;
  bool same = false;  // equal ids
  std::vector<fingerprint::FieldDifference> differences;
  std::string note;  // why no diff could be made (unknown id, unreadable JSON); else empty
};

struct CellReport {
  PlannedCell cell;
  CellStatus status = CellStatus::kInProgress;
  std::string reason;         // failure or error text; empty when compared
  std::string reference_run;  // the baseline run compared against
  int reference_repeat = 0;   // which baseline repeat that is (always the first available)
  std::string other_run;      // this cell's first available repeat
  PairResult result;
  Repeatability repeats;
  // Near-tie rule inputs (docs/report.md): the repeat noise of baseline and cell, the
  // cell's mean |Δlogit at top-1|, and the band, their maximum.
  double repeat_noise = 0.0;
  double perturbation = 0.0;
  double noise_band = 0.0;
  std::uint64_t near_tie_flips = 0;  // among the listed flips
  std::optional<Token> first_flip_reference, first_flip_other;
  std::optional<Token> generated_reference, generated_other;  // first differing pair
  std::vector<FlipTokens> flip_tokens;                        // one per listed flip (result.flips)
  std::vector<FingerprintComparison> fingerprints;
  // What the plan requested of this workload (positions or max_tokens), how far this
  // cell's run got, and the warnings of report/warnings.h (both sides' for a cell).
  std::optional<std::uint64_t> requested;
  RunExtent extent;
  std::vector<Warning> warnings;
  // Over every usable run of the cell's jobs, not only the one per job compared above:
  // the largest group of bit-identical streams, and the same-class runs of one job that
  // disagree (report/quorum.h).
  Quorum quorum = {};
  std::vector<Conflict> conflicts = {};
  // What the engine ran (report/effective.h): the effective settings of the cell's
  // compared run (the baseline's: of its reference run), the axes where they differ from
  // the cell's coordinate, and whether the cell ran the baseline's effective configuration,
  // with the note that says so ("ran the same effective configuration as baseline: kv f32
  // ran as f16 under flash attention"). Such a cell is not a finding of its axis.
  EffectiveSettings effective = {};
  std::vector<EffectiveDifference> effective_differences = {};
  bool same_effective_as_baseline = false;
  std::string effective_note = {};
  // Generate workloads (report/generation.h): what the figures rest on, how the sequences
  // first diverged, and the generated texts. The baseline's holds its own text only
  // (reference_text; applies is false).
  GenerationDetail generation = {};
};

struct WorkloadReport {
  PlannedWorkload workload;
  CellReport baseline;            // status and repeatability of the baseline itself
  std::vector<CellReport> cells;  // the other cells in plan order, failed ones included
};

struct AxisRank {
  std::string axis;
  std::string cell;
  std::string workload;
  // The cell's KLD mean that rests on the most positions (report/kld_figure.h: exact when
  // it has at least as many positions as the bound, else bound); in
  // Report::by_kld_returned_top_k, its returned top-k mean.
  double kld_mean = std::numeric_limits<double>::quiet_NaN();
  // "exact", "bound", or "returned top-k (K=..)": which one kld_mean is.
  std::string kld_method;
  double top1_disagreement = std::numeric_limits<double>::quiet_NaN();
  // Positions with an exact KLD among the compared ones (ExactCoverage).
  std::uint64_t exact_positions = 0;
  std::uint64_t compared_positions = 0;
  // The positions each figure rests on and its 95% interval (report/intervals.h): KLD by
  // block bootstrap, disagreement (the flip rate) by Wilson.
  std::uint64_t kld_n = 0;
  Interval kld_ci95;
  std::uint64_t top1_n = 0;
  Interval top1_ci95;
  // In a ranked list, when this axis's interval overlaps the one ranked just above it:
  // "not separable from AXIS at n=N vs M"; else empty (docs/report.md).
  std::string kld_separability;
  std::string top1_separability;
};

struct Report {
  std::string experiment;
  bool partial = false;  // some jobs have not finished
  int jobs_total = 0;
  int jobs_succeeded = 0;
  int jobs_failed = 0;
  int jobs_in_progress = 0;
  Provenance provenance;
  std::vector<WorkloadReport> workloads;
  // Teacher-forced workloads; one entry per axis (its strongest cell), strongest first.
  // by_kld ranks full-row KLDs (exact or bound); KLDs on the returned top-k basis are a
  // different measurement and are ranked apart, in by_kld_returned_top_k.
  std::vector<AxisRank> by_kld;
  std::vector<AxisRank> by_kld_returned_top_k;
  std::vector<AxisRank> by_top1;
  // Task workloads (report/task_report.h), in plan order; their per-case workloads are not
  // in `workloads`. Axes ranked by how many task outcomes they changed, strongest first.
  std::vector<TaskWorkloadReport> tasks;
  std::vector<OutcomeRank> by_outcome_changes;
  // A bisection's plan (docs/bisect.md): every cell against from and to, and the verdict.
  std::optional<BisectReport> bisect;
};

// Errors: InvalidArgument for an unreadable plan, and the source's errors. A cell whose
// runs are not comparable is reported with status kError, not as an error.
Result<Report> BuildReport(const ExperimentInput& input, RunSource& source,
                           const ReportOptions& options);

// The plan, jobs and runs of `experiment` from `store`. NotFound with a clear message
// when no experiment of that name was submitted.
Result<ExperimentInput> LoadExperiment(store::Store& store, std::string_view experiment);

}  // namespace orch::report
