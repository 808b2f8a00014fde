// orch bisect against a coordinator that runs elsewhere (docs/bisect.md, "--coordinator"):
// a real coordinator and two agents with the test engine on 127.0.0.1; each round is
// submitted to that coordinator and measured from its store, read beside it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/e2e/local_cluster.h"

namespace orch::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// From and to differ in two knobs; the test engine's rows follow its whole coordinate, so
// neither knob alone gives to: only both together explain the divergence.
constexpr const char* kSpec = R"toml([experiment]
name = "bisect-remote"

[model]
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128"

[[workloads]]
name = "w"
kind = "teacher_forced"
text = "hello hello hello"
positions = 6

[bisect]
from = { engine = "test-engine@1", quant = "f32", kv = "f16", attention = "off", tp = 1, hardware = "cpu", knob.positions = 6, knob.variant = 0, knob.other = 0 }
to = { knob.variant = 1, knob.other = 1 }
)toml";

TEST(BisectClusterTest, EachRoundIsSubmittedToTheCoordinatorAndReadFromItsStore) {
  LocalCluster cluster("bisect-remote");
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator("tcp://127.0.0.1:*"));
  ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("a1"));
  ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("a2"));
  const std::string spec = (cluster.dir() / "spec.toml").string();
  std::ofstream(spec) << kSpec;
  const std::string store = cluster.data_dir().string();

  ProcessResult missing = cluster.Client({"bisect", spec});
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("orch bisect: --coordinator needs --store DIR"));

  ProcessResult run = cluster.Client(
      {"bisect", spec, "--store", store, "--json", "--timeout", "120"}, std::chrono::seconds(150));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err << cluster.Logs();
  EXPECT_THAT(run.err, HasSubstr("experiment bisect-remote: 6 jobs, submitted"));
  EXPECT_THAT(run.err, HasSubstr("[6/6] succeeded 6"));
  EXPECT_THAT(run.err, Not(HasSubstr("agents x"))) << "no local coordinator or agents are started";
  nlohmann::json result = nlohmann::json::parse(run.out);
  EXPECT_EQ(result["verdict"], "explained");
  EXPECT_EQ(result["explaining"], nlohmann::json({"knob.variant", "knob.other"}));
  EXPECT_EQ(result["noise"].get<double>(), 0.0);

  // The coordinator holds the experiment: its jobs ran on its agents.
  std::optional<nlohmann::json> progress = cluster.Progress("bisect-remote");
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->value("succeeded", 0), 6);
  ProcessResult history =
      RunProcess({OrchBinary(), "history", "bisect-remote", "--data-dir", store});
  EXPECT_THAT(history.out, HasSubstr("a1"));
  EXPECT_THAT(history.out, HasSubstr("a2"));

  // Again: nothing new to run.
  ProcessResult again = cluster.Client({"bisect", spec, "--store", store, "--timeout", "60"},
                                       std::chrono::seconds(90));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("6 jobs, already submitted"));
  EXPECT_THAT(again.out,
              HasSubstr("bisection: every axis together (no smaller set does) explains"));
}

}  // namespace
}  // namespace orch::testing
