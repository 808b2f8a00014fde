#include "report/task_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/pair_compare.h"
#include "report/task_run.h"

namespace orch::report {
namespace {

// cell -> case -> choice (-1: none) -> repeat -> job id
using TaskChoiceJobs = std::map<int, std::map<int, std::string>>;
using TaskJobIndex = std::map<std::string, std::map<std::string, TaskChoiceJobs>>;

// One available repeat of a case: its runs and what they say, one per choice.
struct TaskRepeatData {
  int repeat = 0;
  std::vector<const store::RunRecord*> runs;
  std::vector<TaskRunData> data;
};

// The available repeats of one case under one cell, in repeat order.
struct TaskCaseData {
  std::vector<TaskRepeatData> repeats;
  std::string missing;
};

double TaskOrZero(double v) { return std::isnan(v) ? 0.0 : v; }

// Best minus second of `values`; the index of the best (lowest on ties).
void TaskChoose(TaskCaseRun& run) {
  const std::vector<double>& v = run.logliks;
  run.chosen = static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
  double second = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (static_cast<int>(i) != run.chosen) second = std::max(second, v[i]);
  }
  run.choice_margin = v[static_cast<std::size_t>(run.chosen)] - second;
}

std::string TaskNum(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", v);
  return buffer;
}

class TaskBuilder {
 public:
  TaskBuilder(const PlanView& plan, const TaskJobResolver& resolve, RunSource& source,
              const TaskCatalog& catalog)
      : plan_(plan), resolve_(resolve), source_(source), catalog_(catalog) {}

  Result<TaskWorkloadReport> Build(const PlannedTaskWorkload& task) {
    TaskWorkloadReport out;
    out.name = task.name;
    const std::vector<TaskCaseInfo>* cases = catalog_.Cases(task.name);
    if (cases == nullptr) {
      out.error = "the cases of task workload " + task.name + " are unknown";
      return out;
    }
    cases_ = cases;
    for (const TaskCaseInfo& c : *cases) out.multiple_choice |= c.multiple_choice();
    const TaskJobIndex jobs = IndexJobs(task.name);
    baseline_data_.clear();
    baseline_noise_.clear();
    ORCH_RETURN_IF_ERROR(BuildCell(task.name, BaselineCell(), jobs, nullptr, out.baseline));
    for (const PlannedCell& c : plan_.cells) {
      if (c.is_baseline() || !jobs.contains(c.label)) continue;
      TaskCellReport cell;
      ORCH_RETURN_IF_ERROR(BuildCell(task.name, c, jobs, &out.baseline, cell));
      out.cells.push_back(std::move(cell));
    }
    return out;
  }

 private:
  PlannedCell BaselineCell() const {
    for (const PlannedCell& c : plan_.cells) {
      if (c.is_baseline()) return c;
    }
    return PlannedCell{"baseline", "", "", {}, 0};
  }

  TaskJobIndex IndexJobs(const std::string& task) const {
    std::map<std::string, const TaskCoordinate*> coordinates;
    for (const PlannedWorkload& w : plan_.workloads) {
      if (w.task && w.task->workload == task) coordinates[w.name] = &*w.task;
    }
    TaskJobIndex index;
    for (const PlannedJob& job : plan_.jobs) {
      auto it = coordinates.find(job.workload);
      if (it == coordinates.end()) continue;
      index[job.cell][it->second->case_id][it->second->choice][job.repeat] = job.id;
    }
    return index;
  }

  // The repeats of one case whose every choice has a finished run.
  Result<TaskCaseData> Gather(const TaskCaseInfo& info, const TaskChoiceJobs* jobs) {
    TaskCaseData out;
    if (jobs == nullptr) {
      out.missing = "no job planned";
      return out;
    }
    std::vector<int> choices;
    if (info.multiple_choice()) {
      for (int k = 0; k < info.choices; ++k) choices.push_back(k);
    } else {
      choices.push_back(-1);
    }
    std::set<int> repeats;
    for (const auto& [choice, by_repeat] : *jobs) {
      for (const auto& entry : by_repeat) repeats.insert(entry.first);
    }
    for (int repeat : repeats) {
      TaskRepeatData data{repeat, {}, {}};
      for (int choice : choices) {
        std::string why = JobOf(*jobs, choice, repeat, data);
        if (!why.empty()) {
          if (out.missing.empty()) out.missing = why;
          data.runs.clear();
          break;
        }
      }
      if (data.runs.empty()) continue;
      for (const store::RunRecord* run : data.runs) {
        ORCH_ASSIGN_OR_RETURN(TaskRunData d, ReadTaskRun(source_, *run));
        data.data.push_back(std::move(d));
      }
      out.repeats.push_back(std::move(data));
    }
    return out;
  }

