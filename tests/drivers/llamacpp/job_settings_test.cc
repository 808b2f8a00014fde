#include "drivers/llamacpp/job_settings.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "drivers/llamacpp/job_axes.h"

namespace orch::drivers::llamacpp {
namespace {

using nlohmann::json;

json ValidJob() {
  return json::parse(R"({
    "run_id": "r-1", "job_id": "j-1", "experiment": "e",
    "coordinate": {"engine": "llama.cpp@b8390", "quant": "q4_0", "kv": "f16",
                   "attention": "off", "tp": "1", "hardware": "cpu",
                   "threads": "1", "cpu_backend": "best"},
    "workload": {"name": "w", "kind": "teacher_forced", "positions": 16,
                 "text": "hello world",
                 "capture": {"top_logits": 20, "full_every": 0, "full_windows": []}},
    "model": {"requirement": "synth:llama:vocab=1024,seed=1,type=f16",
              "path": "/models/m.gguf", "sha256": "ab", "cache_dir": "/cache",
              "spec": {"name": "tiny"}},
    "capture": {"top_logits": 8, "full_every": 4, "full_windows": [[10, 12]]},
    "requirements": {"engine": "llama.cpp@b8390", "hardware": "cpu", "gpus": 0}
  })");
}

Result<JobSettings> Parse(const json& job) { return ParseJob(job.dump()); }

Result<JobSettings> WithAxis(const std::string& axis, const std::string& value) {
  json job = ValidJob();
  job["coordinate"][axis] = value;
  return Parse(job);
}

TEST(JobSettingsTest, MapsTheCoordinateToEngineSettings) {
  Result<JobSettings> settings = Parse(ValidJob());
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(settings->engine, "llama.cpp@b8390");
  EXPECT_EQ(settings->quant, "q4_0");
  EXPECT_EQ(settings->type_k, "f16");
  EXPECT_EQ(settings->type_v, "f16");
  EXPECT_EQ(settings->attention, FlashAttention::kOff);
  EXPECT_EQ(settings->cpu_backend, "best");
  EXPECT_EQ(settings->threads, 1);
  EXPECT_FALSE(settings->gpu());
  EXPECT_EQ(settings->model_path, "/models/m.gguf");
  EXPECT_EQ(settings->model_sha256, "ab");
  EXPECT_EQ(settings->cache_dir, "/cache");
  EXPECT_EQ(settings->model_type, "f16");  // from the synth recipe
  EXPECT_EQ(settings->workload.kind, WorkloadSettings::Kind::kTeacherForced);
  EXPECT_EQ(settings->workload.text, "hello world");
  EXPECT_EQ(settings->workload.positions, 16);
}

TEST(JobSettingsTest, TheAgentsThreadShareAppliesOnlyWhenTheCoordinateHasNoThreads) {
  json job = ValidJob();
  job["resources"] = {{"threads", 3}};
  EXPECT_EQ(Parse(job)->threads, 1) << "the coordinate's threads axis wins";
  job["coordinate"].erase("threads");
  EXPECT_EQ(Parse(job)->threads, 3);
  job["resources"]["threads"] = "many";
  EXPECT_EQ(Parse(job).status().code(), StatusCode::kInvalidArgument);
}

TEST(JobSettingsTest, TopLevelCapturePolicyDecidesFullRows) {
  Result<JobSettings> settings = Parse(ValidJob());
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->capture.top_logits, 8u);
  EXPECT_TRUE(settings->capture.WantsFullRow(0));
  EXPECT_TRUE(settings->capture.WantsFullRow(8));
  EXPECT_FALSE(settings->capture.WantsFullRow(9));
  EXPECT_TRUE(settings->capture.WantsFullRow(11));
  EXPECT_FALSE(settings->capture.WantsFullRow(13));
}

