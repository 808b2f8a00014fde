#include "planner/capabilities.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Coordinate LlamaBaseline() {
  return {{"engine", AxisValue::String("llama.cpp@v0.4.0")},
          {"quant", AxisValue::String("q4_0")},
          {"kv", AxisValue::String("f16")},
          {"attention", AxisValue::String("off")},
          {"tp", AxisValue::Int(1)},
          {"hardware", AxisValue::String("cpu")}};
}

std::vector<CapabilityProblem> Check(const Coordinate& c) {
  return CheckCoordinate(*FindEngineCapabilities("llama.cpp"), c);
}

std::vector<CapabilityProblem> CheckWith(const std::string& axis, const AxisValue& value) {
  Coordinate c = LlamaBaseline();
  c[axis] = value;
  return Check(c);
}

TEST(CapabilitiesTest, FamilyIsTheEngineLabelBeforeTheBuild) {
  EXPECT_EQ(EngineFamily("llama.cpp@b8390"), "llama.cpp");
  EXPECT_EQ(EngineFamily("vllm"), "vllm");
  EXPECT_NE(FindEngineCapabilities("vllm"), nullptr);
  EXPECT_EQ(FindEngineCapabilities("tgi"), nullptr);
}

TEST(CapabilitiesTest, ServerEnginesAreDeclaredByTheirDrivers) {
  for (const char* family : {"llama-server", "vllm", "sglang", "ollama"}) {
    const EngineCapabilities* caps = FindEngineCapabilities(family);
    ASSERT_NE(caps, nullptr) << family;
    EXPECT_EQ(caps->driver, std::string("orch-driver-") + family);
    EXPECT_NE(caps->FindAxis("slots"), nullptr) << family;
    EXPECT_NE(caps->FindAxis("load.concurrency"), nullptr) << family;
    EXPECT_NE(caps->FindAxis("load.seed"), nullptr) << family;
  }
  Coordinate c = LlamaBaseline();
  c["engine"] = AxisValue::String("llama-server@b8390");
  c["slots"] = AxisValue::Int(4);
  EXPECT_THAT(CheckCoordinate(*FindEngineCapabilities("llama-server"), c), IsEmpty());
  // llama.cpp runs in-process: one sequence at a time, so slots = 1 only.
  std::vector<CapabilityProblem> problems = Check(c);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, ProblemKind::kValue);
  EXPECT_THAT(problems[0].axes, ::testing::ElementsAre("slots"));
  c["slots"] = AxisValue::Int(1);
  EXPECT_THAT(Check(c), IsEmpty());
}

TEST(CapabilitiesTest, LlamaCppTableIsTheDriversDeclaration) {
  const EngineCapabilities* caps = FindEngineCapabilities("llama.cpp");
  ASSERT_NE(caps, nullptr);
  EXPECT_EQ(caps->driver, "orch-driver-llamacpp");
  EXPECT_EQ(caps->rules.size(), 2u);
  ASSERT_NE(caps->FindAxis("sampler.seed"), nullptr);
  EXPECT_EQ(caps->FindAxis("sampler.seed")->max, 4294967295.0);
}

TEST(CapabilitiesTest, AcceptsAValidLlamaCppCoordinate) {
  EXPECT_THAT(Check(LlamaBaseline()), IsEmpty());
}

TEST(CapabilitiesTest, QuantizedVCacheNeedsFlashAttentionOnNotOffOrAuto) {
  for (const char* attention : {"off", "auto"}) {
    Coordinate c = LlamaBaseline();
    c["kv"] = AxisValue::String("q8_0");
    c["attention"] = AxisValue::String(attention);
    std::vector<CapabilityProblem> problems = Check(c);
    ASSERT_EQ(problems.size(), 1u) << attention;
    EXPECT_THAT(problems[0].axes, ElementsAre("kv", "attention"));
    EXPECT_EQ(problems[0].kind, ProblemKind::kCombination);
    EXPECT_EQ(problems[0].message,
              "kv = \"q8_0\" needs attention = \"on\", but attention = \"" +
                  std::string(attention) +
                  "\": llama.cpp supports a quantized V cache only with flash attention; a "
                  "K/V pair with an unquantized V half (e.g. \"q8_0/f16\") runs without it");
  }
  Coordinate c = LlamaBaseline();
  c["kv"] = AxisValue::String("q8_0");
  c["attention"] = AxisValue::String("on");
  EXPECT_THAT(Check(c), IsEmpty());
  c["attention"] = AxisValue::String("off");
  c["kv"] = AxisValue::String("q8_0/f16");  // only K quantized: fine without FA
  EXPECT_THAT(Check(c), IsEmpty());
}

