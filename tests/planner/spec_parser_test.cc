#include "planner/spec_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/synth_model.h"
#include "model/synth_recipe.h"
#include "tests/planner/planner_test_util.h"

namespace orch::planner {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Replace;
using testing::ValidSpecText;

Spec MustParse(const std::string& text, testing::MapSourceReader& reader) {
  ParsedSpec parsed = ParseSpec(text, "unit.toml", reader);
  for (const Diagnostic& d : parsed.diagnostics.all()) ADD_FAILURE() << d.Format("unit.toml");
  return parsed.spec.value_or(Spec{});
}

Spec MustParse(const std::string& text) {
  testing::MapSourceReader reader;
  return MustParse(text, reader);
}

// ---- accepted constructs ----

TEST(SpecParserTest, ReadsExperimentModelWorkloadsAxesAndRepeats) {
  Spec spec = MustParse(ValidSpecText());
  EXPECT_EQ(spec.name, "unit");
  EXPECT_EQ(spec.description, "a small OFAT study");
  EXPECT_EQ(spec.model.synth,
            "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7,type=f32");
  ASSERT_EQ(spec.workloads.size(), 2u);
  EXPECT_EQ(spec.workloads[0].kind, WorkloadKind::kTeacherForced);
  EXPECT_EQ(spec.workloads[0].text, "The quick brown fox");
  EXPECT_EQ(spec.workloads[0].positions, 16);
  EXPECT_EQ(spec.workloads[0].capture.top_logits, 8);
  EXPECT_EQ(spec.workloads[0].capture.full_every, 4);
  EXPECT_THAT(spec.workloads[0].capture.full_windows, ElementsAre(std::pair(0, 2)));
  EXPECT_EQ(spec.workloads[1].kind, WorkloadKind::kGenerate);
  EXPECT_EQ(spec.workloads[1].prompt, "Once upon a time");
  EXPECT_EQ(spec.workloads[1].max_tokens, 8);
  EXPECT_EQ(spec.baseline_repeats, 3);
  EXPECT_EQ(spec.cell_repeats, 1);
}

TEST(SpecParserTest, KeepsBaselineAxesInFileOrderWithDottedNamesFlattened) {
  Spec spec = MustParse(ValidSpecText());
  std::vector<std::string> names;
  for (const Axis& a : spec.axes) names.push_back(a.name);
  EXPECT_THAT(names, ElementsAre("engine", "quant", "kv", "attention", "tp", "hardware", "threads",
                                 "sampler.seed"));
  EXPECT_EQ(spec.FindAxis("sampler.seed")->baseline, AxisValue::Int(42));
  EXPECT_THAT(spec.FindAxis("quant")->alternatives,
              ElementsAre(AxisValue::String("q8_0"), AxisValue::String("f16")));
}

TEST(SpecParserTest, AcceptsQuotedDottedAxisNames) {
  Spec spec = MustParse(Replace(ValidSpecText(), "sampler.seed = 42", "\"sampler.seed\" = 42"));
  ASSERT_NE(spec.FindAxis("sampler.seed"), nullptr);
  EXPECT_EQ(spec.FindAxis("sampler.seed")->alternatives.size(), 1u);
}

TEST(SpecParserTest, DefaultsCapturePolicyAndRepeats) {
  std::string text =
      Replace(ValidSpecText(),
              "capture = { top_logits = 8, full_every = 4, full_windows = [[0, 2]] }\n", "");
  text = Replace(text, "[repeats]\nbaseline = 3\ncells = 1\n", "");
  Spec spec = MustParse(text);
  EXPECT_EQ(spec.workloads[0].capture.top_logits, 20);
  EXPECT_EQ(spec.workloads[0].capture.full_every, 0);
  EXPECT_TRUE(spec.workloads[0].capture.full_windows.empty());
  EXPECT_EQ(spec.workloads[0].capture.full_row_budget_bytes, 64 << 20);
  EXPECT_EQ(spec.baseline_repeats, 2);
  EXPECT_EQ(spec.cell_repeats, 1);
}

TEST(SpecParserTest, ReadsTextFileThroughTheSourceReader) {
  testing::MapSourceReader reader;
  reader.Add("prompts/readme.txt", "file text of a readme\n");
  Spec spec = MustParse(Replace(ValidSpecText(), "text = \"The quick brown fox\"",
                                "text_file = \"prompts/readme.txt\""),
                        reader);
  EXPECT_EQ(spec.workloads[0].text, "file text of a readme\n");
  EXPECT_EQ(spec.workloads[0].text_file, "prompts/readme.txt");
  EXPECT_THAT(reader.reads(), ElementsAre("prompts/readme.txt"));
}

TEST(SpecParserTest, ReadsTokenIds) {
  Spec spec = MustParse(
      Replace(Replace(ValidSpecText(), "text = \"The quick brown fox\"", "tokens = [1, 2, 3, 4]"),
              "positions = 16", "positions = 4"));
  EXPECT_THAT(spec.workloads[0].tokens, ElementsAre(1, 2, 3, 4));
}

TEST(SpecParserTest, ReadsFileModelWithSha256AndQuantVariants) {
  std::string sha(64, 'A');
  std::string text = Replace(ValidSpecText(),
                             "synth = \"llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,"
                             "ff=128,ctx=256,seed=7\"",
                             "file = \"qwen.gguf\"\nsha256 = \"" + sha +
                                 "\"\nvariants.q8_0 = { file = \"qwen-q8.gguf\", sha256 = \"" +
                                 std::string(64, 'b') + "\" }");
  Spec spec = MustParse(text);
  EXPECT_EQ(spec.model.file, "qwen.gguf");
  EXPECT_EQ(spec.model.sha256, std::string(64, 'a'));  // normalised to lowercase
  EXPECT_EQ(spec.model.RequirementFor("q4_0"), "sha256:" + std::string(64, 'a'));
  EXPECT_EQ(spec.model.RequirementFor("q8_0"), "sha256:" + std::string(64, 'b'));
}

TEST(SpecParserTest, NormalisesAxisValues) {
  std::string text = Replace(ValidSpecText(), "kv = \"f16\"", "kv = \" F16/f16 \"");
  text = Replace(text, "attention = \"off\"", "attention = false");
  text = Replace(text, "sampler.seed = 42", "sampler.seed = 42\nsampler.temperature = 1");
  Spec spec = MustParse(text);
  EXPECT_EQ(spec.FindAxis("kv")->baseline, AxisValue::String("f16"));
  EXPECT_EQ(spec.FindAxis("attention")->baseline, AxisValue::String("off"));
  EXPECT_EQ(spec.FindAxis("sampler.temperature")->baseline, AxisValue::Float(1.0));
}

TEST(SpecParserTest, AcceptsFreeEngineKnobs) {
  std::string text =
      Replace(ValidSpecText(), "threads = 1", "threads = 1\nknob.split_mode = \"row\"");
  text =
      Replace(text, "attention = [\"on\"]", "attention = [\"on\"]\nknob.split_mode = [\"layer\"]");
  Spec spec = MustParse(text);
  EXPECT_EQ(spec.FindAxis("knob.split_mode")->alternatives.at(0), AxisValue::String("layer"));
}

// ---- errors: each names file:line:column, field, value and expectation ----

TEST(SpecParserErrorTest, TomlSyntaxErrorIsTheOnlyErrorAndHasAPosition) {
  std::string text = Replace(ValidSpecText(), "tp = 1", "tp = = 1");
  std::vector<std::string> errors = ErrorsOf(text);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr(At(text, "tp = = 1").substr(0, 12)));
  EXPECT_THAT(errors[0], HasSubstr("error: TOML syntax error: "));
}