TEST(JobSettingsTest, EveryRowIsKeptWhenTheRunFitsTheByteBudget) {
  json job = ValidJob();
  Result<JobSettings> settings = Parse(job);
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->capture.full_row_budget_bytes, kDefaultFullRowBudgetBytes)
      << "a job without the key gets the planner's default";
  // 128 positions x 32,000 logits x 4 bytes = 16 MB fits 64 MiB: every row.
  CaptureSettings fits = settings->capture.ForRun(128, 32000);
  EXPECT_TRUE(fits.WantsFullRow(9));
  EXPECT_TRUE(fits.WantsFullRow(127));
  // 512 x 152,064 x 4 = 311 MB does not: the rows full_every and full_windows name.
  CaptureSettings over = settings->capture.ForRun(512, 152064);
  EXPECT_TRUE(over.WantsFullRow(8));
  EXPECT_FALSE(over.WantsFullRow(9));
  EXPECT_TRUE(over.WantsFullRow(11));
  // Exactly at the budget fits; one logit row more does not.
  job["capture"]["full_row_budget_bytes"] = 4 * 1024 * 10;
  settings = Parse(job);
  ASSERT_TRUE(settings.ok());
  EXPECT_TRUE(settings->capture.ForRun(10, 1024).WantsFullRow(9));
  EXPECT_FALSE(settings->capture.ForRun(11, 1024).WantsFullRow(9));
  // 0: never by budget.
  job["capture"]["full_row_budget_bytes"] = 0;
  settings = Parse(job);
  ASSERT_TRUE(settings.ok());
  EXPECT_FALSE(settings->capture.ForRun(1, 2).WantsFullRow(9));
  job["capture"]["full_row_budget_bytes"] = -1;
  EXPECT_EQ(Parse(job).status().message(),
            "capture.full_row_budget_bytes: expected a non-negative integer, got -1");
}

TEST(JobSettingsTest, KvPairSetsEachHalf) {
  json job = ValidJob();
  job["coordinate"]["kv"] = "q8_0/f16";
  Result<JobSettings> settings = Parse(job);
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(settings->type_k, "q8_0");
  EXPECT_EQ(settings->type_v, "f16");
}

