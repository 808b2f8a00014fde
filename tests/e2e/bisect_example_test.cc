// orch bisect end to end on the real engine (docs/bisect.md): from and to differ in four
// axes of which one (the weights' quantization) moves the distribution and three (threads,
// context size, micro-batch size) leave llama.cpp's logits bit for bit as they were. The
// first round (each axis alone, each left out, the walk) names quant, with nothing left
// unexplained; the report of the stored experiment says the same, a second orch bisect
// on the same data directory runs nothing again, and orch bisect A B from two of its jobs
// reproduces their divergence and names quant again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string BisectE2eSpec(const fs::path& examples) {
  return R"toml([experiment]
name = "bisect-e2e"

[model]
file = ")toml" +
         (examples / "models/kjv-tiny-f32.gguf").string() + R"toml("
sha256 = "2edb568f0c7576b5b0b77ab7223bf1eb53c47639d55fd53ab4ddbc35b48a7710"

[[workloads]]
name = "verses"
kind = "teacher_forced"
text_file = ")toml" +
         (examples / "texts/kjv-heldout.txt").string() + R"toml("
positions = 96
capture = { top_logits = 20 }

[bisect]
from = { engine = "llama.cpp@v0.4.0", quant = "f32", kv = "f16", attention = "off", tp = 1, hardware = "cpu", threads = 1, ctx = 256, ubatch = 512 }
to = { threads = 2, quant = "q8_0", ctx = 512, ubatch = 32 }
)toml";
}

json ParseJson(const std::string& text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << text;
  return doc;
}

const json* AxisOf(const json& bisect, const std::string& axis) {
  for (const json& a : bisect["by_axis"])
    if (a["axis"] == axis) return &a;
  ADD_FAILURE() << "no axis " << axis;
  return nullptr;
}

TEST(BisectExampleTest, TheOneAxisThatMovesTheDistributionIsNamedOnTheRealEngine) {
  const fs::path dir =
      fs::temp_directory_path() / ("orch-bisect-e2e-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string spec = (dir / "spec.toml").string();
  std::ofstream(spec) << BisectE2eSpec(fs::path(ORCH_SOURCE_DIR) / "examples");
  const std::string data = (dir / "data").string();

  ProcessResult plan = RunProcess(
      {OrchBinary(), "plan", spec, "--json", "--allow-outside-spec-dir"}, std::chrono::seconds(30));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  json planned = ParseJson(plan.out);
  EXPECT_EQ(planned["bisect"]["axes"], json({"threads", "quant", "ctx", "ubatch"}));
  EXPECT_EQ(planned["cells"].size(), 11u) << "from, to, 4 alone, 4 left out, 1 step of the walk";

  std::vector<std::string> bisect = {OrchBinary(), "bisect",     spec,
                                     "--json",     "--data-dir", data,
                                     "--timeout",  "150",        "--allow-outside-spec-dir"};
  ProcessResult run = RunProcess(bisect, std::chrono::seconds(180), dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("orch bisect: round 1 of at most 4, 11 cells: from, to, "));
  EXPECT_THAT(run.err, HasSubstr("[13/13] succeeded 13"));
  json result = ParseJson(run.out);  // stdout holds the JSON alone
  EXPECT_EQ(result["schema"], "orch.bisect/1");
  EXPECT_EQ(result["verdict"], "explained");
  EXPECT_EQ(result["explaining"], json({"quant"}));
  EXPECT_EQ(result["rounds"], 1);
  EXPECT_GT(result["total_kld"].get<double>(), 0.0);
  EXPECT_EQ(result["noise"].get<double>(), 0.0) << "from and to rerun bit for bit";
  EXPECT_TRUE(result["noise_known"].get<bool>());
  // Nothing of the divergence is left: from + quant is to, to - quant is from.
  EXPECT_EQ(result["sufficient_residual"].get<double>(), 0.0);
  EXPECT_EQ(result["necessary_residual"].get<double>(), 0.0);
  for (const char* still : {"threads", "ctx", "ubatch"}) {
    const json* axis = AxisOf(result, still);
    ASSERT_NE(axis, nullptr);
    EXPECT_EQ((*axis)["alone"].get<double>(), 0.0) << still;
    EXPECT_EQ((*axis)["left_out_of_to"].get<double>(), 0.0) << still;
  }
  const json* quant = AxisOf(result, "quant");
  ASSERT_NE(quant, nullptr);
  EXPECT_TRUE((*quant)["moves_alone"].get<bool>());
  EXPECT_TRUE((*quant)["moves_in_to"].get<bool>());
  EXPECT_TRUE(result["interactions"].empty());
  for (const json& cell : result["cells"]) {
    EXPECT_TRUE(cell["missing"].is_null()) << cell.dump();
    const json& side = cell["from"].is_null() ? cell["to"] : cell["from"];
    EXPECT_EQ(side["positions"], 96) << cell.dump();
    EXPECT_EQ(side["exact_positions"], 96) << cell.dump();
  }

  // The stored experiment's report says the same.
  ProcessResult text = RunProcess({OrchBinary(), "report", "bisect-e2e", "--data-dir", data},
                                  std::chrono::seconds(60));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("== bisection =="));
  EXPECT_THAT(text.out,
              HasSubstr("bisection: quant explains the divergence: from + quant matches"));
  // The combinations are no axis's cell: to is not ranked among the axes, and its
  // effective settings are those it asked for (threads = 2).
  EXPECT_THAT(text.out, Not(HasSubstr("to (verses)")));
  EXPECT_THAT(text.out, Not(HasSubstr("Effective settings")));
  ProcessResult report =
      RunProcess({OrchBinary(), "report", "bisect-e2e", "--json", "--data-dir", data},
                 std::chrono::seconds(60));
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(ParseJson(report.out)["bisect"]["explaining"], json({"quant"}));

  // Again on the same data directory: the plan is already there and nothing runs again.
  ProcessResult again = RunProcess(bisect, std::chrono::seconds(120), dir.string());
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.err, HasSubstr("13 jobs, already submitted"));
  EXPECT_EQ(ParseJson(again.out)["explaining"], json({"quant"}));

  // From the store: A is from's run, B the run of to - threads (quant, ctx and ubatch
  // differ). The new bisection's ends rerun A and B on this machine: the divergence it
  // explains is the one the store holds between them, to the last bit.
  std::string a, b;
  for (const json& job : planned["jobs"]) {
    if (job["repeat"] != 0) continue;
    if (job["cell"] == "from") a = job["id"];
    if (job["cell"] == "to - threads") b = job["id"];
  }
  ASSERT_FALSE(a.empty() || b.empty()) << plan.out;
  ProcessResult stored = RunProcess({OrchBinary(), "bisect", a.substr(0, 12), b, "--json",
                                     "--data-dir", data, "--timeout", "150"},
                                    std::chrono::seconds(180), dir.string());
  ASSERT_EQ(stored.exit_code, 0) << stored.out << stored.err;
  json from_store = ParseJson(stored.out);
  EXPECT_EQ(from_store["explaining"], json({"quant"}));
  EXPECT_EQ(from_store["axes"], json({"quant", "ctx", "ubatch"})) << "standard axes first";
  const json& origin = from_store["origin"];
  EXPECT_EQ(origin["b"]["cell"], "to - threads");
  EXPECT_EQ(origin["same_host"], true);
  EXPECT_EQ(origin["kld_method"], "exact");
  EXPECT_EQ(origin["kld_mean"].get<double>(), from_store["total_kld"].get<double>());
  EXPECT_EQ(origin["reproduced_share"], 1.0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::testing
