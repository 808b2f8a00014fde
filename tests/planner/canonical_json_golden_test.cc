// Golden bytes of the canonical JSON behind job ids (planner/job_id.h): axis values of
// every type, workloads of every kind and capture option, axes, whole jobs, and the ids of
// a spec that uses them all. Job ids are hashes of these bytes and users store them, so
// every expected value here was computed once and must never change: a failure means
// resubmitted plans would stop matching stored runs. On failure the actual bytes are
// printed as a C++ literal after "actual:".
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "planner/axis_value.h"
#include "planner/job_id.h"
#include "planner/plan.h"
#include "tests/support/map_source_reader.h"

namespace orch::planner {
namespace {

struct Golden {
  std::string label;
  std::string actual;
  std::string expected;
};

// `bytes` as a C++ string literal: printable ASCII as is, everything else as a 3-digit
// octal escape (which cannot run into the next character).
std::string CppLiteral(const std::string& bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\%03o", c);
      out += escaped;
    }
  }
  return out + "\"";
}

void ExpectGoldens(const std::vector<Golden>& goldens) {
  for (const Golden& g : goldens) {
    EXPECT_EQ(g.actual, g.expected) << g.label << "\nactual: " << CppLiteral(g.actual);
  }
}

std::string Value(const AxisValue& value) { return value.ToCanonicalJson(); }

TEST(CanonicalJsonGoldenTest, StringValuesEscapeQuotesBackslashesAndControlsOnly) {
  ExpectGoldens({
      {"plain", Value(AxisValue::String("q4_0")), "\"q4_0\""},
      {"empty", Value(AxisValue::String("")), "\"\""},
      {"quotes", Value(AxisValue::String("say \"hi\"")), "\"say \\\"hi\\\"\""},
      {"backslash", Value(AxisValue::String("back\\slash")), "\"back\\\\slash\""},
      {"slash", Value(AxisValue::String("a/b")), "\"a/b\""},
      {"named controls", Value(AxisValue::String("t\tn\nr\rb\bf\f")), "\"t\\tn\\nr\\rb\\bf\\f\""},
      {"other controls", Value(AxisValue::String("\001\037\013")), "\"\\u0001\\u001f\\u000b\""},
      {"nul", Value(AxisValue::String(std::string("a\0b", 3))), "\"a\\u0000b\""},
      {"del", Value(AxisValue::String("\177")), "\"\177\""},
      {"latin", Value(AxisValue::String("caf\303\251")), "\"caf\303\251\""},
      {"cjk", Value(AxisValue::String("\346\227\245\346\234\254")), "\"\346\227\245\346\234\254\""},
      {"emoji", Value(AxisValue::String("\360\237\230\200")), "\"\360\237\230\200\""},
      {"line separator", Value(AxisValue::String("\342\200\250")), "\"\342\200\250\""},
      {"invalid utf-8", Value(AxisValue::String("\377\376x")), "\"\377\376x\""},
      {"truncated utf-8", Value(AxisValue::String("\303")), "\"\303\""},
      {"encoded surrogate", Value(AxisValue::String("\355\240\200")), "\"\355\240\200\""},
  });
}

TEST(CanonicalJsonGoldenTest, IntegerAndBooleanValuesAreBare) {
  ExpectGoldens({
      {"zero", Value(AxisValue::Int(0)), "0"},
      {"one", Value(AxisValue::Int(1)), "1"},
      {"minus one", Value(AxisValue::Int(-1)), "-1"},
      {"2^24", Value(AxisValue::Int(16777216)), "16777216"},
      {"2^53+1", Value(AxisValue::Int(9007199254740993)), "9007199254740993"},
      {"int64 max", Value(AxisValue::Int(std::numeric_limits<std::int64_t>::max())),
       "9223372036854775807"},
      {"int64 min", Value(AxisValue::Int(std::numeric_limits<std::int64_t>::min())),
       "-9223372036854775808"},
      {"true", Value(AxisValue::Bool(true)), "true"},
      {"false", Value(AxisValue::Bool(false)), "false"},
  });
}