TEST(JobSettingsTest, QuantizedVWithoutFlashAttentionIsAnInvalidCombination) {
  for (const char* attention : {"off", "auto"}) {
    json job = ValidJob();
    job["coordinate"]["kv"] = "f16/q4_0";
    job["coordinate"]["attention"] = attention;
    Result<JobSettings> settings = Parse(job);
    ASSERT_FALSE(settings.ok()) << attention;
    EXPECT_EQ(settings.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(ErrorCodeFor(settings.status()), "invalid_combination");
    EXPECT_NE(settings.status().message().find("flash attention"), std::string::npos);
  }
  json job = ValidJob();
  job["coordinate"]["kv"] = "q4_0";
  job["coordinate"]["attention"] = "on";
  EXPECT_TRUE(Parse(job).ok());
}

TEST(JobSettingsTest, TensorParallelOnCpuIsAnInvalidCombination) {
  Result<JobSettings> settings = WithAxis("tp", "2");
  ASSERT_FALSE(settings.ok());
  EXPECT_EQ(ErrorCodeFor(settings.status()), "invalid_combination");
  json job = ValidJob();
  job["coordinate"]["tp"] = "2";
  job["coordinate"]["hardware"] = "gpu:h100";
  Result<JobSettings> gpu = Parse(job);
  ASSERT_TRUE(gpu.ok());
  EXPECT_TRUE(gpu->gpu());
  EXPECT_EQ(gpu->tp, 2);
}

TEST(JobSettingsTest, MalformedAxisValuesNameTheFieldAndValue) {
  struct Case {
    const char* axis;
    const char* value;
    const char* expect;
  } cases[] = {
      {"kv", "f17", "coordinate.kv: unknown cache type \"f17\""},
      {"quant", "q9_9", "coordinate.quant: unknown weight type \"q9_9\""},
      {"attention", "maybe",
       "coordinate.attention: unknown attention mode \"maybe\" (expected one of off, on, auto)"},
      {"threads", "-3", "coordinate.threads: expected an integer"},
      {"threads", "two", "got \"two\""},
      {"repack", "perhaps", "coordinate.repack: expected on or off, got \"perhaps\""},
      {"cpu_backend", "../evil", "coordinate.cpu_backend: invalid CPU variant \"../evil\""},
      {"kv", "f16/f16/f16", "coordinate.kv: expected T or K/V"},
      {"sampler.seed", "4294967296",
       "coordinate.sampler.seed: expected an integer in [0, 4294967295]"},
      {"sampler.temperature", "hot", "coordinate.sampler.temperature: expected a number"},
      {"sampler.seed", "-1", "coordinate.sampler.seed"},
      {"sampler.order", "top_k,warp", "unknown sampler \"warp\""},
  };
  for (const Case& c : cases) {
    Result<JobSettings> settings = WithAxis(c.axis, c.value);
    ASSERT_FALSE(settings.ok()) << c.axis << "=" << c.value;
    EXPECT_EQ(ErrorCodeFor(settings.status()), "invalid_job");
    EXPECT_NE(settings.status().message().find(c.expect), std::string::npos)
        << settings.status().message();
  }
}

TEST(JobSettingsTest, ReadsSamplerAxesAndOrder) {
  json job = ValidJob();
  job["coordinate"]["sampler.temperature"] = "0.6";
  job["coordinate"]["sampler.top_k"] = "20";
  job["coordinate"]["sampler.top_p"] = "0.95";
  job["coordinate"]["sampler.min_p"] = "0";
  job["coordinate"]["sampler.repeat_penalty"] = "1.1";
  job["coordinate"]["sampler.seed"] = "42";
  job["coordinate"]["sampler.order"] = "top_k,temperature";
  Result<JobSettings> settings = Parse(job);
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_DOUBLE_EQ(settings->sampler.temperature, 0.6);
  EXPECT_EQ(settings->sampler.top_k, 20);
  EXPECT_DOUBLE_EQ(settings->sampler.top_p, 0.95);
  EXPECT_DOUBLE_EQ(settings->sampler.min_p, 0.0);
  EXPECT_DOUBLE_EQ(settings->sampler.repeat_penalty, 1.1);
  EXPECT_EQ(settings->sampler.seed, 42u);
  EXPECT_EQ(settings->sampler.order, (std::vector<std::string>{"top_k", "temperature"}));
  EXPECT_FALSE(settings->sampler.greedy());
}

TEST(JobSettingsTest, ReadsGenerateWorkloads) {
  json job = ValidJob();
  job["workload"] = {{"name", "g"}, {"kind", "generate"}, {"prompt", "Hi"}, {"max_tokens", 5}};
  Result<JobSettings> settings = Parse(job);
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->workload.kind, WorkloadSettings::Kind::kGenerate);
  EXPECT_EQ(settings->workload.prompt, "Hi");
  EXPECT_EQ(settings->workload.max_tokens, 5);
  job["workload"]["max_tokens"] = 0;
  EXPECT_FALSE(Parse(job).ok());
}

TEST(JobSettingsTest, ReadsExplicitTokenWorkloads) {
  json job = ValidJob();
  job["workload"].erase("text");
  job["workload"]["tokens"] = {1, 2, 3};
  Result<JobSettings> settings = Parse(job);
  ASSERT_TRUE(settings.ok());
  EXPECT_TRUE(settings->workload.has_tokens);
  EXPECT_EQ(settings->workload.tokens, (std::vector<std::int32_t>{1, 2, 3}));
  job["workload"]["tokens"] = {1, -2};
  EXPECT_FALSE(Parse(job).ok());
}