TEST(SpecParserErrorTest, UnknownAxisSuggestsTheClosestName) {
  std::string text = Replace(ValidSpecText(), "threads = 1", "treads = 1");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "1\nsampler") +
                          ": error: baseline.treads: unknown axis "
                          "\"treads\"; did you mean \"threads\"? Axes are engine, quant, kv, "
                          "attention, tp, hardware, the extras in docs/spec.md, or "
                          "knob.<name> for any other engine setting"));
}

// TOML reads nan and inf as floats; as a knob's value they would reach the
// job ids and the plan's JSON, which cannot hold them.
TEST(SpecParserErrorTest, KnobValuesMustBeFiniteNumbers) {
  for (const std::string value : {"nan", "inf", "-inf", "+nan"}) {
    std::string text =
        Replace(ValidSpecText(), "threads = 1", "threads = 1\nknob.rope_scale = " + value);
    EXPECT_THAT(ErrorsOf(text), ElementsAre(At(text, value + "\n") +
                                            ": error: baseline.knob.rope_scale: expected a "
                                            "finite number, got " +
                                            (value == "+nan" ? "nan" : value)))
        << value;
  }
  std::string text = Replace(ValidSpecText(), "threads = 1", "threads = 1\nknob.rope_scale = 1.0");
  text =
      Replace(text, "attention = [\"on\"]", "attention = [\"on\"]\nknob.rope_scale = [1.5, inf]");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(HasSubstr("error: alternatives.knob.rope_scale[1]: expected a finite "
                                    "number, got inf")));
}

