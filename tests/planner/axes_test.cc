#include "planner/axes.h"

#include <gtest/gtest.h>

namespace orch::planner {
namespace {

AxisValue Norm(std::string_view axis, const AxisValue& raw) {
  Result<AxisValue> v = NormaliseAxisValue(*FindAxis(axis), raw);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : AxisValue();
}

std::string NormError(std::string_view axis, const AxisValue& raw) {
  Result<AxisValue> v = NormaliseAxisValue(*FindAxis(axis), raw);
  EXPECT_FALSE(v.ok());
  return v.ok() ? "" : v.status().message();
}

TEST(AxesTest, KnowsStandardExtraAndKnobAxes) {
  EXPECT_TRUE(FindAxis("engine")->standard);
  EXPECT_FALSE(FindAxis("threads")->standard);
  EXPECT_EQ(FindAxis("sampler.seed")->scope, AxisScope::kGenerateOnly);
  EXPECT_EQ(FindAxis("knob.max_num_seqs")->type, AxisType::kAny);
  EXPECT_EQ(FindAxis("knob."), nullptr);
  EXPECT_EQ(FindAxis("flash"), nullptr);
}

TEST(AxesTest, SuggestsCloseNamesOnly) {
  EXPECT_EQ(SuggestAxis("atention"), "attention");
  EXPECT_EQ(SuggestAxis("sampler.sed"), "sampler.seed");
  EXPECT_EQ(SuggestAxis("completely_different"), "");
}

TEST(AxesTest, LowercasesAndTrimsNames) {
  EXPECT_EQ(Norm("quant", AxisValue::String(" Q4_K_M ")), AxisValue::String("q4_k_m"));
  EXPECT_EQ(Norm("engine", AxisValue::String("vLLM@0.11")), AxisValue::String("vllm@0.11"));
  EXPECT_EQ(Norm("chat_template", AxisValue::String("ChatML")), AxisValue::String("ChatML"));
}

TEST(AxesTest, FoldsEqualKvPairs) {
  EXPECT_EQ(Norm("kv", AxisValue::String("q8_0/q8_0")), AxisValue::String("q8_0"));
  EXPECT_EQ(Norm("kv", AxisValue::String("q8_0 / F16")), AxisValue::String("q8_0/f16"));
  EXPECT_EQ(NormError("kv", AxisValue::String("q8_0/")),
            "expected one cache type or \"K/V\" (e.g. \"q8_0/f16\"), got \"q8_0/\"");
}

TEST(AxesTest, MapsBooleansForAttentionAndRepack) {
  EXPECT_EQ(Norm("attention", AxisValue::Bool(true)), AxisValue::String("on"));
  EXPECT_EQ(Norm("repack", AxisValue::String("off")), AxisValue::Bool(false));
  EXPECT_EQ(NormError("repack", AxisValue::Int(1)),
            "expected true/false (or \"on\"/\"off\"), got the integer 1");
}

TEST(AxesTest, ChecksHardwareClasses) {
  EXPECT_EQ(Norm("hardware", AxisValue::String("GPU:RTX-PRO-6000")),
            AxisValue::String("gpu:rtx-pro-6000"));
  EXPECT_EQ(NormError("hardware", AxisValue::String("tpu")),
            "expected \"cpu\", \"cpu:<isa>\", \"gpu\" or \"gpu:<model>\", got \"tpu\"");
}

TEST(AxesTest, ChecksNumericTypesAndBounds) {
  EXPECT_EQ(Norm("sampler.temperature", AxisValue::Int(0)), AxisValue::Float(0.0));
  EXPECT_EQ(NormError("tp", AxisValue::Float(2.0)),
            "expected an integer in [1, 1024], got the number 2");
  EXPECT_EQ(NormError("threads", AxisValue::Int(0)), "threads must be in [1, 4096], got 0");
  EXPECT_EQ(NormError("sampler.top_p", AxisValue::Float(1.5)),
            "sampler.top_p must be in [0, 1], got 1.5");
  EXPECT_EQ(NormError("quant", AxisValue::Int(4)),
            "expected a string (weight quantization, e.g. \"q4_0\", \"bf16\", \"fp8\"), got the "
            "integer 4");
}

TEST(AxesTest, LoadAxesApplyToEveryWorkloadAndAreAtLeastOneRequest) {
  ASSERT_NE(FindAxis("load.concurrency"), nullptr);
  EXPECT_EQ(FindAxis("load.concurrency")->scope, AxisScope::kAllWorkloads);
  EXPECT_EQ(Norm("load.concurrency", AxisValue::Int(4)), AxisValue::Int(4));
  EXPECT_EQ(NormError("load.concurrency", AxisValue::Int(0)),
            "load.concurrency must be in [1, 4096], got 0");
  EXPECT_EQ(Norm("load.seed", AxisValue::Int(4294967295)), AxisValue::Int(4294967295));
  EXPECT_EQ(NormError("load.seed", AxisValue::Int(4294967296)),
            "load.seed must be in [0, 4294967295], got 4294967296");
}

}  // namespace
}  // namespace orch::planner
