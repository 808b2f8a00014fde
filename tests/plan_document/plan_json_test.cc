// The typed plan document: what orch plan writes reads back to the same bytes, coordinates
// and requirements are shared between jobs, and bad fields are named.
#include "plan_document/plan_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <set>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace orch::plan_document {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// orch plan's output for examples/seed-replication.toml: both workload kinds, string,
// integer, float and boolean axis values, model variants.
std::string Golden() {
  std::ifstream in(std::filesystem::path(ORCH_SOURCE_DIR) /
                   "tests/cli/testdata/seed-replication.plan.json");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PlanJsonTest, WritingWhatWasReadGivesTheSameBytes) {
  const std::string golden = Golden();
  Result<Document> document = ReadPlanJson(golden);
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  EXPECT_EQ(WritePlanJson(*document), golden);
}

TEST(PlanJsonTest, ReadsEveryPartOfThePlanTyped) {
  Result<Document> document = ReadPlanJson(Golden());
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  const json golden = json::parse(Golden());
  EXPECT_EQ(document->experiment, golden["experiment"]["name"]);
  EXPECT_EQ(document->jobs.size(), golden["jobs"].size());
  EXPECT_EQ(document->cells.size(), golden["cells"].size());
  EXPECT_EQ(document->workloads.size(), golden["workloads"].size());
  for (std::size_t i = 0; i < document->jobs.size(); ++i) {
    const Job& job = document->jobs[i];
    EXPECT_EQ(job.id, golden["jobs"][i]["id"]);
    EXPECT_EQ(document->workloads[job.workload].name, golden["jobs"][i]["workload"]);
    ASSERT_NE(job.coordinate, kNone);
    std::vector<std::pair<std::string, std::string>> read, expected;
    for (const auto& [axis, value] : document->coordinates[job.coordinate]) {
      read.emplace_back(axis, ScalarText(value));
    }
    for (const auto& [axis, value] : golden["jobs"][i]["coordinate"].items()) {
      expected.emplace_back(axis, value.is_string() ? value.get<std::string>() : value.dump());
    }
    EXPECT_EQ(read, expected) << "job " << i;
  }
}

TEST(PlanJsonTest, TheFullRowBudgetIsReadAndAbsentInOlderPlans) {
  json plan = json::parse(Golden());
  Result<Document> document = ReadPlanJson(plan.dump());
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  ASSERT_TRUE(document->workloads[0].capture);
  EXPECT_EQ(document->workloads[0].capture->full_row_budget_bytes, std::int64_t{64} << 20);
  plan["workloads"][0]["capture"].erase("full_row_budget_bytes");
  document = ReadPlanJson(plan.dump());
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  EXPECT_FALSE(document->workloads[0].capture->full_row_budget_bytes);
  Result<Document> again = ReadPlanJson(WritePlanJson(*document));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->workloads[0].capture->full_row_budget_bytes) << "written as read";
}

// capture.top_logits was written "top_k" before its rename: stored plans still read, and
// are written back with the new name.
TEST(PlanJsonTest, TopLogitsIsReadUnderItsFormerNameAndWrittenUnderTheNewOne) {
  json plan = json::parse(Golden());
  ASSERT_EQ(plan["workloads"][0]["capture"]["top_logits"], 20);
  plan["workloads"][0]["capture"].erase("top_logits");
  plan["workloads"][0]["capture"]["top_k"] = 7;
  Result<Document> document = ReadPlanJson(plan.dump());
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  EXPECT_EQ(document->workloads[0].capture->top_logits, 7);
  json written = json::parse(WritePlanJson(*document));
  EXPECT_EQ(written["workloads"][0]["capture"]["top_logits"], 7);
  EXPECT_FALSE(written["workloads"][0]["capture"].contains("top_k"));
}

TEST(PlanJsonTest, JobsShareTheirCoordinatesAndRequirements) {
  Result<Document> document = ReadPlanJson(Golden());
  ASSERT_TRUE(document.ok());
  // Repeats of a cell have one coordinate; every job has one of the cells' requirements.
  EXPECT_LT(document->coordinates.size(), document->jobs.size());
  EXPECT_LE(document->requirements.size(), document->cells.size());
  for (std::size_t a = 0; a < document->coordinates.size(); ++a) {
    for (std::size_t b = a + 1; b < document->coordinates.size(); ++b) {
      EXPECT_NE(document->coordinates[a], document->coordinates[b]) << "interned twice";
    }
  }
}