TEST(SpecParserErrorTest, AlternativeEqualToBaseline) {
  std::string text = Replace(ValidSpecText(), "attention = [\"on\"]", "attention = [\"OFF\"]");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "\"OFF\"") +
                          ": error: alternatives.attention[0]: "
                          "alternative \"off\" equals the baseline value of attention; an "
                          "alternative must differ from the baseline"));
}

TEST(SpecParserErrorTest, DuplicateAlternativesAfterNormalisation) {
  std::string text =
      Replace(ValidSpecText(), "quant = [\"q8_0\", \"f16\"]", "quant = [\"q8_0\", \"Q8_0\"]");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "\"Q8_0\"") +
                          ": error: alternatives.quant[1]: duplicate "
                          "alternative \"q8_0\" (first at line " +
                          At(text, "\"q8_0\", \"Q").substr(10, 2) + ", column 10)"));
}

TEST(SpecParserErrorTest, EmptyAlternatives) {
  std::string text = Replace(ValidSpecText(), "attention = [\"on\"]", "attention = []");
  EXPECT_THAT(
      ErrorsOf(text),
      ElementsAre(At(text, "[]") + ": error: alternatives.attention: empty "
                                   "alternatives: list at least one value, or remove the axis"));
}

TEST(SpecParserErrorTest, TensorParallelBelowOne) {
  std::string text = Replace(ValidSpecText(), "tp = 1", "tp = 0");
  EXPECT_THAT(ErrorsOf(text), ElementsAre(At(text, "0\nhardware") +
                                          ": error: baseline.tp: tp must be in [1, 1024], got 0"));
}

TEST(SpecParserErrorTest, AlternativesWithoutBaselineValue) {
  std::string text =
      Replace(ValidSpecText(), "kv = [\"q8_0/f16\"]", "kv = [\"q8_0/f16\"]\nubatch = [1]");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "[1]") +
                          ": error: alternatives.ubatch: axis \"ubatch\" has "
                          "alternatives but no baseline value; add ubatch = ... to [baseline]"));
}

TEST(SpecParserErrorTest, UnknownWorkloadKind) {
  std::string text = Replace(ValidSpecText(), "kind = \"generate\"", "kind = \"chat\"");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "\"chat\"") +
                          ": error: workloads[1].kind: unknown workload "
                          "kind \"chat\"; expected \"teacher_forced\", \"generate\" or \"task\""));
}

// Regression: the planner accepted workload names (and experiment names of only dots)
// that the coordinator refuses, so `orch plan` passed specs that `orch submit` could not.
TEST(SpecParserTest, ReadsTheFullRowBudget) {
  std::string text = Replace(ValidSpecText(), "full_windows = [[0, 2]] }",
                             "full_windows = [[0, 2]], full_row_budget_bytes = 0 }");
  EXPECT_EQ(MustParse(text).workloads[0].capture.full_row_budget_bytes, 0);
  text = Replace(ValidSpecText(), "full_windows = [[0, 2]] }",
                 "full_windows = [[0, 2]], full_row_budget_bytes = 4294967296 }");
  EXPECT_EQ(MustParse(text).workloads[0].capture.full_row_budget_bytes, std::int64_t{1} << 32);
}

