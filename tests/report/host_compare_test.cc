// `orch report --by-host` as a pure core: the contributed experiment's jobs that ran on
// more than one host, each run against the job's reference run.
#include "report/host_compare.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/render.h"
#include "store/memory_store.h"
#include "tests/report/report_fixture.h"

namespace orch::report {
namespace {

class HostCompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::BuildContributedExperiment(*store_);
    Result<ExperimentInput> input = LoadExperiment(*store_, "contributed");
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    std::unique_ptr<RunSource> source = MakeStoreRunSource(*store_);
    Result<HostReport> report = BuildHostReport(*input, *source);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    report_ = std::move(*report);
  }

  const HostJob& JobOf(const std::string& cell) const {
    for (const HostJob& job : report_.jobs) {
      if (job.job.cell == cell) return job;
    }
    ADD_FAILURE() << "no job of " << cell;
    static const HostJob kNone;
    return kNone;
  }

  std::unique_ptr<store::Store> store_ = store::MakeMemoryStore();
  HostReport report_;
};

TEST_F(HostCompareTest, ListsEveryJobRunOnMoreThanOneHost) {
  EXPECT_EQ(report_.jobs_total, 3);
  ASSERT_EQ(report_.jobs.size(), 3u);
  EXPECT_EQ(JobOf("baseline").hosts, 3);
  EXPECT_EQ(JobOf("attention=on").hosts, 2);
  EXPECT_EQ(JobOf("quant=q8_0").hosts, 3);
}

TEST_F(HostCompareTest, TheReferenceComesFirstAndAgreeingHostsAreBitIdentical) {
  const HostJob& job = JobOf("baseline");
  ASSERT_EQ(job.runs.size(), 3u);
  EXPECT_TRUE(job.runs[0].reference);
  EXPECT_EQ(job.runs[0].run.run_id, "run-base-lab");
  EXPECT_EQ(job.runs[0].run.contributor, "lab");
  for (std::size_t i = 1; i < job.runs.size(); ++i) {
    EXPECT_TRUE(job.runs[i].same_stream) << job.runs[i].run.run_id;
    EXPECT_FALSE(job.runs[i].first_difference);
    EXPECT_EQ(job.runs[i].kld_mean, 0.0);
    EXPECT_EQ(job.runs[i].kld_method, "exact");
  }
}

TEST_F(HostCompareTest, ADifferentClassWithADifferentStreamShowsWhereAndWhatDiffers) {
  const HostJob& job = JobOf("quant=q8_0");
  const HostRun* bob = nullptr;
  for (const HostRun& r : job.runs) {
    if (r.run.run_id == "run-q-bob") bob = &r;
  }
  ASSERT_NE(bob, nullptr);
  EXPECT_EQ(bob->run.contributor, "bob");
  EXPECT_EQ(bob->run.host, "fp-b");
  EXPECT_NE(bob->run.fingerprint_class, job.runs[0].run.fingerprint_class);
  EXPECT_FALSE(bob->same_stream);
  EXPECT_EQ(bob->first_difference, 25u);
  EXPECT_GT(bob->kld_mean, 0.0);
  EXPECT_DOUBLE_EQ(bob->top1_agreement, 1.0);
  ASSERT_EQ(bob->fingerprints.size(), 2u);
  const FingerprintComparison& host = bob->fingerprints[0];
  EXPECT_EQ(host.kind, "host");
  ASSERT_EQ(host.differences.size(), 1u);
  EXPECT_EQ(host.differences[0].field, "host.cpu.model_name");
  EXPECT_EQ(host.differences[0].group, fingerprint::DiffGroup::kHardware);

  const std::string text = RenderHostText(report_);
  EXPECT_NE(text.find("3 of 3 jobs ran on more than one host"), std::string::npos) << text;
  EXPECT_NE(text.find("== job job-3: quant=q8_0, workload wiki, repeat 0 (3 hosts) =="),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("host.cpu.model_name"), std::string::npos) << text;
  EXPECT_NE(text.find("AMD EPYC 9654"), std::string::npos) << text;

  nlohmann::json json = nlohmann::json::parse(RenderHostJson(report_));
  EXPECT_EQ(json["schema"], "orch.report-hosts/1");
  const nlohmann::json& runs = json["jobs"][2]["runs"];
  EXPECT_EQ(runs[0]["reference"], true);
  EXPECT_EQ(runs[2]["run"], "run-q-bob");
  EXPECT_EQ(runs[2]["same_stream"], false);
  EXPECT_EQ(runs[2]["first_difference"], 25);
  EXPECT_EQ(runs[2]["fingerprints"][0]["differences"][0]["group"], "hardware");
}

TEST_F(HostCompareTest, ASameClassTwinIsComparedAsAnotherHostToo) {
  const HostJob& job = JobOf("quant=q8_0");
  ASSERT_EQ(job.runs.size(), 3u);
  const HostRun& alice = job.runs[1];  // run-q-alice sorts before run-q-bob
  EXPECT_EQ(alice.run.run_id, "run-q-alice");
  EXPECT_EQ(alice.run.fingerprint_class, job.runs[0].run.fingerprint_class);
  EXPECT_EQ(alice.first_difference, 20u);
  ASSERT_EQ(alice.fingerprints[0].differences.size(), 1u);
  EXPECT_EQ(alice.fingerprints[0].differences[0].field, "host.memory_bytes");
}

TEST(HostCompareStandaloneTest, ALabOnlyExperimentOnOneHostListsNoJob) {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  testing::BuildStandardExperiment(*store);
  Result<ExperimentInput> input = LoadExperiment(*store, "standard");
  ASSERT_TRUE(input.ok());
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<HostReport> report = BuildHostReport(*input, *source);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->jobs_total, 8);
  EXPECT_TRUE(report->jobs.empty());
  EXPECT_EQ(RenderHostText(*report),
            "experiment standard: 0 of 8 jobs ran on more than one host\n");
}

}  // namespace
}  // namespace orch::report