TEST(PlanJsonTest, CoordinatesKeepEachAxisNameAndValueOnce) {
  Result<Document> document = ReadPlanJson(Golden());
  ASSERT_TRUE(document.ok());
  std::set<std::string> axes;
  std::set<Scalar> values;
  std::size_t pairs = 0;
  for (std::size_t i = 0; i < document->coordinates.size(); ++i) {
    for (const auto& [axis, value] : document->coordinates[i]) {
      axes.insert(axis);
      values.insert(value);
      ++pairs;
    }
  }
  ASSERT_GT(pairs, axes.size() + values.size()) << "the golden plan shares axes and values";
  EXPECT_EQ(document->coordinates.axis_count(), axes.size());
  EXPECT_EQ(document->coordinates.value_count(), values.size());
}

TEST(PlanJsonTest, ACoordinateReadsAsTheObjectItWas) {
  const json golden = json::parse(Golden());
  Result<Document> document = ReadPlanJson(Golden());
  ASSERT_TRUE(document.ok());
  const json& object = golden["jobs"][0]["coordinate"];
  CoordinateView view = document->coordinates[document->jobs[0].coordinate];
  ASSERT_EQ(view.size(), object.size());
  Coordinate copy = view.ToCoordinate();
  EXPECT_TRUE(view == copy);
  ASSERT_NE(view.Find("quant"), nullptr);
  EXPECT_EQ(ScalarText(*view.Find("quant")), object["quant"].get<std::string>());
  EXPECT_EQ(view.Find("no-such-axis"), nullptr);
  copy.back().second = Scalar(std::int64_t{123456});
  EXPECT_FALSE(view == copy);
}

TEST(PlanJsonTest, ACopiedDocumentKeepsItsCoordinatesWhenTheOriginalIsGone) {
  auto original = std::make_unique<Document>(*ReadPlanJson(Golden()));
  std::vector<Coordinate> expected;
  for (std::size_t i = 0; i < original->coordinates.size(); ++i) {
    expected.push_back(original->coordinates[i].ToCoordinate());
  }
  Document copy = *original;
  Document moved = std::move(*original);
  original.reset();
  ASSERT_EQ(copy.coordinates.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(copy.coordinates[i] == expected[i]) << i;
    EXPECT_TRUE(moved.coordinates[i] == expected[i]) << i;
  }
  // The copy interns on its own: an equal coordinate is found, a new one appended.
  Interner interner(copy);
  EXPECT_EQ(interner.Add(expected[0]), 0u);
  Coordinate other = expected[0];
  other.emplace_back("zz.new", Scalar(true));
  EXPECT_EQ(interner.Add(other), expected.size());
  EXPECT_EQ(moved.coordinates.size(), expected.size()) << "the original's move is untouched";
}

TEST(PlanJsonTest, ReadsKeysInAnyOrder) {
  // Sorted keys put "jobs" before "workloads": names are resolved after the whole text.
  const std::string sorted = json::parse(Golden()).dump();
  Result<Document> document = ReadPlanJson(sorted);
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  EXPECT_EQ(WritePlanJson(*document), Golden());
}