TEST(SpecParserErrorTest, FullRowBudgetOutOfRangeNamesFieldAndValue) {
  std::string text = Replace(ValidSpecText(), "full_windows = [[0, 2]] }",
                             "full_windows = [[0, 2]], full_row_budget_bytes = -1 }");
  EXPECT_THAT(
      ErrorsOf(text),
      ElementsAre(At(text, "-1 }") + ": error: workloads[0].capture.full_row_budget_bytes: "
                                     "full_row_budget_bytes must be in [0, 4294967296], got -1"));
}

// Drivers keep at most plan_document::kTopLogits.max logits per position (the digest's
// limit): a spec asking for more is refused here, not by every driver at run time.
TEST(SpecParserErrorTest, TopLogitsOverTheDriversLimitIsRefusedAtPlanTime) {
  std::string text = Replace(ValidSpecText(), "top_logits = 8", "top_logits = 2000");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "2000") + ": error: workloads[0].capture.top_logits: "
                                             "top_logits must be in [1, 1024], got 2000"));
  EXPECT_EQ(MustParse(Replace(ValidSpecText(), "top_logits = 8", "top_logits = 1024"))
                .workloads[0]
                .capture.top_logits,
            1024);
}

TEST(SpecParserErrorTest, TheFormerCaptureTopKNamesItsNewName) {
  std::string text = Replace(ValidSpecText(), "top_logits = 8", "top_k = 8");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "8, full_every") +
                          ": error: workloads[0].capture.top_k: unknown field \"top_k\"; did you "
                          "mean \"top_logits\"? (renamed: the logits kept per position, not the "
                          "sampler's top_k)"));
}

TEST(SpecParserErrorTest, NamesFollowTheRuleTheCoordinatorChecks) {
  std::string text = Replace(ValidSpecText(), "name = \"readme\"", "name = \"read me[1]\"");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "\"read me[1]\"") +
                          ": error: workloads[0].name: invalid name \"read me[1]\"; expected "
                          "1-128 letters, digits, '-', '_' or '.'"));
  EXPECT_THAT(ErrorsOf(Replace(ValidSpecText(), "name = \"unit\"", "name = \"..\"")),
              ElementsAre(HasSubstr("experiment.name: invalid name \"..\"")));
}

TEST(SpecParserErrorTest, PositionsBelowOne) {
  std::string text = Replace(ValidSpecText(), "positions = 16", "positions = 0");
  std::vector<std::string> errors = ErrorsOf(text);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0], At(text, "0\ncapture") +
                           ": error: workloads[0].positions: positions must be in [1, 16777216], "
                           "got 0");
}

TEST(SpecParserErrorTest, MalformedSha256) {
  std::string text = Replace(ValidSpecText(),
                             "synth = \"llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,"
                             "ff=128,ctx=256,seed=7\"",
                             "file = \"m.gguf\"\nsha256 = \"3e4cb1417446\"");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "\"3e4c") +
                          ": error: model.sha256: malformed SHA-256 "
                          "\"3e4cb1417446\"; expected 64 hex digits (orch model hash FILE "
                          "prints it)"));
}

TEST(SpecParserErrorTest, UnknownFieldIsATypoNotIgnored) {
  std::string text = Replace(ValidSpecText(), "max_tokens = 8", "max_tokens = 8\nmax_token = 9");
  EXPECT_THAT(
      ErrorsOf(text),
      ElementsAre(At(text, "9") + ": error: workloads[1].max_token: unknown field "
                                  "\"max_token\"; expected one of: name, kind, prompt, max_tokens, "
                                  "capture"));
}

TEST(SpecParserErrorTest, MissingStandardAxis) {
  std::string text = Replace(ValidSpecText(), "hardware = \"cpu\"\n", "");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(HasSubstr("error: baseline.hardware: missing standard axis "
                                    "\"hardware\" (hardware class: \"cpu\", \"cpu:<isa>\", "
                                    "\"gpu\", \"gpu:<model>\")")));
}

