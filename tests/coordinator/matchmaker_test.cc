#include "coordinator/matchmaker.h"

#include <gtest/gtest.h>

namespace orch::coordinator {
namespace {

protocol::Capabilities GpuBox() {
  return {{"llama.cpp@b8390", "vllm@0.9.1"}, "gpu:h100", 4, 2, {"sha256:abc"}};
}

TEST(MatchmakerTest, MatchesWhenEveryRequirementIsMet) {
  EXPECT_TRUE(Satisfies({"vllm@0.9.1", "gpu:h100", 2, "sha256:abc"}, GpuBox()));
}

TEST(MatchmakerTest, EmptyRequirementsMatchAnything) { EXPECT_TRUE(Satisfies({}, GpuBox())); }

TEST(MatchmakerTest, EachUnmetRequirementRefuses) {
  EXPECT_FALSE(Satisfies({"sglang@1", "gpu:h100", 0, ""}, GpuBox()));
  EXPECT_FALSE(Satisfies({"vllm@0.9.1", "cpu", 0, ""}, GpuBox()));
  EXPECT_FALSE(Satisfies({"vllm@0.9.1", "gpu:h100", 8, ""}, GpuBox()));
  EXPECT_FALSE(Satisfies({"vllm@0.9.1", "gpu:h100", 1, "sha256:def"}, GpuBox()));
}

TEST(MatchmakerTest, SynthesizedModelsNeedNoFile) {
  EXPECT_TRUE(Satisfies({"", "", 0, "synth:llama:vocab=512"}, GpuBox()));
}

TEST(MatchmakerTest, KeysAreEqualExactlyForEqualRequirements) {
  EXPECT_EQ(RequirementKey({"a", "b", 1, "m"}), RequirementKey({"a", "b", 1, "m"}));
  EXPECT_NE(RequirementKey({"a", "b", 1, "m"}), RequirementKey({"a", "b", 2, "m"}));
  EXPECT_NE(RequirementKey({"ab", "", 0, ""}), RequirementKey({"a", "b", 0, ""}));
}

const protocol::Requirements kNeeds{"llama.cpp@b8390", "cpu", 0, "sha256:abc"};
const protocol::WarmSession kWarmQ8{"llama.cpp@b8390", "sha256:abc", {{"quant", "q8_0"}}};

TEST(MatchmakerTest, AJobFitsAWarmSessionOfItsEngineModelAndLoadAxisValues) {
  std::vector<protocol::KeyValue> q8 = {{"quant", "q8_0"}, {"seed", "3"}};
  EXPECT_TRUE(FitsWarmSession(kNeeds, q8, kWarmQ8));
  EXPECT_FALSE(FitsWarmSession(kNeeds, {{"quant", "q4_0"}, {"seed", "3"}}, kWarmQ8));
  EXPECT_FALSE(FitsWarmSession(kNeeds, {{"seed", "3"}}, kWarmQ8)) << "the axis is missing";
  EXPECT_FALSE(FitsWarmSession({"llama.cpp@b8391", "cpu", 0, "sha256:abc"}, q8, kWarmQ8));
  EXPECT_FALSE(FitsWarmSession({"llama.cpp@b8390", "cpu", 0, "sha256:def"}, q8, kWarmQ8));
}

// PendingJobs jobs in dispatch order, each at quant `values[i]`.
struct PendingJobs {
  explicit PendingJobs(const std::vector<std::string>& values) {
    for (const std::string& value : values) coordinates.push_back({{"quant", value}});
    for (const auto& coordinate : coordinates) candidates.push_back({&kNeeds, &coordinate, 0});
  }
  std::vector<std::vector<protocol::KeyValue>> coordinates;
  std::vector<WarmCandidate> candidates;
};

TEST(MatchmakerTest, AWarmSessionPrefersTheFirstJobThatFitsIt) {
  PendingJobs pending({"q4_0", "f16", "q8_0", "q8_0"});
  EXPECT_EQ(PickWarmJob(pending.candidates, {kWarmQ8}), std::optional<std::size_t>(2));
  EXPECT_EQ(PickWarmJob(pending.candidates, {}), std::nullopt);
  PendingJobs none({"q4_0", "f16"});
  EXPECT_EQ(PickWarmJob(none.candidates, {kWarmQ8}), std::nullopt) << "no job fits: FIFO";
}

TEST(MatchmakerTest, AJobPassedOverTooOftenIsNotPassedOverAgain) {
  PendingJobs pending({"q4_0", "q8_0"});
  // Each dispatch passes over the q4_0 job once; a new q8_0 job keeps arriving.
  int picks = 0;
  while (std::optional<std::size_t> pick = PickWarmJob(pending.candidates, {kWarmQ8}, 5)) {
    ASSERT_EQ(*pick, 1u);
    pending.candidates[0].passed_over += 1;
    ASSERT_LT(++picks, 100) << "the first job starves";
  }
  EXPECT_EQ(picks, 5);
  EXPECT_EQ(pending.candidates[0].passed_over, 5u);
}

TEST(MatchmakerTest, OnlyTheJobsBeforeThePickCountAsPassedOver) {
  PendingJobs pending({"q8_0", "q4_0"});
  pending.candidates[1].passed_over = kMaxPassedOver;  // behind the pick: not passed over
  EXPECT_EQ(PickWarmJob(pending.candidates, {kWarmQ8}), std::optional<std::size_t>(0));
}

}  // namespace
}  // namespace orch::coordinator
