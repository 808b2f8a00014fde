// The job spec an Assign carries: the plan's job, workload and model objects, written from
// the document read once, and read back by the agent.
#include "plan_document/job_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "plan_document/plan_json.h"

namespace orch::plan_document {
namespace {

using nlohmann::json;

json GoldenPlan() {
  std::ifstream in(std::filesystem::path(ORCH_SOURCE_DIR) /
                   "tests/cli/testdata/seed-replication.plan.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

TEST(JobSpecTest, CarriesThePlansObjectsAsSubmitted) {
  json plan = GoldenPlan();
  plan["workloads"][0]["future_field"] = {{"kept", true}};  // fields are only ever added
  Result<Document> document = ReadPlanJson(plan.dump());
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  for (std::size_t i = 0; i < document->jobs.size(); ++i) {
    json spec = json::parse(WriteJobSpec(*document, document->jobs[i]));
    EXPECT_EQ(spec["experiment"], plan["experiment"]["name"]);
    // The job object as the plan has it (the driver-facing fields only).
    EXPECT_EQ(spec["job"], plan["jobs"][i]) << "job " << i;
    const std::string name = plan["jobs"][i]["workload"];
    for (const json& w : plan["workloads"]) {
      if (w["name"] == name) {
        EXPECT_EQ(spec["workload"], w);
      }
    }
    EXPECT_EQ(spec["model"], plan["model"]);
  }
}

// The job object is written straight, not as a tree: byte for byte what the tree's
// dump() gives (sorted keys, compact), with values that need escaping or number forms.
TEST(JobSpecTest, TheJobObjectIsTheSortedCompactFormOfThePlansJob) {
  json plan = GoldenPlan();
  json& job = plan["jobs"][0];
  job["cell"] = "quote\" back\\ tab\t nl\n ctl\u0001 del\u007f \u00e9\u4e2d";
  job["coordinate"]["a.double"] = 0.1;
  job["coordinate"]["a.small"] = 1e-05;
  job["coordinate"]["a.whole"] = 2.0;
  job["coordinate"]["b.flag"] = true;
  job["coordinate"]["b.negative"] = -7;
  job["coordinate"]["z\"odd axis"] = "v\u0002";
  job["requirements"]["gpus"] = 4;
  Result<Document> document = ReadPlanJson(plan.dump());
  ASSERT_TRUE(document.ok()) << document.status().ToString();
  for (std::size_t i = 0; i < document->jobs.size(); ++i) {
    const std::string text = WriteJobSpec(*document, document->jobs[i]);
    const std::string expected = ",\"job\":" + plan["jobs"][i].dump() + ",\"workload\":";
    EXPECT_NE(text.find(expected), std::string::npos) << "job " << i << ": " << text;
  }
  // Without repeat, cell and kind (fields a plan may lack), and with an unknown workload.
  json bare = GoldenPlan();
  bare["jobs"][0].erase("repeat");
  bare["jobs"][0].erase("cell");
  bare["jobs"][0].erase("kind");
  bare["jobs"][0]["workload"] = "missing";
  Result<Document> lacking = ReadPlanJson(bare.dump());
  ASSERT_TRUE(lacking.ok()) << lacking.status().ToString();
  const std::string spec = WriteJobSpec(*lacking, lacking->jobs[0]);
  EXPECT_NE(spec.find(",\"job\":" + bare["jobs"][0].dump() + ",\"workload\":null,"),
            std::string::npos)
      << spec;
}

TEST(JobSpecTest, ADocumentBuiltInMemoryWritesItsTypedFields) {
  Result<Document> read = ReadPlanJson(GoldenPlan().dump());
  ASSERT_TRUE(read.ok());
  Document document = *read;
  for (Workload& w : document.workloads) w.json.clear();
  document.model->json.clear();
  json from_memory = json::parse(WriteJobSpec(document, document.jobs[0]));
  json from_text = json::parse(WriteJobSpec(*read, read->jobs[0]));
  EXPECT_EQ(from_memory, from_text);
}

TEST(JobSpecTest, ReadsWhatItWrote) {
  Result<Document> document = ReadPlanJson(GoldenPlan().dump());
  ASSERT_TRUE(document.ok());
  const std::string text = WriteJobSpec(*document, document->jobs[0]);
  Result<JobSpec> spec = ReadJobSpec(text);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->experiment, document->experiment);
  EXPECT_EQ(json::parse(spec->workload), json::parse(text)["workload"]);
  EXPECT_EQ(json::parse(spec->model), json::parse(text)["model"]);
  EXPECT_EQ(json::parse(spec->job)["id"], document->jobs[0].id);
}

// The agent sends the workload's capture once, under the names job documents use: a plan
// stored before capture.top_k was renamed gives top_logits.
TEST(JobSpecTest, TheCaptureIsReadUnderTheJobDocumentsNames) {
  Result<Document> document = ReadPlanJson(GoldenPlan().dump());
  ASSERT_TRUE(document.ok());
  json written = json::parse(WriteJobSpec(*document, document->jobs[0]));
  Result<JobSpec> spec = ReadJobSpec(written.dump());
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(json::parse(spec->capture), written["workload"]["capture"]);
  json stored = written;
  json& capture = stored["workload"]["capture"];
  capture["top_k"] = 7;
  capture.erase("top_logits");
  spec = ReadJobSpec(stored.dump());
  ASSERT_TRUE(spec.ok());
  json expected = written["workload"]["capture"];
  expected["top_logits"] = 7;
  EXPECT_EQ(json::parse(spec->capture), expected);
  EXPECT_EQ(ReadJobSpec(R"({"workload": {"name": "w"}})")->capture, "");
}

TEST(JobSpecTest, TextThatIsNotAnObjectIsRefused) {
  for (const char* text : {"", "[]", "5", "{\"experiment\":"}) {
    Result<JobSpec> spec = ReadJobSpec(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  }
  Result<JobSpec> partial = ReadJobSpec(R"({"experiment": 5})");
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->experiment, "");
  EXPECT_EQ(partial->workload, "");
}

}  // namespace
}  // namespace orch::plan_document
