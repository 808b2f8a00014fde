#include "tests/report/task_fixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/report/report_fixture.h"

namespace orch::report::testing {
namespace {

using FixtureJson = nlohmann::json;

const char* const kTaskCells[] = {"baseline", "kv=q4_0", "quant=q8_0"};

// One generated step: the token, the runner-up and the margin between them.
struct FixtureStep {
  std::int32_t token, second;
  double margin;
};

// The runs of one generate case: per cell, per repeat, the steps.
using FixtureRuns = std::map<std::string, std::vector<std::vector<FixtureStep>>>;

std::vector<FixtureStep> Steps(const std::vector<std::int32_t>& tokens, double margin = 2.0) {
  std::vector<FixtureStep> steps;
  for (std::int32_t t : tokens) steps.push_back({t, (t + 1) % 8, margin});
  return steps;
}

struct FixtureCase {
  std::string id;
  std::vector<std::int32_t> expected;
  FixtureRuns runs;
};

std::vector<FixtureCase> TriageCases() {
  std::vector<FixtureCase> cases;
  const auto c1 = Steps({1, 2, 3});
  cases.push_back(
      {"c1", {1, 2, 3}, {{"baseline", {c1, c1}}, {"kv=q4_0", {c1}}, {"quant=q8_0", {c1}}}});
  std::vector<FixtureStep> c2 = Steps({1, 2, 3, 4});
  c2[2] = {3, 5, kC2BaselineMargin};
  std::vector<FixtureStep> c2_repeat = c2;
  c2_repeat[0].margin += kC2RepeatShift;  // the top logit moves, the tokens stay
  std::vector<FixtureStep> c2_kv = c2;
  c2_kv[2] = {5, 3, kC2CellMargin};
  cases.push_back({"c2",
                   {1, 2, 3, 4},
                   {{"baseline", {c2, c2_repeat}}, {"kv=q4_0", {c2_kv}}, {"quant=q8_0", {c2}}}});
  std::vector<FixtureStep> c3 = Steps({1, 6, 6});
  c3[1] = {6, 7, kC3BaselineMargin};
  std::vector<FixtureStep> c3_quant = c3;
  c3_quant[1] = {7, 6, kC3CellMargin};
  cases.push_back(
      {"c3", {1, 6, 6}, {{"baseline", {c3, c3}}, {"kv=q4_0", {c3}}, {"quant=q8_0", {c3_quant}}}});
  const auto c4 = Steps({2, 2}), c4_other = Steps({2, 3});
  cases.push_back({"c4",
                   {2, 2},
                   {{"baseline", {c4, c4_other}}, {"kv=q4_0", {c4_other}}, {"quant=q8_0", {c4}}}});
  const auto c5 = Steps({3, 4}), c5_quant = Steps({3, 3});
  cases.push_back(
      {"c5", {3, 3}, {{"baseline", {c5, c5}}, {"kv=q4_0", {c5}}, {"quant=q8_0", {c5_quant}}}});
  return cases;
}

// pick: case -> cell -> the two choices' target logits.
using FixturePick = std::map<std::string, std::map<std::string, std::pair<double, double>>>;

FixturePick PickCases() {
  return {{"q1", {{"baseline", {3, 1}}, {"kv=q4_0", {3, 1}}, {"quant=q8_0", {1, 3.5}}}},
          {"q2", {{"baseline", {2, 0}}, {"kv=q4_0", {2, 0}}, {"quant=q8_0", {2, 0}}}},
          {"q3", {{"baseline", {2.05, 2}}, {"kv=q4_0", {2.05, 2}}, {"quant=q8_0", {2, 2.05}}}}};
}

FixtureJson TokenTextJson() {
  FixtureJson table = FixtureJson::object();
  for (std::int32_t t = 0; t < static_cast<std::int32_t>(kVocab); ++t) {
    table[std::to_string(t)] = TaskFixtureText({t});
  }
  return table;
}

std::vector<digest::PositionRecord> GenerateRecords(const std::vector<FixtureStep>& steps) {
  std::vector<digest::PositionRecord> records;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const FixtureStep& s = steps[i];
    records.push_back(MakeRecord(kFirstGenerated + i, TwoPeakRow(s.token, s.second, s.margin),
                                 digest::kNoTarget, true, s.token));
  }
  return records;
}

std::string GenerateSummary(const std::vector<FixtureStep>& steps) {
  std::vector<std::int32_t> ids;
  for (const FixtureStep& s : steps) ids.push_back(s.token);
  FixtureJson done{{"positions", steps.size()},
                   {"generated_ids", ids},
                   {"generated_text", TaskFixtureText(ids)},
                   {"token_text", TokenTextJson()},
                   {"chat_template", {{"source", "model"}, {"sha256", kTriageTemplate}}}};
  return FixtureJson{{"done", done}}.dump();
}

std::vector<digest::PositionRecord> ChoiceRecords(double logit) {
  std::vector<digest::PositionRecord> records;
  for (std::uint64_t p = 0; p < 4; ++p) {
    std::vector<float> row(kVocab, 0.0f);
    if (p >= 2) row[kPickTarget] = static_cast<float>(logit);
    records.push_back(MakeRecord(p, row, kPickTarget, true));
  }
  return records;
}

std::string ChoiceSummary() {
  FixtureJson done{{"positions", 4},
                   {"continuation", {{"first_position", 2}, {"tokens", 2}}},
                   {"token_text", TokenTextJson()}};
  return FixtureJson{{"done", done}}.dump();
}

// The plan, and the runs to store per job id (records and summary).
struct FixtureJob {
  std::string id, cell, workload;
  int repeat;
  std::vector<digest::PositionRecord> records;
  std::string summary;
  std::string failure;  // the run fails with it when not empty
};

class TaskPlan {
 public:
  void Workload(FixtureJson w) { workloads_.push_back(std::move(w)); }
  void Job(const std::string& cell, const std::string& workload, int repeat,
           std::vector<digest::PositionRecord> records, std::string summary,
           std::string failure = "") {
    const std::string id = "job-" + std::to_string(jobs_.size() + 1);
    jobs_.push_back(
        {id, cell, workload, repeat, std::move(records), std::move(summary), std::move(failure)});
  }