json ChatJob(const json& messages) {
  json job = ValidJob();
  job["workload"] = {{"name", "chat"},
                     {"kind", "generate"},
                     {"messages", messages},
                     {"max_tokens", 4},
                     {"task", {{"workload", "tools"}, {"case", "c1"}}}};
  return job;
}

TEST(JobSettingsTest, ReadsGenerateMessagesAndIgnoresTheTaskObject) {
  Result<JobSettings> settings = Parse(ChatJob(
      {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}));
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  ASSERT_TRUE(settings->workload.has_messages());
  ASSERT_EQ(settings->workload.messages.size(), 2u);
  EXPECT_EQ(settings->workload.messages[1].role, "user");
  EXPECT_EQ(settings->workload.messages[1].content, "Hi");
  EXPECT_EQ(settings->workload.prompt, "");
}

TEST(JobSettingsTest, MalformedMessagesAreInvalidJobsNamingTheField) {
  auto message = [](const json& messages) { return Parse(ChatJob(messages)).status().message(); };
  EXPECT_EQ(message(json::array()),
            "workload chat: messages: expected a non-empty array of {\"role\", \"content\"}, "
            "got []");
  EXPECT_EQ(message({{{"role", "bot"}, {"content", "x"}}}),
            "workload chat: messages[0].role: expected \"system\", \"user\" or \"assistant\", "
            "got \"bot\"");
  EXPECT_EQ(message({{{"role", "user"}, {"content", "x"}}, {{"role", "user"}}}),
            "workload chat: messages[1].content: expected a string, got nothing");
  EXPECT_EQ(message({{{"role", "user"}, {"content", 3}}}),
            "workload chat: messages[0].content: expected a string, got 3");
  EXPECT_EQ(message({"hi"}), "workload chat: messages[0]: expected an object, got \"hi\"");
  json both = ChatJob({{{"role", "user"}, {"content", "x"}}});
  both["workload"]["prompt"] = "x";
  EXPECT_EQ(Parse(both).status().message(),
            "workload chat: generate takes prompt or messages, not both");
  EXPECT_EQ(ErrorCodeFor(Parse(both).status()), "invalid_job");
}

TEST(JobSettingsTest, ReadsContextAndContinuationWithoutPositions) {
  json job = ValidJob();
  job["workload"] = {{"name", "mc"},
                     {"kind", "teacher_forced"},
                     {"context", "Q: 2+2? A:"},
                     {"continuation", " 4"},
                     {"task", {{"workload", "quiz"}, {"case", "q1"}, {"choice", 1}}}};
  Result<JobSettings> settings = Parse(job);
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_TRUE(settings->workload.has_continuation);
  EXPECT_EQ(settings->workload.context, "Q: 2+2? A:");
  EXPECT_EQ(settings->workload.continuation, " 4");
  EXPECT_EQ(settings->workload.positions, 0);

  job["workload"]["continuation"] = "";
  EXPECT_EQ(Parse(job).status().message(), "workload mc.continuation: expected a non-empty string");
  job["workload"].erase("continuation");
  EXPECT_EQ(Parse(job).status().message(),
            "workload mc.continuation: expected a string (context and continuation go "
            "together), got nothing");
  job["workload"]["continuation"] = " 4";
  job["workload"]["text"] = "x";
  EXPECT_EQ(Parse(job).status().message(),
            "workload mc: teacher_forced takes text, tokens, or context with continuation, "
            "not several");
}

TEST(JobSettingsTest, PinnedVariantGivesTheModelType) {
  json job = ValidJob();
  std::string sha(64, 'c');
  job["model"]["requirement"] = "sha256:" + sha;
  job["model"]["spec"] = {{"file", "m.gguf"}, {"variants", {{"Q8_0", {{"sha256", sha}}}}}};
  Result<JobSettings> settings = Parse(job);
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->model_type, "q8_0");
  job["model"]["requirement"] = "plain.gguf";
  EXPECT_EQ(Parse(job)->model_type, "");
}

