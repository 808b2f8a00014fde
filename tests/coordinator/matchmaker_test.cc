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

}  // namespace
}  // namespace orch::coordinator