TEST(CanonicalJsonGoldenTest, FloatValuesAreShortestRoundTrip) {
  const double inf = std::numeric_limits<double>::infinity();
  ExpectGoldens({
      {"0.0", Value(AxisValue::Float(0.0)), "0"},
      {"-0.0", Value(AxisValue::Float(-0.0)), "-0"},
      {"0.1", Value(AxisValue::Float(0.1)), "0.1"},
      {"0.6", Value(AxisValue::Float(0.6)), "0.6"},
      {"1/3", Value(AxisValue::Float(1.0 / 3)), "0.3333333333333333"},
      {"1.0", Value(AxisValue::Float(1.0)), "1"},
      {"2.0", Value(AxisValue::Float(2.0)), "2"},
      {"1.5", Value(AxisValue::Float(1.5)), "1.5"},
      {"-2.5", Value(AxisValue::Float(-2.5)), "-2.5"},
      {"100.0", Value(AxisValue::Float(100.0)), "100"},
      {"1e5", Value(AxisValue::Float(100000.0)), "1e+05"},
      {"1e6", Value(AxisValue::Float(1e6)), "1e+06"},
      {"123456789012.0", Value(AxisValue::Float(123456789012.0)), "123456789012"},
      {"1e15", Value(AxisValue::Float(1e15)), "1e+15"},
      {"1e16", Value(AxisValue::Float(1e16)), "1e+16"},
      {"12345678901234568", Value(AxisValue::Float(1.2345678901234568e16)), "12345678901234568"},
      {"1e21", Value(AxisValue::Float(1e21)), "1e+21"},
      {"1e22", Value(AxisValue::Float(1e22)), "1e+22"},
      {"1e100", Value(AxisValue::Float(1e100)), "1e+100"},
      {"max", Value(AxisValue::Float(std::numeric_limits<double>::max())),
       "1.7976931348623157e+308"},
      {"0.001", Value(AxisValue::Float(0.001)), "0.001"},
      {"0.0001", Value(AxisValue::Float(0.0001)), "1e-04"},
      {"0.00015", Value(AxisValue::Float(0.00015)), "0.00015"},
      {"1e-5", Value(AxisValue::Float(1e-5)), "1e-05"},
      {"1.5e-5", Value(AxisValue::Float(1.5e-5)), "1.5e-05"},
      {"min normal", Value(AxisValue::Float(std::numeric_limits<double>::min())),
       "2.2250738585072014e-308"},
      {"denorm min", Value(AxisValue::Float(std::numeric_limits<double>::denorm_min())), "5e-324"},
      {"inf", Value(AxisValue::Float(inf)), "inf"},
      {"-inf", Value(AxisValue::Float(-inf)), "-inf"},
      {"nan", Value(AxisValue::Float(std::nan(""))), "nan"},
      {"-nan", Value(AxisValue::Float(-std::nan(""))), "-nan"},
  });
}

Workload Generate(std::string name, std::string prompt, int max_tokens) {
  Workload w;
  w.name = std::move(name);
  w.kind = WorkloadKind::kGenerate;
  w.prompt = std::move(prompt);
  w.max_tokens = max_tokens;
  return w;
}

Workload TeacherForced(std::string name, std::string text, int positions) {
  Workload w;
  w.name = std::move(name);
  w.text = std::move(text);
  w.positions = positions;
  return w;
}