  // Adds the run of (choice, repeat) to `data`; why not when it has none.
  std::string JobOf(const TaskChoiceJobs& jobs, int choice, int repeat, TaskRepeatData& data) {
    const std::string label = choice >= 0 ? "choice " + std::to_string(choice) + " " : "";
    auto by_repeat = jobs.find(choice);
    if (by_repeat == jobs.end() || !by_repeat->second.contains(repeat)) {
      return label + "repeat " + std::to_string(repeat) + ": no job planned";
    }
    const TaskJobState state = resolve_(by_repeat->second.at(repeat));
    if (state.kind == TaskJobState::kDone) {
      data.runs.push_back(state.run);
      return "";
    }
    if (state.kind == TaskJobState::kFailed) {
      return label + "repeat " + std::to_string(repeat) + " failed: " + state.reason;
    }
    return label + "repeat " + std::to_string(repeat) + " not finished";
  }

  // One repeat's verdict; false (with `note`) when a choice's log-likelihood is unknown.
  bool Judge(const std::string& task, const TaskCaseInfo& info, const TaskRepeatData& data,
             TaskCaseRun& run, std::string& note) const {
    run.repeat = data.repeat;
    for (const store::RunRecord* r : data.runs) run.runs.push_back(r->id);
    if (!info.multiple_choice()) {
      run.text = data.data[0].generated_text;
      TaskVerdict verdict = catalog_.Evaluate(task, info.id, run.text);
      run.pass = verdict.pass;
      run.reason = verdict.pass ? "" : verdict.reason;
      run.distance = verdict.distance;
      return true;
    }
    for (std::size_t k = 0; k < data.data.size(); ++k) {
      const TaskRunData& d = data.data[k];
      if (std::isnan(d.loglik)) {
        note = "repeat " + std::to_string(data.repeat) + " choice " + std::to_string(k) + ": " +
               (d.loglik_note.empty() ? "no continuation span in its done frame" : d.loglik_note);
        return false;
      }
      run.logliks.push_back(d.loglik);
    }
    TaskChoose(run);
    run.pass = run.chosen == info.answer;
    if (!run.pass && info.answer >= 0 && info.answer < static_cast<int>(run.logliks.size())) {
      run.reason = "chose " + std::to_string(run.chosen) + " (loglik " +
                   TaskNum(run.logliks[static_cast<std::size_t>(run.chosen)]) + "), answer " +
                   std::to_string(info.answer) + " (loglik " +
                   TaskNum(run.logliks[static_cast<std::size_t>(info.answer)]) + ")";
    }
    return true;
  }

  Status BuildCell(const std::string& task, const PlannedCell& cell, const TaskJobIndex& jobs,
                   const TaskCellReport* baseline, TaskCellReport& out) {
    out.cell = cell;
    out.cases_planned = static_cast<int>(cases_->size());
    auto cell_jobs = jobs.find(cell.label);
    double kld_sum = 0.0;
    choice_moved_sum_ = 0.0;
    choice_moved_n_ = 0;
    std::set<std::string> templates;
    for (const TaskCaseInfo& info : *cases_) {
      const TaskChoiceJobs* case_jobs = nullptr;
      if (cell_jobs != jobs.end()) {
        auto it = cell_jobs->second.find(info.id);
        if (it != cell_jobs->second.end()) case_jobs = &it->second;
      }
      ORCH_ASSIGN_OR_RETURN(TaskCaseData data, Gather(info, case_jobs));
      TaskCaseOutcome outcome;
      outcome.id = info.id;
      outcome.answer = info.answer;
      outcome.missing = data.missing;
      for (const TaskRepeatData& repeat : data.repeats) {
        for (const TaskRunData& d : repeat.data) {
          if (!d.chat_template.empty()) templates.insert(d.chat_template);
        }
        TaskCaseRun run;
        if (Judge(task, info, repeat, run, outcome.note)) outcome.runs.push_back(std::move(run));
      }
      if (outcome.has_outcome()) outcome.missing.clear();
      if (!outcome.has_outcome() && outcome.missing.empty()) outcome.missing = outcome.note;
      Tally(outcome, out);
      if (baseline == nullptr) {
        baseline_data_[info.id] = std::move(data);
      } else {
        ORCH_RETURN_IF_ERROR(Compare(info, data, *baseline, outcome, out, kld_sum));
      }
      out.outcomes.push_back(std::move(outcome));
    }
    if (baseline != nullptr && choice_moved_n_ > 0) {
      ClassifyChoices(*baseline, choice_moved_sum_ / static_cast<double>(choice_moved_n_), out);
    }
    out.chat_templates.assign(templates.begin(), templates.end());
    Finish(baseline, kld_sum, out);
    return Status();
  }