TEST(SpecParserErrorTest, BadSynthRecipeNamesTheKey) {
  std::string text = Replace(ValidSpecText(), "heads=2,kv_heads=1", "heads=2,kv_heads=x");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(HasSubstr("error: model.synth: synth key kv_heads: expected an "
                                    "integer in [1, 1024], got \"x\"")));
}

constexpr std::string_view kSpecRecipe =
    "synth = \"llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7\"";

// A recipe the agents would refuse (or that would fill their disks) fails the plan.
TEST(SpecParserErrorTest, ASynthRecipeOverTheCapIsRefusedNamingItsSizeAndTheCap) {
  std::string text =
      Replace(ValidSpecText(), std::string(kSpecRecipe),
              "synth = \"llama:vocab=1024,embd=65536,layers=256,heads=64,kv_heads=64,ff=262144\"");
  std::uint64_t bytes = orch::model::SynthModelBytes(
      orch::model::ParseSynthRecipe("llama:vocab=1024,embd=65536,layers=256,heads=64,kv_heads=64,"
                                    "ff=262144")
          .value());
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(AllOf(HasSubstr(At(text, "\"llama:vocab=1024") +
                                          ": error: model.synth: "
                                          "synth recipe llama:vocab=1024,embd=65536,layers=256"),
                                HasSubstr("makes a GGUF of " + std::to_string(bytes) + " bytes"),
                                HasSubstr("over the cap of 4294967296 bytes (4.0 GiB)"),
                                HasSubstr("raise model.synth_max_bytes"))));
}

TEST(SpecParserErrorTest, TheSpecsSynthCapDecides) {
  std::uint64_t bytes = orch::model::SynthModelBytes(
      orch::model::ParseSynthRecipe(
          "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7")
          .value());
  std::string below =
      Replace(ValidSpecText(), std::string(kSpecRecipe),
              std::string(kSpecRecipe) + "\nsynth_max_bytes = " + std::to_string(bytes - 1));
  EXPECT_THAT(ErrorsOf(below),
              ElementsAre(HasSubstr("over the cap of " + std::to_string(bytes - 1) + " bytes")));
  std::string at =
      Replace(ValidSpecText(), std::string(kSpecRecipe),
              std::string(kSpecRecipe) + "\nsynth_max_bytes = " + std::to_string(bytes));
  MustParse(at);
}

TEST(SpecParserErrorTest, ReportsEveryProblemAtOnce) {
  std::string text = Replace(ValidSpecText(), "tp = 1", "tp = 0");
  text = Replace(text, "positions = 16", "positions = -3");
  text = Replace(text, "kind = \"generate\"", "kind = \"chat\"");
  text = Replace(text, "attention = [\"on\"]", "attention = []");
  text = Replace(text, "threads = 1", "treads = 1");
  text = Replace(text, "kv = [\"q8_0/f16\"]", "kv = [\"q8_0\"]");  // needs flash attention
  std::vector<std::string> errors = ErrorsOf(text);
  EXPECT_EQ(errors.size(), 6u);
  for (const char* field : {"baseline.tp", "workloads[0].positions", "workloads[1].kind",
                            "alternatives.attention", "baseline.treads", "alternatives.kv[0]"}) {
    bool found = false;
    for (const std::string& e : errors) found = found || e.find(field) != std::string::npos;
    EXPECT_TRUE(found) << field;
  }
}

TEST(SpecParserErrorTest, ATextTooShortForItsPositionsIsAnError) {
  std::string spec = Replace(ValidSpecText(), "text = \"The quick brown fox\"", "text = \"hi\"");
  std::vector<std::string> errors = ErrorsOf(spec);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("workloads[0].positions: positions = 16 cannot be filled: "
                                   "workloads[0].text is 2 bytes, at most 4 tokens"));
  std::string enough =
      Replace(ValidSpecText(), "text = \"The quick brown fox\"", "text = \"fourteen bytes\"");
  EXPECT_THAT(ErrorsOf(enough), ElementsAre()) << "14 bytes may make 16 tokens";
}

