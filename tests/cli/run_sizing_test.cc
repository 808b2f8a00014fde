#include "cli/run_sizing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/map_source_reader.h"

namespace orch::cli {
namespace {

using ::testing::HasSubstr;

// A spec of `repeats` baseline jobs; `threads` adds the axis (and an alternative).
planner::Plan PlanWith(int repeats, const std::string& threads = "") {
  std::string spec = R"([experiment]
name = "s"
[model]
synth = "llama:vocab=512"
[[workloads]]
name = "w"
kind = "teacher_forced"
text = "hello"
positions = 4
[baseline]
engine = "llama.cpp@v0.4.0"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
)";
  if (!threads.empty()) spec += "threads = " + threads + "\n[alternatives]\nthreads = [8]\n";
  spec += "[repeats]\nbaseline = " + std::to_string(repeats) + "\n";
  orch::testing::MapSourceReader reader;
  planner::PlanOutcome outcome = planner::PlanSpec(spec, "s.toml", reader);
  EXPECT_TRUE(outcome.plan.has_value());
  return *outcome.plan;
}

TEST(RunSizingTest, WithoutAThreadsAxisTwoAgentsShareTheCores) {
  Sizing size = SizeAgents(PlanWith(4), 16, 0);
  EXPECT_EQ(size.agents, 2);
  EXPECT_EQ(size.threads, 8);
  EXPECT_EQ(size.why,
            "2 agents x 8 threads on 16 cores (set threads in the spec, or --agents, to choose)");
}

TEST(RunSizingTest, OnTwoCoresEachDriverGetsOneThread) {
  Sizing size = SizeAgents(PlanWith(4), 2, 0);
  EXPECT_EQ(size.agents, 2);
  EXPECT_EQ(size.threads, 1);
  EXPECT_THAT(size.why, HasSubstr("2 agents x 1 thread on 2 cores"));
}

TEST(RunSizingTest, TheSpecsThreadsDecideHowManyAgentsFit) {
  Sizing size = SizeAgents(PlanWith(4, "2"), 16, 0);
  EXPECT_EQ(size.agents, 2) << "the largest threads value (8) decides";
  EXPECT_EQ(size.threads, 0) << "no share is imposed on the drivers";
  EXPECT_THAT(size.why, HasSubstr("x 8 threads (the spec's threads)"));
}

TEST(RunSizingTest, NeverMoreAgentsThanJobsAndAgentsFlagWins) {
  EXPECT_EQ(SizeAgents(PlanWith(1), 16, 0).agents, 1);
  EXPECT_EQ(SizeAgents(PlanWith(1), 16, 0).threads, 16);
  Sizing requested = SizeAgents(PlanWith(4), 16, 4);
  EXPECT_EQ(requested.agents, 4);
  EXPECT_EQ(requested.threads, 4);
}

}  // namespace
}  // namespace orch::cli