  static void Tally(const TaskCaseOutcome& outcome, TaskCellReport& out) {
    if (!outcome.has_outcome()) return;
    ++out.cases;
    out.repeats = std::max(out.repeats, static_cast<int>(outcome.runs.size()));
    out.trials += outcome.runs.size();
    out.passes += static_cast<std::uint64_t>(outcome.passes());
    for (const TaskCaseRun& run : outcome.runs) {
      if (!run.distance) continue;
      out.distance_mean = (out.distance_n == 0 ? 0.0 : out.distance_mean) + *run.distance;
      ++out.distance_n;
    }
  }

  static void Finish(const TaskCellReport* baseline, double kld_sum, TaskCellReport& out) {
    out.pass_rate = WilsonEstimate(out.passes, out.trials);
    if (out.distance_n > 0) out.distance_mean /= static_cast<double>(out.distance_n);
    if (out.kld_n > 0) out.kld_mean = kld_sum / static_cast<double>(out.kld_n);
    if (out.cases > 0) return;
    out.status = "no_runs";
    for (const TaskCaseOutcome& o : out.outcomes) {
      if (!o.missing.empty()) {
        out.reason = o.id + ": " + o.missing;
        break;
      }
    }
    if (baseline != nullptr && baseline->cases == 0) out.status = "no_baseline";
  }

  // Against the baseline: changed, unstable, the change's kind and its post-mortem, and
  // the case's share of the pooled KLD.
  Status Compare(const TaskCaseInfo& info, const TaskCaseData& data, const TaskCellReport& baseline,
                 TaskCaseOutcome& outcome, TaskCellReport& out, double& kld_sum) {
    const TaskCaseOutcome* base = nullptr;
    for (const TaskCaseOutcome& o : baseline.outcomes) {
      if (o.id == info.id) base = &o;
    }
    if (base == nullptr || !base->has_outcome() || !outcome.has_outcome()) return Status();
    const TaskCaseData& base_data = baseline_data_.at(info.id);
    const TaskRepeatData* base_first = FirstJudged(base_data, *base);
    const TaskRepeatData* cell_first = FirstJudged(data, outcome);
    ORCH_ASSIGN_OR_RETURN(double perturbation,
                          PooledKld(*base_first, *cell_first, info, out, kld_sum));
    const TaskCaseRun& b = base->runs.front();
    const TaskCaseRun& c = outcome.runs.front();
    if (info.multiple_choice()) {
      if (b.chosen != c.chosen) ++out.choice_changes;
      for (std::size_t k = 0; k < b.logliks.size() && k < c.logliks.size(); ++k) {
        choice_moved_sum_ += std::fabs(c.logliks[k] - b.logliks[k]);
        ++choice_moved_n_;
      }
    }
    outcome.baseline_unstable = !base->repeats_agree();
    outcome.changed = b.pass != c.pass;
    if (!outcome.changed) return Status();
    if (outcome.baseline_unstable) {
      ++out.unstable;
      return Status();
    }
    ++out.changed;
    ++(c.pass ? out.fixed : out.broken);
    if (info.multiple_choice()) return Status();  // classified over the task (ClassifyChoices)
    ORCH_ASSIGN_OR_RETURN(double noise, RepeatNoise(info.id, base_data, data));
    outcome.post_mortem =
        PostMortem(base_first->data[0], cell_first->data[0], std::max(noise, perturbation));
    if (outcome.post_mortem && outcome.post_mortem->index < kTaskContext) {
      outcome.post_mortem->prompt_tail = TaskPromptTail(info.prompt);
      outcome.post_mortem->prompt_cut =
          outcome.post_mortem->prompt_tail.size() < info.prompt.size();
    }
    if (!outcome.post_mortem) {
      outcome.note = "the same generated tokens: the generated texts differ elsewhere";
    }
    Classify(outcome);
    if (outcome.change == TaskChangeKind::kNearTie) ++out.near_tie;
    if (outcome.change == TaskChangeKind::kRealMargin) ++out.real_margin;
    if (outcome.change == TaskChangeKind::kUnknownMargin) ++out.unknown_margin;
    return Status();
  }

  // The repeat of `data` that the outcome's first run stands for.
  static const TaskRepeatData* FirstJudged(const TaskCaseData& data, const TaskCaseOutcome& o) {
    for (const TaskRepeatData& r : data.repeats) {
      if (r.repeat == o.runs.front().repeat) return &r;
    }
    return &data.repeats.front();
  }

