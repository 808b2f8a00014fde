// kind = "task" workloads (docs/tasks.md): a case file expands into per-case workloads
// whose jobs the drivers run, the plan carries the case file for reports, job ids rest on
// what a driver receives (not on the checks), and every mistake names the case file's
// line through the spec's field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "plan_document/plan_json.h"
#include "planner/plan_ids.h"
#include "planner/plan_to_json.h"
#include "tests/planner/planner_test_util.h"

namespace orch::planner {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kCases =
    R"({"id": "port", "prompt": "Q: postgres port?\nA:", "checks": [{"number": 5432}]})"
    "\n\n"
    R"({"id": "chat", "messages": [{"role": "user", "content": "ARP?"}], "max_tokens": 3, "checks": [{"normalized": "show arp"}]})"
    "\n"
    R"({"id": "mc", "prompt": "2+2=", "choices": [" 3", " 4"], "answer": 1})"
    "\n";

std::string TaskSpec(const std::string& task_table) {
  return R"toml(
[experiment]
name = "unit"

[model]
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7"

)toml" + task_table +
         R"toml(
[baseline]
engine = "llama.cpp@v0.4.0"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1
sampler.seed = 42
sampler.temperature = 0.0

[alternatives]
quant = ["q8_0"]
sampler.seed = [7]
)toml";
}

constexpr const char* kTaskTable = R"toml([[workloads]]
name = "net"
kind = "task"
cases_file = "cases.jsonl"
max_tokens = 8
capture = { top_logits = 4, full_every = 1 }
)toml";

PlanOutcome PlanWith(const std::string& spec, const std::string& cases) {
  orch::testing::MapSourceReader reader;
  reader.Add("cases.jsonl", cases);
  return PlanSpec(spec, "unit.toml", reader);
}

Plan MustPlanWith(const std::string& cases) {
  PlanOutcome outcome = PlanWith(TaskSpec(kTaskTable), cases);
  for (const Diagnostic& d : outcome.diagnostics.all()) ADD_FAILURE() << d.Format("unit.toml");
  return outcome.plan ? *outcome.plan : Plan{};
}

std::vector<std::string> TaskErrors(const std::string& table, const std::string& cases) {
  std::vector<std::string> out;
  for (const Diagnostic& d : PlanWith(TaskSpec(table), cases).diagnostics.errors())
    out.push_back(d.Format("unit.toml"));
  return out;
}

json WorkloadNamed(const json& plan, const std::string& name) {
  for (const json& w : plan["workloads"])
    if (w["name"] == name) return w;
  ADD_FAILURE() << "no workload " << name;
  return json::object();
}

TEST(TaskWorkloadTest, EachCaseRunsAsItsOwnWorkloadAndEachChoiceAsATeacherForcedOne) {
  Plan plan = MustPlanWith(kCases);
  std::vector<std::string> names;
  for (const Workload& w : plan.spec.workloads) names.push_back(w.name);
  EXPECT_THAT(names, ElementsAre("net.port", "net.chat", "net.mc.0", "net.mc.1"));
  const auto& w = plan.spec.workloads;
  EXPECT_EQ(w[0].kind, WorkloadKind::kGenerate);
  EXPECT_EQ(w[0].prompt, "Q: postgres port?\nA:");
  EXPECT_EQ(w[0].max_tokens, 8) << "the workload's max_tokens when the case gives none";
  EXPECT_EQ(w[1].max_tokens, 3) << "the case's own max_tokens";
  ASSERT_EQ(w[1].messages.size(), 1u);
  EXPECT_EQ(w[1].messages[0].content, "ARP?");
  EXPECT_EQ(w[2].kind, WorkloadKind::kTeacherForced);
  EXPECT_EQ(w[2].context, "2+2=");
  EXPECT_EQ(w[3].continuation, " 4");
  ASSERT_TRUE(w[3].task.has_value());
  EXPECT_EQ(w[3].task->workload, "net");
  EXPECT_EQ(w[3].task->case_id, "mc");
  EXPECT_EQ(w[3].task->choice, 1);
  EXPECT_EQ(w[0].capture.top_logits, 4);

  // The sampler's seed acts on generation only: its cell runs the two generate cases,
  // not the choices; quant runs all four; the baseline all four twice.
  std::map<std::string, int> jobs_per_cell;
  for (const Job& job : plan.jobs) ++jobs_per_cell[plan.CellOf(job).label];
  EXPECT_EQ(jobs_per_cell["baseline"], 8);
  EXPECT_EQ(jobs_per_cell["quant=q8_0"], 4);
  EXPECT_EQ(jobs_per_cell["sampler.seed=7"], 2);
}

TEST(TaskWorkloadTest, ThePlanCarriesTheCaseFileAndWhatEachDriverReceives) {
  json plan = json::parse(PlanToJson(MustPlanWith(kCases)));
  json task = WorkloadNamed(plan, "net");
  EXPECT_EQ(task["kind"], "task");
  EXPECT_EQ(task["cases_file"], "cases.jsonl");
  EXPECT_EQ(task["cases"], kCases);
  for (const json& job : plan["jobs"]) EXPECT_NE(job["workload"], "net");

  json chat = WorkloadNamed(plan, "net.chat");
  EXPECT_EQ(chat["kind"], "generate");
  EXPECT_EQ(chat["messages"], json::parse(R"([{"role": "user", "content": "ARP?"}])"));
  EXPECT_FALSE(chat.contains("prompt"));
  EXPECT_EQ(chat["task"], json::parse(R"({"workload": "net", "case": "chat"})"));
  json choice = WorkloadNamed(plan, "net.mc.1");
  EXPECT_EQ(choice["kind"], "teacher_forced");
  EXPECT_EQ(choice["context"], "2+2=");
  EXPECT_EQ(choice["continuation"], " 4");
  EXPECT_FALSE(choice.contains("positions")) << "the driver evaluates context + continuation";
  EXPECT_EQ(choice["task"], json::parse(R"({"workload": "net", "case": "mc", "choice": 1})"));
}

