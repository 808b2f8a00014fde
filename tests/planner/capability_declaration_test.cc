#include "planner/capability_declaration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner/capabilities.h"

namespace orch::planner {
namespace {

using ::testing::HasSubstr;

constexpr char kDeclaration[] = R"json({
  "schema": "orch.capabilities/1", "engine": "toy", "driver": "orch-driver-toy",
  "axes": [
    {"name": "kv", "type": "string", "values": ["f16", "q8_0"], "pair": true, "sets": "cache"},
    {"name": "tp", "type": "integer", "min": 1, "max": 8},
    {"name": "hardware", "type": "string"}
  ],
  "rules": [
    {"when": {"axis": "kv", "part": "v", "in": ["q8_0"]},
     "needs": {"axis": "hardware", "prefix": "gpu"}, "reason": "toy V cache needs a GPU"}
  ]
})json";

TEST(CapabilityDeclarationTest, ReadsAxesValuesBoundsAndRules) {
  Result<EngineCapabilities> caps = ParseCapabilityDeclaration(kDeclaration);
  ASSERT_TRUE(caps.ok()) << caps.status().ToString();
  EXPECT_EQ(caps->family, "toy");
  EXPECT_EQ(caps->driver, "orch-driver-toy");
  ASSERT_EQ(caps->axes.size(), 3u);
  EXPECT_TRUE(caps->FindAxis("kv")->pair);
  EXPECT_EQ(caps->FindAxis("kv")->sets, "cache");
  EXPECT_EQ(caps->FindAxis("tp")->type, DeclaredType::kInteger);
  EXPECT_EQ(caps->FindAxis("tp")->max, 8.0);
  EXPECT_EQ(caps->FindAxis("nope"), nullptr);
  ASSERT_EQ(caps->rules.size(), 1u);
  EXPECT_EQ(caps->rules[0].when.part, "v");
  EXPECT_EQ(caps->rules[0].needs.prefix, "gpu");
}

TEST(CapabilityDeclarationTest, MalformedDeclarationsNameTheField) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"[", "document: not a JSON object"},
      {R"({"schema": "orch.capabilities/2", "engine": "x"})",
       "schema: expected \"orch.capabilities/1\""},
      {R"({"schema": "orch.capabilities/1"})", "document.engine: expected a string"},
      {R"({"schema": "orch.capabilities/1", "engine": "x", "axes": [{"name": "a", "type": "date"}]})",
       "axes[0].type: expected string, integer, number or boolean"},
      {R"({"schema": "orch.capabilities/1", "engine": "x", "rules": [{"when": {"axis": "kv", "part": "x"}, "needs": {"axis": "a"}, "reason": ""}]})",
       "rules[0].when.part: expected \"k\" or \"v\""},
      {R"({"schema": "orch.capabilities/1", "engine": "x", "rules": [{"when": {"axis": "kv"}}]})",
       "rules[0].needs: expected an object"},
  };
  for (const Case& c : cases) {
    Result<EngineCapabilities> caps = ParseCapabilityDeclaration(c.text);
    ASSERT_FALSE(caps.ok()) << c.text;
    EXPECT_THAT(caps.status().message(), HasSubstr(c.expect)) << c.text;
  }
}

TEST(CapabilityDeclarationTest, ConditionsTestHalvesPrefixesAndMinimums) {
  ValueCondition v_half{"kv", "v", {"q8_0"}, "", std::nullopt};
  EXPECT_TRUE(Holds(v_half, AxisValue::String("q8_0")));  // one value is both halves
  EXPECT_TRUE(Holds(v_half, AxisValue::String("f16/q8_0")));
  EXPECT_FALSE(Holds(v_half, AxisValue::String("q8_0/f16")));
  ValueCondition gpu{"hardware", "", {}, "gpu", std::nullopt};
  EXPECT_TRUE(Holds(gpu, AxisValue::String("gpu:h100")));
  EXPECT_FALSE(Holds(gpu, AxisValue::String("cpu")));
  ValueCondition split{"tp", "", {}, "", 2};
  EXPECT_TRUE(Holds(split, AxisValue::Int(2)));
  EXPECT_FALSE(Holds(split, AxisValue::Int(1)));
  EXPECT_EQ(DescribeCondition(v_half), "the V half of kv = \"q8_0\"");
  EXPECT_EQ(DescribeCondition(gpu), "hardware = \"gpu...\"");
  EXPECT_EQ(DescribeCondition(split), "tp >= 2");
}

TEST(CapabilityDeclarationTest, EveryEmbeddedDeclarationParses) {
  ASSERT_FALSE(EmbeddedDeclarations().empty());
  for (std::string_view text : EmbeddedDeclarations()) {
    Result<EngineCapabilities> caps = ParseCapabilityDeclaration(text);
    EXPECT_TRUE(caps.ok()) << caps.status().ToString();
  }
}

// The torch driver's declaration (planner/declarations/torch.json, checked
// against the driver's own output by tests/drivers/torch): every axis it
// declares is one the planner accepts, so no torch cell is refused for an
// axis the planner does not know.
TEST(CapabilityDeclarationTest, PlannerKnowsEveryAxisTheTorchDriverDeclares) {
  const EngineCapabilities* torch = FindEngineCapabilities("torch");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(torch->axes.size(), 23u);
  for (const DeclaredAxis& axis : torch->axes)
    EXPECT_TRUE(AcceptedFor(*torch, axis.name).has_value()) << axis.name;
}

}  // namespace
}  // namespace orch::planner
