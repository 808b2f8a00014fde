// The bisection of an experiment whose plan has one (docs/bisect.md): every cell measured
// against from and against to over every workload, each cell's own repeat noise where it
// has two repeats, and bisect::Attribute's verdict on them.
//
// A cell's distance to an end is the mean KLD per position over all its workloads (each
// position weighs the same), with the flips and positions it rests on, compared like the
// report compares a cell with its baseline (report/pair_compare.h; generate workloads
// while both sides generated the same tokens). Each side is a job's chosen run
// (report/job_runs.h), repeat 0 where it has one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bisect/bisect.h"
#include "report/job_runs.h"
#include "report/plan_view.h"
#include "report/run_source.h"
#include "report/task_report.h"

namespace orch::report {

struct BisectCellReport {
  std::string label;
  bisect::AxisSet set = 0;
  int round = 0;
  bisect::CellMeasure measure;
  // Why a comparison is missing ("no finished run of workload text"); empty when none is.
  std::string missing;
};

// A cell's task outcomes on one task workload (report/task_report.h), against from.
struct BisectTaskRow {
  std::string cell;
  std::string workload;  // the task workload
  std::string status;    // TaskCellReport::status
  int cases = 0;         // cases with an outcome
  int cases_planned = 0;
  Estimate pass_rate = {};     // over every repeat of every case, Wilson
  std::uint64_t changed = 0;   // cases whose outcome differs from from's (none for from)
  std::uint64_t near_tie = 0;  // of those, after a near-tie
  std::uint64_t broken = 0, fixed = 0;
};

struct BisectReport {
  PlannedBisect plan;
  int rounds = 0;                       // the highest round of the plan's cells
  std::vector<std::string> workloads;   // what the distances rest on
  std::vector<BisectCellReport> cells;  // in plan order; from first
  bisect::Verdict verdict;
  // Task workloads' outcomes per cell, from first, then each cell in plan order; empty
  // when the plan has no task workload. The verdict rests on KLD; these say what the
  // divergence does to the task.
  std::vector<BisectTaskRow> tasks = {};
};

// Nullopt for a plan without a bisection. Errors: the source's, and runs that are not
// comparable (vocabulary sizes differ), naming the cells.
Result<std::optional<BisectReport>> BuildBisectReport(const PlanView& plan, const JobRuns& runs,
                                                      RunSource& source);

// Fills report.tasks from the task reports of the same experiment (the baseline is from).
void AddTaskOutcomes(BisectReport& report, const std::vector<TaskWorkloadReport>& tasks);

// KLD(to, from), or nullopt while the verdict is unmeasured.
std::optional<double> MeasuredTotal(const BisectReport& report);

// The measures of a report's cells, keyed by set, as bisect::Attribute takes them.
bisect::Measures MeasuresOf(const BisectReport& report);

}  // namespace orch::report