  void Store(store::Store& store) const {
    FixtureJson cells = FixtureJson::array();
    for (const char* label : kTaskCells) {
      const std::string l = label;
      const auto eq = l.find('=');
      cells.push_back(
          {{"label", l},
           {"axis", eq == std::string::npos ? FixtureJson() : FixtureJson(l.substr(0, eq))},
           {"value", eq == std::string::npos ? FixtureJson() : FixtureJson(l.substr(eq + 1))}});
    }
    FixtureJson jobs = FixtureJson::array();
    std::vector<store::JobRecord> records;
    for (const FixtureJob& j : jobs_) {
      jobs.push_back(
          {{"id", j.id}, {"cell", j.cell}, {"workload", j.workload}, {"repeat", j.repeat}});
      store::JobRecord job;
      job.id = j.id;
      job.experiment = "tasks";
      records.push_back(job);
    }
    FixtureJson plan{{"schema", "orch.plan/1"},
                     {"experiment", {{"name", "tasks"}, {"description", ""}}},
                     {"baseline", {{"kv", "f16"}, {"quant", "f16"}}},
                     {"workloads", workloads_},
                     {"cells", cells},
                     {"jobs", jobs}};
    Result<int> stored = store.PutPlan({"tasks", plan.dump()}, records);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    for (const FixtureJob& j : jobs_) {
      if (j.failure.empty()) {
        AddSucceededRunWithSummary(store, j.id, "run-" + j.id, j.records, j.summary);
      } else {
        AddFailedRun(store, j.id, "run-" + j.id, j.failure);
      }
    }
  }

