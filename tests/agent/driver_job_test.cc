#include "agent/driver_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "fingerprint/memory_hash_cache.h"

namespace orch::agent {
namespace {

namespace fs = std::filesystem;

class DriverJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("orch-driver-job-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "models");
    std::ofstream(root_ / "models" / "m.gguf") << "weights";
    models_ = std::make_unique<ModelResolver>(
        ModelResolverOptions{{(root_ / "models").string()}, (root_ / "cache").string()}, hashes_,
        log_);
  }
  void TearDown() override { fs::remove_all(root_); }

  protocol::Assign Assign(const std::string& model, const std::string& spec) {
    protocol::Assign assign;
    assign.run_id = "run-1";
    assign.job_id = "job-1";
    assign.workload = "w";
    assign.requirements.engine = "llama.cpp@v0.4.0";
    assign.requirements.model = model;
    assign.job_spec = spec;
    return assign;
  }

  fs::path root_;
  fingerprint::MemoryHashCache hashes_;
  spdlog::logger log_{"test", std::make_shared<spdlog::sinks::null_sink_st>()};
  std::unique_ptr<ModelResolver> models_;
};

TEST_F(DriverJobTest, ModelCarriesResolvedPathHashAndCacheDir) {
  Result<DriverJob> job = BuildDriverJob(
      Assign("m.gguf", R"({"experiment":"e","model":{"name":"tiny"}})"), *models_, 0);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  nlohmann::json document = nlohmann::json::parse(job->json);
  EXPECT_EQ(job->experiment, "e");
  EXPECT_EQ(document["model"]["requirement"], "m.gguf");
  EXPECT_EQ(document["model"]["path"], (root_ / "models" / "m.gguf").string());
  EXPECT_EQ(document["model"]["sha256"], Sha256Hex("weights"));
  EXPECT_EQ(document["model"]["cache_dir"], (root_ / "cache").string());
  EXPECT_EQ(document["model"]["spec"]["name"], "tiny");
}

// The capture policy is sent once, at top level, under the names drivers read: a plan
// stored before capture.top_k was renamed reaches the driver as top_logits.
TEST_F(DriverJobTest, TheCaptureIsSentOnceAtTopLevelUnderItsCurrentNames) {
  Result<DriverJob> job =
      BuildDriverJob(Assign("m.gguf", R"({"workload":{"name":"w","kind":"generate","prompt":"p",)"
                                      R"("max_tokens":2,"capture":{"top_k":7,"full_every":2}}})"),
                     *models_, 0);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  nlohmann::json document = nlohmann::json::parse(job->json);
  EXPECT_EQ(document["capture"], nlohmann::json({{"top_logits", 7}, {"full_every", 2}}));
  EXPECT_FALSE(document["workload"].contains("capture")) << document.dump();
  EXPECT_EQ(document["workload"]["prompt"], "p");
}

TEST_F(DriverJobTest, DriverThreadsBecomeTheJobsResourcesAndZeroAddsNone) {
  Result<DriverJob> shared = BuildDriverJob(Assign("m.gguf", ""), *models_, 3);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ(nlohmann::json::parse(shared->json)["resources"]["threads"], 3);
  Result<DriverJob> plain = BuildDriverJob(Assign("m.gguf", ""), *models_, 0);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(nlohmann::json::parse(plain->json).contains("resources"));
}

TEST_F(DriverJobTest, MissingModelLeavesPathAndHashEmpty) {
  Result<DriverJob> job = BuildDriverJob(Assign("sha256:" + Sha256Hex("x"), ""), *models_, 0);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  nlohmann::json document = nlohmann::json::parse(job->json);
  EXPECT_EQ(document["model"]["path"], "");
  EXPECT_EQ(document["model"]["sha256"], "");
}

TEST_F(DriverJobTest, InvalidJobSpecFailsBeforeAnyModelIsGenerated) {
  Result<DriverJob> job = BuildDriverJob(Assign("synth:llama:vocab=300", "[1,2]"), *models_, 0);
  EXPECT_EQ(job.status().message(), "assign run-1: job_spec is not a JSON object");
  EXPECT_FALSE(fs::exists(root_ / "cache"));
}

TEST_F(DriverJobTest, ALaunchedServerGivesUrlModeJobsLogAndCoordinate) {
  Result<DriverJob> job = BuildDriverJob(Assign("m.gguf", ""), *models_, 0);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->model_path, (root_ / "models" / "m.gguf").string());
  AddServer(*job, {.url = "http://127.0.0.1:4242",
                   .mode = "launched",
                   .jobs_before = 3,
                   .log = "/spool/servers/llama-server@b1-1.log",
                   .coordinate = {{"attention", "on"}}});
  nlohmann::json server = nlohmann::json::parse(job->json)["server"];
  EXPECT_EQ(server, nlohmann::json::parse(R"({"url": "http://127.0.0.1:4242",
      "api_key_file": "", "mode": "launched", "jobs_before": 3,
      "log": "/spool/servers/llama-server@b1-1.log", "coordinate": {"attention": "on"}})"));
}

TEST_F(DriverJobTest, AnAttachedServerHasNoLogNorCoordinate) {
  Result<DriverJob> job = BuildDriverJob(Assign("m.gguf", ""), *models_, 0);
  ASSERT_TRUE(job.ok());
  AddServer(*job, {.url = "http://gpu-1:8000", .api_key_file = "/k", .mode = "attached"});
  nlohmann::json server = nlohmann::json::parse(job->json)["server"];
  EXPECT_EQ(server, nlohmann::json::parse(R"({"url": "http://gpu-1:8000",
      "api_key_file": "/k", "mode": "attached", "jobs_before": 0})"));
}

}  // namespace
}  // namespace orch::agent