TEST(PlanJsonTest, NamesTheFieldOfTheWrongType) {
  const json golden = json::parse(Golden());
  std::vector<std::pair<std::string, std::function<void(json&)>>> edits = {
      {"plan.schema: expected \"orch.plan/1\"", [](json& p) { p["schema"] = "orch.plan/2"; }},
      {"plan.experiment.name: required string, not empty, got 5",
       [](json& p) { p["experiment"]["name"] = 5; }},
      {"plan.jobs[1].requirements.gpus: must be an integer in [0, 4096], got 5000",
       [](json& p) { p["jobs"][1]["requirements"]["gpus"] = 5000; }},
      {"plan.jobs[0].repeat: must be an integer in [0, 1000000], got -1",
       [](json& p) { p["jobs"][0]["repeat"] = -1; }},
      {"plan.jobs[2].coordinate.kv: must be a string, number or boolean, got []",
       [](json& p) { p["jobs"][2]["coordinate"]["kv"] = json::array(); }},
      {"plan.workloads[0].capture.top_logits: required integer, got \"8\"",
       [](json& p) { p["workloads"][0]["capture"]["top_logits"] = "8"; }},
      {"plan.workloads[0].capture.full_every: required integer, got 3000000000 (out of range)",
       [](json& p) { p["workloads"][0]["capture"]["full_every"] = 3'000'000'000LL; }},
      {"plan.workloads[1].capture.full_row_budget_bytes: must be a non-negative integer, got -1",
       [](json& p) { p["workloads"][1]["capture"]["full_row_budget_bytes"] = -1; }},
      {"plan.workloads[1].capture.full_row_budget_bytes: required integer, got \"64M\"",
       [](json& p) { p["workloads"][1]["capture"]["full_row_budget_bytes"] = "64M"; }},
      {"plan.jobs[0]: must be an object", [](json& p) { p["jobs"][0] = "job"; }},
      {"plan.jobs: required array", [](json& p) { p["jobs"] = json::object(); }},
      {"plan.jobs: required array", [](json& p) { p.erase("jobs"); }},
      {"plan.workloads: required array", [](json& p) { p.erase("workloads"); }},
      {"plan.model.variants: must be an object", [](json& p) { p["model"]["variants"] = 1; }},
      // Cells arrive one by one, as jobs do, and are named the same way.
      {"plan.cells[1].label: required string, not empty, got 7",
       [](json& p) { p["cells"][1]["label"] = 7; }},
      {"plan.cells[0]: must be an object", [](json& p) { p["cells"][0] = 3; }},
      {"plan.cells: required array", [](json& p) { p["cells"] = json::object(); }},
  };
  for (auto& [message, edit] : edits) {
    json plan = golden;
    edit(plan);
    Result<Document> document = ReadPlanJson(plan.dump(2));
    ASSERT_FALSE(document.ok()) << message;
    EXPECT_THAT(document.status().message(), HasSubstr(message));
    EXPECT_EQ(document.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(PlanJsonTest, TextThatIsNotAnObjectIsRefusedNeverThrown) {
  for (const char* text : {"", "[1,2]", "5", "{\"schema\":", "{} trailing", "\"x\""}) {
    Result<Document> document = ReadPlanJson(text);
    ASSERT_FALSE(document.ok()) << text;
    EXPECT_THAT(document.status().message(), HasSubstr("plan: not a JSON object")) << text;
  }
}

TEST(PlanJsonTest, AJobOfNoWorkloadIsReadAndNamed) {
  json plan = json::parse(Golden());
  plan["jobs"][0]["workload"] = "nope";
  Result<Document> document = ReadPlanJson(plan.dump());
  ASSERT_TRUE(document.ok()) << "the consumer decides";
  EXPECT_EQ(document->jobs[0].workload, kNone);
  EXPECT_EQ(document->jobs[0].unknown_workload, "nope");
}

TEST(PlanJsonTest, ExperimentNameOfStopsAtTheTopLevelName) {
  EXPECT_EQ(ExperimentNameOf(Golden()), json::parse(Golden())["experiment"]["name"]);
  EXPECT_EQ(ExperimentNameOf(R"({"jobs": [{"experiment": {"name": "deep"}}]})"), "");
  EXPECT_EQ(ExperimentNameOf("not json"), "");
}

}  // namespace
}  // namespace orch::plan_document

namespace orch::plan_document {
namespace {

TEST(KeepJobsTest, KeepsTheChosenJobsInOrderAndEverythingElse) {
  Result<Document> read = ReadPlanJson(Golden());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  Document plan = *read;
  std::vector<std::string> kept_ids;
  for (std::size_t i = 0; i < plan.jobs.size(); i += 2) kept_ids.push_back(plan.jobs[i].id);
  std::set<std::string> keep(kept_ids.begin(), kept_ids.end());
  KeepJobs(plan, [&](const Job& job) { return keep.contains(job.id); });
  std::vector<std::string> ids;
  for (const Job& job : plan.jobs) ids.push_back(job.id);
  EXPECT_EQ(ids, kept_ids);
  EXPECT_EQ(plan.cells.size(), read->cells.size());
  EXPECT_EQ(plan.workloads.size(), read->workloads.size());
  // What is left still reads back as it was written.
  Result<Document> again = ReadPlanJson(WritePlanJson(plan));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(WritePlanJson(*again), WritePlanJson(plan));
}

TEST(KeepJobsTest, WriteModelJsonIsThePlansModelMember) {
  Result<Document> read = ReadPlanJson(Golden());
  ASSERT_TRUE(read.ok() && read->model.has_value());
  EXPECT_EQ(json::parse(WriteModelJson(*read->model)), json::parse(Golden()).at("model"));
}

}  // namespace
}  // namespace orch::plan_document