TEST(CanonicalJsonGoldenTest, WorkloadsOfEveryKindAndCaptureOption) {
  Workload story = Generate("story", "Once upon a time", 8);
  Workload odd_prompt =
      Generate("odd.prompt-1", "\"q\" \\ \t\n\001 caf\303\251 \360\237\230\200", 1);
  odd_prompt.capture = {.top_logits = 1, .full_every = 3, .full_windows = {{0, 1}}};
  Workload readme = TeacherForced("readme", "The quick brown fox", 16);
  readme.capture = {.top_logits = 8, .full_every = 4, .full_windows = {{0, 2}}};
  Workload tokens = TeacherForced("tokens", "", 3);
  tokens.tokens = {1, 2, 0, 9007199254740993, std::numeric_limits<std::int64_t>::max()};
  tokens.capture = {.top_logits = 4096, .full_every = 16777216, .full_windows = {{0, 1}, {1, 3}}};
  Workload latin1 = TeacherForced("latin1", "caf\351 \377\376 na\357ve", 4);
  latin1.text_file = "latin1.txt";  // not in the canonical form; the text read from it is
  Workload nul = TeacherForced("nul", std::string("a\0b\0", 4), 2);
  Workload empty;
  ExpectGoldens({
      {"generate", CanonicalWorkload(story),
       "{\"capture\":{\"full_every\":0,\"full_windows\":[],\"top_k\":20},\"kind\":\"generate\","
       "\"max_tokens\":8,\"name\":\"story\",\"prompt\":\"Once upon a time\"}"},
      {"generate, odd prompt", CanonicalWorkload(odd_prompt),
       "{\"capture\":{\"full_every\":3,\"full_windows\":[[0,1]],\"top_k\":1},"
       "\"kind\":\"generate\",\"max_tokens\":1,\"name\":\"odd.prompt-1\","
       "\"prompt\":\"\\\"q\\\" \\\\ \\t\\n\\u0001 caf\303\251 \360\237\230\200\"}"},
      {"teacher_forced text", CanonicalWorkload(readme),
       "{\"capture\":{\"full_every\":4,\"full_windows\":[[0,2]],\"top_k\":8},"
       "\"kind\":\"teacher_forced\",\"name\":\"readme\",\"positions\":16,"
       "\"text\":\"The quick brown fox\"}"},
      {"teacher_forced tokens", CanonicalWorkload(tokens),
       "{\"capture\":{\"full_every\":16777216,\"full_windows\":[[0,1],[1,3]],\"top_k\":4096},"
       "\"kind\":\"teacher_forced\",\"name\":\"tokens\",\"positions\":3,\"tokens\":[1,2,0,"
       "9007199254740993,9223372036854775807]}"},
      {"teacher_forced latin-1 file", CanonicalWorkload(latin1),
       "{\"capture\":{\"full_every\":0,\"full_windows\":[],\"top_k\":20},"
       "\"kind\":\"teacher_forced\",\"name\":\"latin1\",\"positions\":4,"
       "\"text\":\"caf\351 \377\376 na\357ve\"}"},
      {"teacher_forced nul", CanonicalWorkload(nul),
       "{\"capture\":{\"full_every\":0,\"full_windows\":[],\"top_k\":20},"
       "\"kind\":\"teacher_forced\",\"name\":\"nul\",\"positions\":2,"
       "\"text\":\"a\\u0000b\\u0000\"}"},
      {"default workload", CanonicalWorkload(empty),
       "{\"capture\":{\"full_every\":0,\"full_windows\":[],\"top_k\":20},"
       "\"kind\":\"teacher_forced\",\"name\":\"\",\"positions\":0,\"text\":\"\"}"},
      {"generate digest", WorkloadDigest(story),
       "1c8b3e72fa3bb881775f1a4fa681075b20b6098d1c9c2276abe3deb2129c4a9e"},
      {"latin-1 digest", WorkloadDigest(latin1),
       "59d9cbcc94ca7dfb9edc8f07bd47ac0fcba3e88727cee3dcf0bb8172cb29709c"},
  });
}

Coordinate EveryType() {
  return {
      {"engine", AxisValue::String("llama.cpp@v0.4.0")},
      {"quant", AxisValue::String("q4_0")},
      {"kv", AxisValue::String("q8_0/f16")},
      {"attention", AxisValue::String("off")},
      {"tp", AxisValue::Int(1)},
      {"hardware", AxisValue::String("gpu:h100")},
      {"repack", AxisValue::Bool(true)},
      {"sampler.seed", AxisValue::Int(42)},
      {"sampler.temperature", AxisValue::Float(0.6)},
      {"sampler.top_p", AxisValue::Float(1.0)},
      {"sampler.repeat_last_n", AxisValue::Int(-1)},
      {"knob.eps", AxisValue::Float(1e-5)},
      {"knob.big", AxisValue::Float(100000.0)},
      {"knob.neg", AxisValue::Int(-7)},
      {"knob.flag", AxisValue::Bool(false)},
      {"knob.text", AxisValue::String("a \"b\" \\c\n\303\251")},
      {"knob.\"q\"", AxisValue::String("quoted name")},
      {"knob.caf\303\251", AxisValue::Int(1)},
  };
}