 private:
  FixtureJson workloads_ = FixtureJson::array();
  std::vector<FixtureJob> jobs_;
};

void AddTriage(TaskPlan& plan, const TaskExperimentOptions& options) {
  plan.Workload({{"name", "triage"}, {"kind", "task"}});
  for (const FixtureCase& c : TriageCases()) {
    const std::string name = "triage." + c.id;
    plan.Workload({{"name", name},
                   {"kind", "generate"},
                   {"prompt", "case " + c.id},
                   {"max_tokens", 8},
                   {"capture", {{"top_k", 4}, {"full_every", 1}}},
                   {"task", {{"workload", "triage"}, {"case", c.id}}}});
    for (const char* cell : kTaskCells) {
      const auto& repeats = c.runs.at(cell);
      for (std::size_t r = 0; r < repeats.size(); ++r) {
        const bool fails = r == 0 && cell == options.failed_cell && c.id == options.failed_case;
        plan.Job(cell, name, static_cast<int>(r), GenerateRecords(repeats[r]),
                 GenerateSummary(repeats[r]), fails ? options.failure : "");
      }
    }
  }
}

void AddPick(TaskPlan& plan) {
  plan.Workload({{"name", "pick"}, {"kind", "task"}});
  for (const auto& [id, by_cell] : PickCases()) {
    for (int k = 0; k < 2; ++k) {
      const std::string name = "pick." + id + "." + std::to_string(k);
      plan.Workload({{"name", name},
                     {"kind", "teacher_forced"},
                     {"positions", 4},
                     {"capture", {{"top_k", 4}, {"full_every", 1}}},
                     {"task", {{"workload", "pick"}, {"case", id}, {"choice", k}}}});
      for (const char* cell : kTaskCells) {
        const auto& logits = by_cell.at(cell);
        const double logit = k == 0 ? logits.first : logits.second;
        const int repeats = std::string(cell) == "baseline" ? 2 : 1;
        for (int r = 0; r < repeats; ++r) {
          plan.Job(cell, name, r, ChoiceRecords(logit), ChoiceSummary());
        }
      }
    }
  }
}

}  // namespace

std::string TaskFixtureText(const std::vector<std::int32_t>& tokens) {
  std::string text;
  for (std::int32_t t : tokens) text += static_cast<char>('a' + t);
  return text;
}

double TaskFixtureLogProb(double logit) {
  return logit - std::log(std::exp(logit) + static_cast<double>(kVocab - 1));
}

void BuildTaskExperiment(store::Store& store, const TaskExperimentOptions& options) {
  TaskPlan plan;
  AddTriage(plan, options);
  AddPick(plan);
  plan.Store(store);
}

TaskFixtureCatalog::TaskFixtureCatalog() {
  // The prompt the plan gives each triage case ("case " + id), for post-mortem context.
  for (const FixtureCase& c : TriageCases()) triage_.push_back({c.id, 0, -1, "case " + c.id});
  for (const auto& entry : PickCases()) pick_.push_back({entry.first, 2, 0, "case " + entry.first});
}

const std::vector<TaskCaseInfo>* TaskFixtureCatalog::Cases(std::string_view workload) const {
  if (workload == "triage") return &triage_;
  if (workload == "pick") return &pick_;
  return nullptr;
}

TaskVerdict TaskFixtureCatalog::Evaluate(std::string_view workload, std::string_view case_id,
                                         std::string_view text) const {
  if (workload != "triage") return {false, "not a generate task", std::nullopt};
  for (const FixtureCase& c : TriageCases()) {
    if (c.id != case_id) continue;
    const std::string expected = TaskFixtureText(c.expected);
    // c4 stands for an ordinal label check: its distance is the letters apart.
    std::optional<double> distance;
    if (c.id == "c4") {
      distance = 0.0;
      for (std::size_t i = 0; i < expected.size() && i < text.size(); ++i) {
        *distance += std::abs(expected[i] - text[i]);
      }
    }
    if (text == expected) return {true, "", distance};
    return {false, "exact: expected \"" + expected + "\", got \"" + std::string(text) + "\"",
            distance};
  }
  return {false, "unknown case", std::nullopt};
}

}  // namespace orch::report::testing