  // Adds the first repeats' KLD (exact where kept, else bound) to the cell's pooled sum;
  // returns the cell's mean |Δlogit at top-1| (generate: up to the first differing token).
  Result<double> PooledKld(const TaskRepeatData& base, const TaskRepeatData& cell,
                           const TaskCaseInfo& info, TaskCellReport& out, double& kld_sum) {
    double perturbation = 0.0;
    for (std::size_t k = 0; k < base.runs.size() && k < cell.runs.size(); ++k) {
      PairOptions options{!info.multiple_choice()};
      Result<PairResult> r = ComparePair(source_, base.runs[k]->id, cell.runs[k]->id, options);
      if (!r.ok()) continue;  // not comparable: no KLD, the outcome still stands
      for (const KldSummary* kld : {&r->kld_exact, &r->kld_bound}) {
        if (kld->count == 0) continue;
        kld_sum += kld->mean * static_cast<double>(kld->count);
        out.kld_n += kld->count;
      }
      perturbation = TaskOrZero(r->summary.mean_abs_top1_logit_delta);
    }
    return perturbation;
  }

  // The largest |Δlogit at top-1| between the first repeat and another, of the baseline
  // (computed once per case) and of the cell.
  Result<double> RepeatNoise(const std::string& id, const TaskCaseData& base,
                             const TaskCaseData& cell) {
    if (!baseline_noise_.contains(id)) {
      ORCH_ASSIGN_OR_RETURN(baseline_noise_[id], NoiseOf(base));
    }
    ORCH_ASSIGN_OR_RETURN(double noise, NoiseOf(cell));
    return std::max(noise, baseline_noise_[id]);
  }

  Result<double> NoiseOf(const TaskCaseData& data) {
    double noise = 0.0;
    for (std::size_t i = 1; i < data.repeats.size(); ++i) {
      Result<PairResult> r = ComparePair(source_, data.repeats[0].runs[0]->id,
                                         data.repeats[i].runs[0]->id, PairOptions{true});
      if (!r.ok()) continue;
      noise = std::max(noise, TaskOrZero(r->summary.max_abs_top1_logit_delta));
    }
    return noise;
  }

  static std::optional<TaskPostMortem> PostMortem(const TaskRunData& base, const TaskRunData& cell,
                                                  double band) {
    const std::size_t shared = std::min(base.steps.size(), cell.steps.size());
    std::size_t i = 0;
    while (i < shared && base.steps[i].token == cell.steps[i].token) ++i;
    if (i == base.steps.size() && i == cell.steps.size()) return std::nullopt;
    TaskPostMortem p;
    p.index = i;
    const bool in_base = i < base.steps.size(), in_cell = i < cell.steps.size();
    p.position = in_base ? base.steps[i].position : cell.steps[i].position;
    if (in_base) {
      p.baseline_token = base.steps[i].token;
      p.baseline_text = TaskTokenText(base, p.baseline_token);
      p.baseline_margin = base.steps[i].margin;
    }
    if (in_cell) {
      p.cell_token = cell.steps[i].token;
      p.cell_text = TaskTokenText(cell, p.cell_token);
      p.cell_margin = cell.steps[i].margin;
    }
    for (std::size_t k = i > kTaskContext ? i - kTaskContext : 0; k < i; ++k) {
      p.context.push_back(base.steps[k].token);
      p.context_text.push_back(TaskTokenText(base, base.steps[k].token));
    }
    p.noise_band = band;
    p.near_tie = !std::isnan(p.baseline_margin) && p.baseline_margin <= band;
    return p;
  }

  static void Classify(TaskCaseOutcome& outcome) {
    if (!outcome.post_mortem || std::isnan(outcome.post_mortem->baseline_margin)) {
      outcome.change = TaskChangeKind::kUnknownMargin;
    } else {
      outcome.change =
          outcome.post_mortem->near_tie ? TaskChangeKind::kNearTie : TaskChangeKind::kRealMargin;
    }
  }

