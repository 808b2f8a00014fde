// The llama.cpp driver and the planner agree on what a llama.cpp cell may be:
// the planner's embedded declaration is the driver's own (checked in as
// planner/declarations/llama.cpp.json), and every value the planner accepts
// for every llama.cpp axis is one the driver's job parser accepts.
#include "drivers/llamacpp/capabilities_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "drivers/llamacpp/job_settings.h"
#include "planner/capabilities.h"
#include "tests/support/subprocess.h"

namespace orch::drivers::llamacpp {
namespace {

using nlohmann::json;
using planner::AxisValue;
using planner::Coordinate;
using planner::ProblemKind;

const std::string kDeclaration =
    std::string(ORCH_SOURCE_DIR) + "/planner/declarations/llama.cpp.json";
const char kRegenerate[] =
    "; regenerate it with `ORCH_UPDATE_GOLDEN=1 ctest --test-dir BUILD -R "
    "LlamaCppCapabilitiesTest` or `BUILD/drivers/llamacpp/orch-driver-llamacpp-REL "
    "capabilities --json > planner/declarations/llama.cpp.json`, then reconfigure";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const planner::EngineCapabilities& Planner() {
  const planner::EngineCapabilities* caps = planner::FindEngineCapabilities("llama.cpp");
  EXPECT_NE(caps, nullptr);
  return *caps;
}

// A job document as the agent hands it over: plan values as JSON, workload
// and model just valid.
json JobWith(const Coordinate& coordinate) {
  json c = json::object();
  for (const auto& [axis, value] : coordinate) c[axis] = json::parse(value.ToCanonicalJson());
  return {
      {"coordinate", c},
      {"workload", {{"name", "w"}, {"kind", "teacher_forced"}, {"text", "x"}, {"positions", 1}}},
      {"model", {{"requirement", "synth:llama"}}}};
}

Coordinate Base(const std::string& attention, const std::string& hardware) {
  return {{"engine", AxisValue::String("llama.cpp@b8390")},
          {"quant", AxisValue::String("q4_0")},
          {"kv", AxisValue::String("f16")},
          {"attention", AxisValue::String(attention)},
          {"tp", AxisValue::Int(1)},
          {"hardware", AxisValue::String(hardware)}};
}

std::string Describe(const Coordinate& c) {
  std::string out;
  for (const auto& [axis, value] : c) out += axis + "=" + value.ToText() + " ";
  return out;
}

std::vector<std::string> StringSamples(const planner::DeclaredAxis& axis) {
  std::vector<std::string> out(axis.values.begin(), axis.values.end());
  if (axis.pair) {
    for (const std::string& v : axis.values) out.push_back(axis.values[0] + "/" + v);
    for (const std::string& v : axis.values) out.push_back(v + "/" + axis.values[0]);
  }
  if (axis.list) {
    std::string all;
    for (const std::string& v : axis.values) all += (all.empty() ? "" : ",") + v;
    out.push_back(all);
  }
  if (!axis.chars.empty()) out.push_back(axis.chars);
  return out;
}

// Open strings: the candidates the planner accepts for `axis` (its own value
// check, combinations aside).
std::vector<std::string> OpenSamples(const std::string& axis) {
  std::vector<std::string> out;
  for (const char* v : {"best", "haswell", "cpu", "gpu", "gpu:h100", "llama.cpp@b8390", "chatml"}) {
    Coordinate c = Base("on", "gpu");
    c[axis] = AxisValue::String(v);
    std::vector<planner::CapabilityProblem> problems = CheckCoordinate(Planner(), c);
    if (std::none_of(problems.begin(), problems.end(), [](const planner::CapabilityProblem& p) {
          return p.kind != ProblemKind::kCombination;
        }))
      out.push_back(v);
  }
  return out;
}

// Every value the planner accepts for `axis`: each enumerated value (each half
// of a pair, each item of a list), numeric bounds, both booleans.
std::vector<AxisValue> AcceptedSamples(const std::string& axis) {
  std::optional<planner::AcceptedValues> accepted = planner::AcceptedFor(Planner(), axis);
  if (!accepted) return {};
  std::vector<AxisValue> raw;
  switch (accepted->def->type) {
    case planner::AxisType::kInt:
      raw = {AxisValue::Int(static_cast<std::int64_t>(accepted->min)),
             AxisValue::Int(static_cast<std::int64_t>(accepted->max))};
      break;
    case planner::AxisType::kFloat:
      raw = {AxisValue::Float(accepted->min), AxisValue::Float(accepted->max)};
      break;
    case planner::AxisType::kBool:
      raw = {AxisValue::Bool(true), AxisValue::Bool(false)};
      break;
    default:
      for (const std::string& s : StringSamples(*accepted->declared))
        raw.push_back(AxisValue::String(s));
      if (accepted->declared->values.empty())
        for (const std::string& s : OpenSamples(axis)) raw.push_back(AxisValue::String(s));
  }
  std::vector<AxisValue> out;
  for (const AxisValue& value : raw) {
    Result<AxisValue> normal = planner::NormaliseAxisValue(*accepted->def, value);
    if (normal.ok()) out.push_back(*normal);
  }
  return out;
}

TEST(LlamaCppCapabilitiesTest, CheckedInDeclarationIsWhatTheDriverDeclares) {
  if (std::getenv("ORCH_UPDATE_GOLDEN") != nullptr)
    std::ofstream(kDeclaration) << CapabilitiesJson();
  EXPECT_EQ(Slurp(kDeclaration), CapabilitiesJson())
      << kDeclaration << " differs from the driver's declaration (drivers/llamacpp/job_axes.cc)"
      << kRegenerate;
}

TEST(LlamaCppCapabilitiesTest, PlannerEmbedsTheCheckedInDeclaration) {
  const std::vector<std::string_view>& embedded = planner::EmbeddedDeclarations();
  EXPECT_NE(std::find(embedded.begin(), embedded.end(), Slurp(kDeclaration)), embedded.end())
      << "the planner library was built from another " << kDeclaration << kRegenerate;
}

TEST(LlamaCppCapabilitiesTest, EveryBuiltDriverPrintsTheCheckedInDeclaration) {
  std::vector<std::string> releases;
  std::stringstream list(ORCH_LLAMACPP_RELEASES);
  for (std::string r; std::getline(list, r, ',');)
    if (!r.empty()) releases.push_back(r);
  if (releases.empty()) GTEST_SKIP() << "no llama.cpp engine build (scripts/setup-engines)";
  for (const std::string& release : releases) {
    std::string driver =
        std::string(ORCH_BINARY_DIR) + "/drivers/llamacpp/orch-driver-llamacpp-" + release;
    testing::ProcessResult r = testing::RunProcess({driver, "capabilities", "--json"});
    ASSERT_EQ(r.exit_code, 0) << driver << ": " << r.err;
    EXPECT_EQ(r.out, Slurp(kDeclaration))
        << driver << " declares something else than " << kDeclaration << kRegenerate;
  }
}

TEST(LlamaCppCapabilitiesTest, PlannerKnowsEveryDeclaredAxis) {
  for (const planner::DeclaredAxis& axis : Planner().axes)
    EXPECT_TRUE(planner::AcceptedFor(Planner(), axis.name).has_value()) << axis.name;
}

struct Tally {
  int accepted = 0;
  int combinations = 0;
};

// When the planner finds no problem in `c`, ParseJob accepts it; when the
// planner finds one, it is a combination and ParseJob refuses it as
// invalid_combination.
void ExpectDriverAgrees(const Coordinate& c, Tally& tally) {
  std::vector<planner::CapabilityProblem> problems = CheckCoordinate(Planner(), c);
  Result<JobSettings> job = ParseJob(JobWith(c).dump());
  if (problems.empty()) {
    EXPECT_TRUE(job.ok()) << Describe(c) << ": " << job.status().ToString();
    ++tally.accepted;
    return;
  }
  ++tally.combinations;
  EXPECT_EQ(problems[0].kind, ProblemKind::kCombination) << problems[0].message;
  ASSERT_FALSE(job.ok()) << Describe(c) << " planner: " << problems[0].message;
  EXPECT_EQ(ErrorCodeFor(job.status()), "invalid_combination") << Describe(c);
}

// Each accepted value of each axis, in each context: attention off/on/auto on
// CPU and on GPU.
TEST(LlamaCppCapabilitiesTest, DriverAcceptsEveryValueThePlannerAccepts) {
  Tally tally;
  for (const planner::DeclaredAxis& axis : Planner().axes) {
    std::vector<AxisValue> samples = AcceptedSamples(axis.name);
    EXPECT_FALSE(samples.empty()) << axis.name;
    for (const AxisValue& sample : samples) {
      for (const char* attention : {"off", "on", "auto"}) {
        for (const char* hardware : {"cpu", "gpu:h100"}) {
          Coordinate c = Base(attention, hardware);
          c[axis.name] = sample;
          ExpectDriverAgrees(c, tally);
        }
      }
    }
  }
  EXPECT_GT(tally.accepted, 500);
  EXPECT_GT(tally.combinations, 50);
}

TEST(LlamaCppCapabilitiesTest, PlannerAndDriverRefuseTheSameThreeExamples) {
  struct Case {
    const char* axis;
    AxisValue value;
    ProblemKind kind;
    const char* code;
  } cases[] = {
      {"quant", AxisValue::String("tq1_0"), ProblemKind::kValue, "invalid_job"},
      {"sampler.seed", AxisValue::Int(4294967296), ProblemKind::kValue, "invalid_job"},
      {"kv", AxisValue::String("q4_0"), ProblemKind::kCombination, "invalid_combination"},
  };
  for (const Case& c : cases) {
    Coordinate coordinate = Base("auto", "cpu");
    coordinate[c.axis] = c.value;
    std::vector<planner::CapabilityProblem> problems = CheckCoordinate(Planner(), coordinate);
    ASSERT_EQ(problems.size(), 1u) << c.axis;
    EXPECT_EQ(problems[0].kind, c.kind) << problems[0].message;
    Result<JobSettings> job = ParseJob(JobWith(coordinate).dump());
    ASSERT_FALSE(job.ok()) << c.axis;
    EXPECT_EQ(ErrorCodeFor(job.status()), c.code) << job.status().ToString();
  }
}

}  // namespace
}  // namespace orch::drivers::llamacpp
