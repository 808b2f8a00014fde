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

TEST(CapabilitiesTest, FamilyIsTheEngineLabelBeforeTheBuild) {
  EXPECT_EQ(EngineFamily("llama.cpp@b8390"), "llama.cpp");
  EXPECT_EQ(EngineFamily("vllm"), "vllm");
  EXPECT_NE(FindEngineCapabilities("vllm"), nullptr);
  EXPECT_EQ(FindEngineCapabilities("sglang"), nullptr);
}

TEST(CapabilitiesTest, AcceptsAValidLlamaCppCoordinate) {
  EXPECT_THAT(Check(LlamaBaseline()), IsEmpty());
}

TEST(CapabilitiesTest, QuantizedVCacheNeedsFlashAttention) {
  Coordinate c = LlamaBaseline();
  c["kv"] = AxisValue::String("q8_0");
  std::vector<CapabilityProblem> problems = Check(c);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0].axes, ElementsAre("kv", "attention"));
  EXPECT_EQ(problems[0].message,
            "kv = \"q8_0\" quantizes the V cache, which llama.cpp supports only with flash "
            "attention, but attention = \"off\"; use attention = \"on\" for this cell, or keep "
            "the V half unquantized (e.g. kv = \"q8_0/f16\")");
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
  EXPECT_THAT(problems[0].message, HasSubstr("llama.cpp does not support kv = \"f16/int4\""));
  EXPECT_THAT(problems[1].message, HasSubstr("llama.cpp does not support quant = \"nvfp4\""));
}

TEST(CapabilitiesTest, RejectsAxesTheEngineDoesNotHaveButPassesKnobs) {
  Coordinate c = LlamaBaseline();
  c["engine"] = AxisValue::String("vllm@0.11.0");
  c["quant"] = AxisValue::String("bf16");
  c["kv"] = AxisValue::String("bf16");
  c["attention"] = AxisValue::String("triton");
  c["cpu_backend"] = AxisValue::String("haswell");
  c["knob.enforce_eager"] = AxisValue::Bool(true);
  std::vector<CapabilityProblem> problems =
      CheckCoordinate(*FindEngineCapabilities("vllm"), c);
  ASSERT_EQ(problems.size(), 1u);
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
  c["hardware"] = AxisValue::String("gpu:h100");
  EXPECT_THAT(Check(c), IsEmpty());
}

}  // namespace
}  // namespace orch::planner