TEST(TaskWorkloadTest, ThePlansIdsCheckOutAndAnEditedCaseIsNamed) {
  json plan = json::parse(PlanToJson(MustPlanWith(kCases)));
  Result<plan_document::Document> document = plan_document::ReadPlanJson(plan.dump());
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  Status ok = CheckPlanJobIds(*document);
  EXPECT_TRUE(ok.ok()) << ok.ToString();

  for (json& w : plan["workloads"])
    if (w["name"] == "net.mc.1") w["continuation"] = " 5";
  document = plan_document::ReadPlanJson(plan.dump());
  ASSERT_TRUE(document.ok());
  Status edited = CheckPlanJobIds(*document);
  EXPECT_THAT(edited.message(), HasSubstr("is not the id of this job's coordinate, workload"));

  // A job that names the task workload itself is refused: its cases run, not it.
  json direct = json::parse(PlanToJson(MustPlanWith(kCases)));
  direct["jobs"][0]["workload"] = "net";
  document = plan_document::ReadPlanJson(direct.dump());
  ASSERT_TRUE(document.ok());
  EXPECT_THAT(CheckPlanJobIds(*document).message(),
              HasSubstr("jobs[0].workload: net is a task workload"));
}

std::set<std::string> JobIds(const Plan& plan) {
  std::set<std::string> ids;
  for (const Job& job : plan.jobs) ids.insert(job.id);
  return ids;
}

TEST(TaskWorkloadTest, JobIdsRestOnWhatRunsNotOnTheChecks) {
  const std::set<std::string> ids = JobIds(MustPlanWith(kCases));
  EXPECT_EQ(ids.size(), MustPlanWith(kCases).jobs.size()) << "every job its own id";

  // A corrected check re-judges stored runs: the same jobs.
  std::string rechecked = kCases;
  rechecked.replace(rechecked.find("5432"), 4, "5433");
  EXPECT_EQ(JobIds(MustPlanWith(rechecked)), ids);

  // Another prompt is another job; two cases with one prompt are two jobs.
  std::string reprompted = kCases;
  reprompted.replace(reprompted.find("postgres"), 8, "mysql");
  EXPECT_NE(JobIds(MustPlanWith(reprompted)), ids);
  const std::string twins = R"({"id": "a", "prompt": "same", "checks": [{"contains": "x"}]})"
                            "\n"
                            R"({"id": "b", "prompt": "same", "checks": [{"contains": "y"}]})"
                            "\n";
  Plan plan = MustPlanWith(twins);
  EXPECT_EQ(JobIds(plan).size(), plan.jobs.size());
}

TEST(TaskWorkloadTest, ACaseFileMistakeNamesTheSpecFieldTheFileLineAndTheCase) {
  const std::string spec = TaskSpec(kTaskTable);
  const std::string bad =
      std::string(kCases) + R"({"id": "mc2", "prompt": "x", "choices": [" a", " b"], "answer": 2})";
  EXPECT_THAT(TaskErrors(kTaskTable, bad),
              ElementsAre(At(spec, "\"cases.jsonl\"") +
                          ": error: workloads[0].cases_file: cases.jsonl:5: case mc2.answer: "
                          "expected "
                          "the index of the right choice, 0..1, got 2"));

  orch::testing::MapSourceReader empty;
  PlanOutcome missing = PlanSpec(spec, "unit.toml", empty);
  ASSERT_FALSE(missing.diagnostics.errors().empty());
  EXPECT_THAT(missing.diagnostics.errors()[0].Format("unit.toml"),
              HasSubstr("workloads[0].cases_file: cannot read \"cases.jsonl\""));
}

TEST(TaskWorkloadTest, ACaseWithoutMaxTokensNeedsTheWorkloadsAndChoicesNeedAPrompt) {
  std::string table = kTaskTable;
  table.erase(table.find("max_tokens = 8\n"), 15);
  EXPECT_THAT(TaskErrors(table, kCases),
              ElementsAre(HasSubstr("cases.jsonl:1: case port: no max_tokens, and the workload "
                                    "gives none; give the case or workloads[0].max_tokens one")));

  const std::string chat_choice =
      R"({"id": "c", "messages": [{"role": "user", "content": "2+2?"}], "choices": ["3", "4"], "answer": 1})";
  EXPECT_THAT(TaskErrors(kTaskTable, chat_choice),
              ElementsAre(HasSubstr("cases.jsonl:1: case c: a multiple-choice case needs a "
                                    "prompt")));
}

TEST(TaskWorkloadTest, CaseWorkloadNamesShareOneNamespaceWithTheOthers) {
  const std::string table = std::string(kTaskTable) +
                            "\n[[workloads]]\nname = \"net.port\"\nkind = \"generate\"\n"
                            "prompt = \"p\"\nmax_tokens = 2\n";
  EXPECT_THAT(TaskErrors(table, kCases),
              ElementsAre(HasSubstr("workloads[1].name: duplicate workload name \"net.port\"")));
  EXPECT_THAT(TaskErrors("[[workloads]]\nname = \"w\"\nkind = \"quiz\"\n", kCases),
              ElementsAre(HasSubstr("expected \"teacher_forced\", \"generate\" or \"task\"")));
}

}  // namespace
}  // namespace orch::planner