TEST(CanonicalJsonGoldenTest, AxesOfEveryTypeForEachKind) {
  Coordinate sampler_only = {{"sampler.seed", AxisValue::Int(1)}};
  ExpectGoldens({
      {"generate", CanonicalAxes(EveryType(), WorkloadKind::kGenerate),
       "{\"attention\":\"off\",\"engine\":\"llama.cpp@v0.4.0\",\"hardware\":\"gpu:h100\","
       "\"knob.\\\"q\\\"\":\"quoted name\",\"knob.big\":1e+05,\"knob.caf\303\251\":1,"
       "\"knob.eps\":1e-05,\"knob.flag\":false,\"knob.neg\":-7,"
       "\"knob.text\":\"a \\\"b\\\" \\\\c\\n\303\251\",\"kv\":\"q8_0/f16\",\"quant\":\"q4_0\","
       "\"repack\":true,\"sampler.repeat_last_n\":-1,\"sampler.seed\":42,"
       "\"sampler.temperature\":0.6,\"sampler.top_p\":1,\"tp\":1}"},
      {"teacher_forced", CanonicalAxes(EveryType(), WorkloadKind::kTeacherForced),
       "{\"attention\":\"off\",\"engine\":\"llama.cpp@v0.4.0\",\"hardware\":\"gpu:h100\","
       "\"knob.\\\"q\\\"\":\"quoted name\",\"knob.big\":1e+05,\"knob.caf\303\251\":1,"
       "\"knob.eps\":1e-05,\"knob.flag\":false,\"knob.neg\":-7,"
       "\"knob.text\":\"a \\\"b\\\" \\\\c\\n\303\251\",\"kv\":\"q8_0/f16\",\"quant\":\"q4_0\","
       "\"repack\":true,\"tp\":1}"},
      {"empty", CanonicalAxes({}, WorkloadKind::kGenerate), "{}"},
      {"sampler only, teacher_forced", CanonicalAxes(sampler_only, WorkloadKind::kTeacherForced),
       "{}"},
  });
}

TEST(CanonicalJsonGoldenTest, JobsAndTheirIds) {
  std::string axes = CanonicalAxes(EveryType(), WorkloadKind::kGenerate);
  std::string digest = WorkloadDigest(Generate("story", "Once upon a time", 8));
  std::string plain = CanonicalJob(axes, "unit", "synth:llama:vocab=512,seed=7", 0, digest);
  std::string odd = CanonicalJob("{}", "exp \"\303\251\" \\ \t", "sha256:" + std::string(64, 'a'),
                                 2147483647, digest);
  std::string negative = CanonicalJob("{\"tp\":1}", "", "", -1, "");
  ExpectGoldens({
      {"plain", plain,
       "{\"axes\":{\"attention\":\"off\",\"engine\":\"llama.cpp@v0.4.0\","
       "\"hardware\":\"gpu:h100\",\"knob.\\\"q\\\"\":\"quoted name\",\"knob.big\":1e+05,"
       "\"knob.caf\303\251\":1,\"knob.eps\":1e-05,\"knob.flag\":false,\"knob.neg\":-7,"
       "\"knob.text\":\"a \\\"b\\\" \\\\c\\n\303\251\",\"kv\":\"q8_0/f16\",\"quant\":\"q4_0\","
       "\"repack\":true,\"sampler.repeat_last_n\":-1,\"sampler.seed\":42,"
       "\"sampler.temperature\":0.6,\"sampler.top_p\":1,\"tp\":1},\"experiment\":\"unit\","
       "\"model\":\"synth:llama:vocab=512,seed=7\",\"repeat\":0,"
       "\"workload\":\"1c8b3e72fa3bb881775f1a4fa681075b20b6098d1c9c2276abe3deb2129c4a9e\"}"},
      {"odd", odd,
       "{\"axes\":{},\"experiment\":\"exp \\\"\303\251\\\" \\\\ \\t\","
       "\"model\":\"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
       "\"repeat\":2147483647,\"workload\":\"1c8b3e72fa3bb881775f1a4fa681075b20b6098d1c9c2276abe"
       "3deb2129c4a9e\"}"},
      {"negative repeat", negative,
       "{\"axes\":{\"tp\":1},\"experiment\":\"\",\"model\":\"\",\"repeat\":-1,\"workload\":\"\"}"},
      {"plain id", JobIdOf(plain), "53d675f424ae2be42b41a1192d610b8a"},
      {"odd id", JobIdOf(odd), "274a5d4dbe83ddb35d6d29aa548ec781"},
      {"negative repeat id", JobIdOf(negative), "2251f2b3141d27e8c31575ae5d893070"},
  });
}

// Every value type as the real parser reads it from TOML, a text file that is not UTF-8,
// and both workload kinds: the ids of every job, in plan order.
constexpr char kSpec[] = R"toml(
[experiment]
name = "golden-ids.v1"