TEST(JobSettingsTest, MalformedDocumentsAreInvalidJobsNotCrashes) {
  for (const char* text : {"", "[]", "{", "{\"coordinate\": 3}", "{\"coordinate\": {}}",
                           "{\"coordinate\": {}, \"workload\": {\"kind\": \"dance\"}}",
                           "{\"coordinate\": {}, \"workload\": {\"kind\": \"teacher_forced\"}}",
                           "{\"coordinate\": {}, \"workload\": {\"kind\": \"teacher_forced\", "
                           "\"text\": \"x\", \"positions\": -1}}",
                           "{\"coordinate\": {}, \"workload\": {\"kind\": \"teacher_forced\", "
                           "\"text\": \"x\"}, \"capture\": {\"top_logits\": 0}}",
                           "{\"coordinate\": {}, \"workload\": {\"kind\": \"teacher_forced\", "
                           "\"text\": \"x\"}, \"capture\": {\"full_windows\": [[5, 2]]}}",
                           "{\"coordinate\": {}, \"workload\": {\"kind\": \"teacher_forced\", "
                           "\"text\": \"x\"}, \"model\": 7}"}) {
    Result<JobSettings> settings = ParseJob(text);
    ASSERT_FALSE(settings.ok()) << text;
    EXPECT_EQ(ErrorCodeFor(settings.status()), "invalid_job") << text;
  }
}

TEST(JobSettingsTest, ErrorCodesFollowTheDriverProtocol) {
  EXPECT_EQ(ErrorCodeFor(NotFound("x")), "model_missing");
  EXPECT_EQ(ErrorCodeFor(Status(StatusCode::kDataLoss, "x")), "sha256_mismatch");
  EXPECT_EQ(ErrorCodeFor(Internal("x")), "engine_error");
}

TEST(JobSettingsTest, LoadAxesAreTableAxesAndOnlyTheyAndTheFileChangeTheLoadKey) {
  for (const std::string& axis : LoadAxes()) EXPECT_NE(FindJobAxis(axis), nullptr) << axis;
  Result<JobSettings> base = Parse(ValidJob());
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  const std::string key = ModelLoadKey(*base, "/m.gguf", "ab");
  EXPECT_NE(ModelLoadKey(*base, "/other.gguf", "ab"), key);
  EXPECT_NE(ModelLoadKey(*base, "/m.gguf", "cd"), key);
  json load_changes = {{"quant", "q8_0"},
                       {"cpu_backend", "haswell"},
                       {"repack", "off"},
                       {"hardware", "gpu"},
                       {"tp", "2"}};
  for (const auto& [axis, value] : load_changes.items()) {
    json job = ValidJob();
    job["coordinate"][axis] = value;
    if (axis == "tp") job["coordinate"]["hardware"] = "gpu";
    Result<JobSettings> changed = Parse(job);
    ASSERT_TRUE(changed.ok()) << axis << ": " << changed.status().ToString();
    EXPECT_NE(ModelLoadKey(*changed, "/m.gguf", "ab"), key) << axis;
  }
  json context_changes = {
      {"kv", "q8_0"},  {"attention", "on"}, {"threads", "4"},      {"batch", "32"},
      {"ubatch", "8"}, {"ctx", "1024"},     {"sampler.seed", "9"}, {"sampler.temperature", "0.3"}};
  for (const auto& [axis, value] : context_changes.items()) {
    json job = ValidJob();
    job["coordinate"][axis] = value;
    if (axis == "kv") job["coordinate"]["attention"] = "on";
    Result<JobSettings> changed = Parse(job);
    ASSERT_TRUE(changed.ok()) << axis << ": " << changed.status().ToString();
    EXPECT_EQ(ModelLoadKey(*changed, "/m.gguf", "ab"), key) << axis;
  }
}

}  // namespace
}  // namespace orch::drivers::llamacpp
