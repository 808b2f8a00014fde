// A user's own model file on the real engine, as the README shows it: a GGUF made
// with `orch model synth -o`, named in the spec by path and SHA-256, with a pinned
// q8_0 variant file (made with `orch model quantize`) and a q4_0 cell the agent
// quantizes itself. `orch run` offers the files to its agents, the agents advertise
// their hashes, and every cell runs from the right file.
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

constexpr char kRecipe[] =
    "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=5,type=f32";

// `orch ARGS...` with --json, parsed.
json OrchJson(std::vector<std::string> args) {
  args.insert(args.begin(), OrchBinary());
  args.push_back("--json");
  ProcessResult r = RunProcess(args, std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return json::parse(r.out, nullptr, false);
}

std::string Sha256Of(const fs::path& file) {
  ProcessResult r = RunProcess({OrchBinary(), "model", "hash", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out.substr(0, 64);
}

std::string Spec(const std::string& base_sha, const std::string& q8_sha) {
  return R"([experiment]
name = "file-model"

[model]
file = "models/tiny.gguf"
sha256 = ")" +
         base_sha + R"("
variants.q8_0 = { file = "models/tiny-q8_0.gguf", sha256 = ")" +
         q8_sha + R"(" }

[[workloads]]
name = "w"
kind = "teacher_forced"
text = "The quick brown fox jumps over the lazy dog, and then it runs away."
positions = 12

[baseline]
engine = "llama.cpp@v0.4.0"
quant = "f32"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 1

[alternatives]
quant = ["q8_0", "q4_0"]

[repeats]
baseline = 2
cells = 1
)";
}

TEST(LlamaCppFileModelTest, ASpecNamingAGgufByPathRunsWithAPinnedVariantAndAQuantizedCell) {
  fs::path dir = fs::temp_directory_path() / ("orch-file-model-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "models");
  fs::path base = dir / "models" / "tiny.gguf";
  fs::path q8 = dir / "models" / "tiny-q8_0.gguf";
  ProcessResult made = RunProcess({OrchBinary(), "model", "synth", kRecipe, "-o", base.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ProcessResult quantized =
      RunProcess({OrchBinary(), "model", "quantize", base.string(), q8.string(), "q8_0"},
                 std::chrono::seconds(120));
  ASSERT_EQ(quantized.exit_code, 0) << quantized.err;
  std::string base_sha = Sha256Of(base);
  std::string q8_sha = Sha256Of(q8);
  std::ofstream(dir / "spec.toml") << Spec(base_sha, q8_sha);

  std::string data = (dir / "data").string();
  ProcessResult run = RunProcess(
      {OrchBinary(), "run", (dir / "spec.toml").string(), "--data-dir", data, "--timeout", "200"},
      std::chrono::seconds(220));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("[4/4] succeeded 4"));

  json report = OrchJson({"report", "file-model", "--data-dir", data});
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["jobs"]["succeeded"], 4);
  std::string text = report.dump();
  EXPECT_THAT(text, HasSubstr(base_sha)) << "the baseline ran the file itself";
  EXPECT_THAT(text, HasSubstr(q8_sha)) << "the q8_0 cell ran the pinned variant file";
  ProcessResult out = RunProcess({OrchBinary(), "report", "file-model", "--data-dir", data});
  EXPECT_THAT(out.out, HasSubstr("quant=q4_0")) << "the agent quantized the file for q4_0";
  EXPECT_THAT(out.out, HasSubstr("bit-identical"));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

// The README's own-model example, verbatim: the recipe it names gives the file whose
// SHA-256 examples/own-model.toml names, and `orch run` runs it by path.
TEST(LlamaCppFileModelTest, TheOwnModelExampleRunsAsTheReadmeSaysIt) {
  fs::path dir = fs::temp_directory_path() / ("orch-own-model-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "models");
  fs::path examples = fs::path(ORCH_SOURCE_DIR) / "examples";
  fs::copy(examples / "own-model.toml", dir / "own-model.toml");
  fs::copy(examples / "texts", dir / "texts", fs::copy_options::recursive);
  std::ifstream spec(dir / "own-model.toml");
  std::string line, recipe;
  while (std::getline(spec, line)) {
    std::size_t at = line.find("orch model synth ");
    if (at != std::string::npos) recipe = line.substr(at + 17, line.find(" -o") - at - 17);
  }
  ASSERT_FALSE(recipe.empty()) << "the example names the recipe of its model";
  ProcessResult made = RunProcess(
      {OrchBinary(), "model", "synth", recipe, "-o", (dir / "models" / "tiny.gguf").string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ProcessResult run = RunProcess({OrchBinary(), "run", (dir / "own-model.toml").string(),
                                  "--data-dir", (dir / "data").string()},
                                 std::chrono::seconds(200));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("[5/5] succeeded 5"));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace orch::testing