[model]
synth = "llama:vocab=512,embd=64,layers=2,heads=2,kv_heads=1,ff=128,ctx=256,seed=7"

[[workloads]]
name = "tf-text"
kind = "teacher_forced"
text = "Tab\there, quote \" backslash \\ bell \u0007 caf\u00e9 \U0001F600 end"
positions = 16
capture = { top_logits = 8, full_every = 4, full_windows = [[0, 2], [5, 9]] }

[[workloads]]
name = "tf-file"
kind = "teacher_forced"
text_file = "latin1.txt"
positions = 8

[[workloads]]
name = "tf-tokens"
kind = "teacher_forced"
tokens = [1, 2, 3, 0, 9007199254740993]
positions = 5
capture = { top_logits = 1 }

[[workloads]]
name = "gen"
kind = "generate"
prompt = "Once upon a time\n\"there\" was \\"
max_tokens = 8
capture = { full_every = 2, full_windows = [[0, 1]] }

[baseline]
engine = "llama.cpp@v0.4.0"
quant = "q4_0"
kv = "f16"
attention = "off"
tp = 1
hardware = "cpu"
threads = 4
repack = true
sampler.seed = 42
sampler.temperature = 0.6
sampler.top_p = 1
sampler.repeat_last_n = -1
knob.eps = 1e-5
knob.big = 100000.0
knob.tiny = 0.0001
knob.neg = -3
knob.flag = false
knob.text = "a \"b\" \\c \u0001 \u00e9"
knob."q\"name" = 1.0

[alternatives]
sampler.temperature = [0.1, 1.5]
knob.eps = [0.001, 123456789012.0]
knob.flag = [true]
repack = ["off"]
)toml";

TEST(CanonicalJsonGoldenTest, IdsOfASpecUsingEveryValueType) {
  testing::MapSourceReader reader;
  reader.Add("latin1.txt", "caf\351 na\357ve \377\376 text of a Latin-1 file");
  PlanOutcome outcome = PlanSpec(kSpec, "unit.toml", reader);
  for (const Diagnostic& d : outcome.diagnostics.errors()) ADD_FAILURE() << d.Format("unit.toml");
  ASSERT_TRUE(outcome.plan.has_value());
  const std::vector<std::string> expected = {
      "adb1fe7368053c5871a22c15ece8925b", "d94fbc5cf6d97c09dea341f2e3a585a5",
      "b5e3155f226a4f17d089d962e209183c", "fe73d4203c0c380e10593d9b3e290a21",
      "bb2fb510ce7e4de17417dd752b4d39bb", "77bc78d19d63cc08349b549e3eefe13a",
      "c38dbdbcd9a671f3a0f73edd0a868d93", "5b41534890f9f6d0ffbee82010ffa12f",
      "4b3cb2a7c9592cf7ffd34b09f858dbbf", "2f12f66bac01da017ee37cfee967d753",
      "c66cd4c4e60eacf75750bec6e31d9246", "ffbeb71c891cd4a10ba40986e507aef8",
      "9b850c6f2835b833b528bd88d4e55e9a", "76ac4cb58344dd12121b555cd06133ca",
      "8fce4a2447a4e07168d76ce06013451a", "30819a18fef6fbd694a0488f42546f36",
      "701c64bbecfc7361a4eeebb97a71dc10", "18e0e7e2eb3c5817abeedbb67e4fd739",
      "6c79fbdc077eeb896d89a9919c6bbc40", "1e554a5660560dc6c47dec121241321f",
      "967fa55b0a120d3006201c9e15e4c4f3", "a61c4a493b5ba0e32f7ad8f785faa59d",
      "68b4e78191a643644a34f6ecf195fd20", "3e09c478e8f59c5385b4458ca797d15a",
      "84dc87c40a0f277344ced9b85432f16c", "eff86080c33d12067b5996d39448f1c6",
  };
  std::vector<Golden> goldens;
  for (const Job& job : outcome.plan->jobs) {
    std::string label = "job " + std::to_string(goldens.size()) + " (" +
                        outcome.plan->CellOf(job).label + ", " +
                        outcome.plan->WorkloadOf(job).name + ")";
    std::size_t i = goldens.size();
    goldens.push_back({label, job.id, i < expected.size() ? expected[i] : "(none)"});
  }
  EXPECT_EQ(goldens.size(), expected.size());
  ExpectGoldens(goldens);
}

}  // namespace
}  // namespace orch::planner