TEST(SpecParserErrorTest, AnEmptyTextIsAnErrorNotAOnePositionRun) {
  std::string inline_text =
      Replace(ValidSpecText(), "text = \"The quick brown fox\"", "text = \"\"");
  EXPECT_THAT(
      ErrorsOf(inline_text),
      ElementsAre(At(inline_text, "\"\"\npositions") +
                  ": error: workloads[0].text: the text is empty: there is nothing to "
                  "teacher-force; give the workload a text of at least `positions` tokens"));
  testing::MapSourceReader reader;
  reader.Add("empty.txt", "");
  std::string from_file =
      Replace(ValidSpecText(), "text = \"The quick brown fox\"", "text_file = \"empty.txt\"");
  ParsedSpec parsed = ParseSpec(from_file, "unit.toml", reader);
  ASSERT_EQ(parsed.diagnostics.errors().size(), 1u);
  EXPECT_THAT(parsed.diagnostics.errors()[0].Format("unit.toml"),
              HasSubstr("workloads[0].text_file: the text is empty"));
}

TEST(SpecParserErrorTest, UnreadableTextFileNamesThePath) {
  std::string text =
      Replace(ValidSpecText(), "text = \"The quick brown fox\"", "text_file = \"missing.txt\"");
  EXPECT_THAT(ErrorsOf(text),
              ElementsAre(At(text, "\"missing.txt\"") +
                          ": error: workloads[0].text_file: "
                          "cannot read \"missing.txt\": cannot open missing.txt: No such file "
                          "or directory"));
}

// What a text_file holds travels in the plan to every agent; the spec may only copy in
// files from its own directory (planner/source_reader.h).
TEST(SpecParserErrorTest, TextFileOutsideTheSpecDirectoryIsRefusedSayingWhatToDo) {
  std::string text =
      Replace(ValidSpecText(), "text = \"The quick brown fox\"", "text_file = \"/etc/passwd\"");
  testing::MapSourceReader reader;
  reader.Add("/etc/passwd", "root:x:0:0::/root:/bin/sh\n");
  ParsedSpec parsed = ParseSpec(text, "unit.toml", reader);
  ASSERT_EQ(parsed.diagnostics.errors().size(), 1u);
  EXPECT_EQ(parsed.diagnostics.errors()[0].Format("unit.toml"),
            At(text, "\"/etc/passwd\"") +
                ": error: workloads[0].text_file: cannot read "
                "\"/etc/passwd\": \"/etc/passwd\" is an absolute path; files a spec names "
                "must lie in the spec's directory or below it: move the file there, or pass "
                "--allow-outside-spec-dir to read it where it is");
  EXPECT_EQ(parsed.spec->workloads[0].text, "");
}

}  // namespace
}  // namespace orch::planner

namespace orch::planner {
namespace {

// Malformed specs never crash the planner: mutate the valid spec at random (seeded, so
// failures reproduce) and require either a plan or at least one error for each.
TEST(SpecParserRobustnessTest, MutatedSpecsGiveAPlanOrErrorsNeverACrash) {
  const std::string valid = testing::ValidSpecText();
  const std::string alphabet = "[]{}=\",.#\n 0123456789-_abcxyzq\\'";
  std::uint64_t state = 42;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>(state >> 33);
  };
  int invalid = 0;
  for (int round = 0; round < 1500; ++round) {
    std::string text = valid;
    int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits; ++e) {
      std::size_t at = next() % text.size();
      switch (next() % 3) {
        case 0:
          text.erase(at, 1 + next() % 8);
          break;
        case 1:
          text.insert(at, 1, alphabet[next() % alphabet.size()]);
          break;
        default:
          text[at] = alphabet[next() % alphabet.size()];
          break;
      }
    }
    PlanOutcome outcome = PlanText(text);
    EXPECT_TRUE(outcome.plan.has_value() || outcome.diagnostics.has_errors()) << text;
    invalid += outcome.plan.has_value() ? 0 : 1;
  }
  EXPECT_GT(invalid, 500);  // the mutations do reach the error paths
}

}  // namespace
}  // namespace orch::planner