TEST(CapabilitiesTest, RejectsValuesTheEngineDoesNotHave) {
  Coordinate c = LlamaBaseline();
  c["quant"] = AxisValue::String("nvfp4");
  c["kv"] = AxisValue::String("f16/int4");
  c["attention"] = AxisValue::String("on");
  std::vector<CapabilityProblem> problems = Check(c);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_THAT(problems[0].message, HasSubstr("llama.cpp does not support kv = \"f16/int4\"; "
                                             "expected T or \"K/V\" with T one of f32, f16,"));
  EXPECT_THAT(problems[1].message, HasSubstr("llama.cpp does not support quant = \"nvfp4\""));
}

TEST(CapabilitiesTest, RejectsTernaryWeightsTheDriverCannotMake) {
  std::vector<CapabilityProblem> problems = CheckWith("quant", AxisValue::String("tq1_0"));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, ProblemKind::kValue);
  EXPECT_THAT(problems[0].message,
              HasSubstr("llama.cpp does not support quant = \"tq1_0\"; expected one of f32, "
                        "f16, bf16, q8_0,"));
}

TEST(CapabilitiesTest, SeedMustFitTheDriversUint32) {
  EXPECT_THAT(CheckWith("sampler.seed", AxisValue::Int(4294967295)), IsEmpty());
  std::vector<CapabilityProblem> problems = CheckWith("sampler.seed", AxisValue::Int(4294967296));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message,
            "llama.cpp accepts sampler.seed in [0, 4294967295], got 4294967296");
}

TEST(CapabilitiesTest, AcceptedBoundsAreTheRegistrysNarrowedByTheDeclaration) {
  const EngineCapabilities& llama = *FindEngineCapabilities("llama.cpp");
  std::optional<AcceptedValues> seed = AcceptedFor(llama, "sampler.seed");
  ASSERT_TRUE(seed.has_value());
  EXPECT_EQ(seed->min, 0);
  EXPECT_EQ(seed->max, 4294967295.0);
  std::optional<AcceptedValues> threads = AcceptedFor(llama, "threads");
  ASSERT_TRUE(threads.has_value());
  EXPECT_EQ(threads->min, 1);     // the registry's: the driver also takes 0
  EXPECT_EQ(threads->max, 4096);  // the registry's: the driver takes up to 2^24
  EXPECT_FALSE(AcceptedFor(llama, "knob.x").has_value());
}

TEST(CapabilitiesTest, SamplerOrderItemsAndCpuVariantCharactersAreChecked) {
  EXPECT_THAT(CheckWith("sampler.order", AxisValue::String("top_k,temperature")), IsEmpty());
  std::vector<CapabilityProblem> order =
      CheckWith("sampler.order", AxisValue::String("top_k,warp"));
  ASSERT_EQ(order.size(), 1u);
  EXPECT_THAT(order[0].message, HasSubstr("expected a comma list of penalties, top_k,"));
  EXPECT_THAT(CheckWith("cpu_backend", AxisValue::String("haswell")), IsEmpty());
  EXPECT_EQ(CheckWith("cpu_backend", AxisValue::String("../x")).size(), 1u);
}

TEST(CapabilitiesTest, RejectsAxesTheEngineDoesNotHaveButPassesKnobs) {
  Coordinate c = LlamaBaseline();
  c["engine"] = AxisValue::String("vllm@0.11.0");
  c["quant"] = AxisValue::String("bf16");
  c["kv"] = AxisValue::String("bf16");
  c["attention"] = AxisValue::String("triton");
  c["cpu_backend"] = AxisValue::String("haswell");
  c["knob.enforce_eager"] = AxisValue::Bool(true);
  std::vector<CapabilityProblem> problems = CheckCoordinate(*FindEngineCapabilities("vllm"), c);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, ProblemKind::kUnknownAxis);
  EXPECT_EQ(problems[0].message,
            "vllm has no axis \"cpu_backend\"; remove it for this engine, or pass it as "
            "knob.cpu_backend if the driver understands it");
}

TEST(CapabilitiesTest, LlamaCppCannotSplitOverCpuDevices) {
  Coordinate c = LlamaBaseline();
  c["tp"] = AxisValue::Int(2);
  std::vector<CapabilityProblem> problems = Check(c);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0].axes, ElementsAre("tp", "hardware"));
  EXPECT_EQ(problems[0].message,
            "tp = 2 needs hardware = \"gpu...\", but hardware = \"cpu\": llama.cpp splits "
            "layers only across GPUs; use tp = 1 on CPU");
  c["hardware"] = AxisValue::String("gpu:h100");
  EXPECT_THAT(Check(c), IsEmpty());
}

TEST(CapabilitiesTest, RuleDoesNotApplyWhenTheCoordinateLacksItsAxes) {
  Coordinate c = LlamaBaseline();
  c["kv"] = AxisValue::String("q8_0");
  c.erase("attention");
  EXPECT_THAT(Check(c), IsEmpty());
}

}  // namespace
}  // namespace orch::planner