  // Multiple choice: a changed case is a near-tie when the baseline's best-two margin is
  // at most its band: the largest change of a choice's loglik between the baseline's
  // repeats of the case, or the cell's mean |Δloglik| over every choice of every case of
  // the task (the axis' ordinary perturbation), whichever is larger.
  static void ClassifyChoices(const TaskCellReport& baseline, double moved, TaskCellReport& out) {
    for (std::size_t i = 0; i < out.outcomes.size(); ++i) {
      TaskCaseOutcome& outcome = out.outcomes[i];
      if (!outcome.changed || outcome.baseline_unstable || outcome.runs.front().logliks.empty()) {
        continue;
      }
      const TaskCaseOutcome& base = baseline.outcomes[i];
      const std::vector<double>& b = base.runs.front().logliks;
      double noise = 0.0;
      for (const TaskCaseRun& r : base.runs) {
        for (std::size_t k = 0; k < b.size() && k < r.logliks.size(); ++k) {
          noise = std::max(noise, std::fabs(r.logliks[k] - b[k]));
        }
      }
      outcome.choice_noise_band = std::max(noise, moved);
      const bool near = base.runs.front().choice_margin <= outcome.choice_noise_band;
      outcome.change = near ? TaskChangeKind::kNearTie : TaskChangeKind::kRealMargin;
      ++(near ? out.near_tie : out.real_margin);
    }
  }

  const PlanView& plan_;
  const TaskJobResolver& resolve_;
  RunSource& source_;
  const TaskCatalog& catalog_;
  const std::vector<TaskCaseInfo>* cases_ = nullptr;
  std::map<std::string, TaskCaseData> baseline_data_;  // by case id
  std::map<std::string, double> baseline_noise_;       // by case id
  // The cell's |Δloglik| over every choice compared so far (multiple choice).
  double choice_moved_sum_ = 0.0;
  std::uint64_t choice_moved_n_ = 0;
};

}  // namespace

std::string_view TaskChangeKindName(TaskChangeKind kind) {
  switch (kind) {
    case TaskChangeKind::kNone:
      return "none";
    case TaskChangeKind::kNearTie:
      return "near_tie";
    case TaskChangeKind::kRealMargin:
      return "real_margin";
    case TaskChangeKind::kUnknownMargin:
      return "unknown_margin";
  }
  return "none";
}

int TaskCaseOutcome::passes() const {
  return static_cast<int>(
      std::count_if(runs.begin(), runs.end(), [](const TaskCaseRun& r) { return r.pass; }));
}

bool TaskCaseOutcome::repeats_agree() const {
  return std::all_of(runs.begin(), runs.end(),
                     [this](const TaskCaseRun& r) { return r.pass == runs.front().pass; });
}

Result<std::vector<TaskWorkloadReport>> BuildTaskReports(const PlanView& plan,
                                                         const TaskJobResolver& resolve,
                                                         RunSource& source,
                                                         const TaskCatalog& catalog) {
  std::vector<TaskWorkloadReport> out;
  TaskBuilder builder(plan, resolve, source, catalog);
  for (const PlannedTaskWorkload& task : plan.tasks) {
    ORCH_ASSIGN_OR_RETURN(TaskWorkloadReport report, builder.Build(task));
    out.push_back(std::move(report));
  }
  return out;
}

std::vector<OutcomeRank> RankAxesByOutcome(const std::vector<TaskWorkloadReport>& tasks) {
  std::map<std::string, OutcomeRank> by_axis;
  auto stronger = [](const OutcomeRank& a, const OutcomeRank& b) {
    if (a.changed != b.changed) return a.changed > b.changed;
    if (std::isnan(b.kld_mean)) return !std::isnan(a.kld_mean);
    return !std::isnan(a.kld_mean) && a.kld_mean > b.kld_mean;
  };
  for (const TaskWorkloadReport& w : tasks) {
    for (const TaskCellReport& c : w.cells) {
      // A bisection's combination is no one axis's cell (as in report/attribution.h).
      if (c.status != "compared" || !c.cell.changes.empty()) continue;
      OutcomeRank rank{c.cell.axis, c.cell.label, w.name,
                       c.changed,   c.near_tie,   c.real_margin,
                       c.unstable,  c.cases,      c.pass_rate.mean - w.baseline.pass_rate.mean,
                       c.kld_mean,  c.kld_n};
      auto [it, inserted] = by_axis.emplace(rank.axis, rank);
      if (!inserted && stronger(rank, it->second)) it->second = rank;
    }
  }
  std::vector<OutcomeRank> out;
  for (const auto& [axis, rank] : by_axis) out.push_back(rank);
  std::stable_sort(out.begin(), out.end(), stronger);
  return out;
}

std::string TaskPromptTail(const std::string& prompt, std::size_t bytes) {
  if (prompt.size() <= bytes) return prompt;
  std::size_t start = prompt.size() - bytes;
  // Continuation bytes are 10xxxxxx: step past them to a sequence's first byte.
  while (start < prompt.size() && (static_cast<unsigned char>(prompt[start]) & 0xC0) == 0x80) {
    ++start;
  }
  return prompt.substr(start);
}

}  // namespace orch::report
