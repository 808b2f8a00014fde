// The task workload's job forms on the real llama.cpp driver (both installed
// builds, docs/driver-protocol.md "Chat messages" and "Context and
// continuation"): generation from chat messages rendered with the model's
// template, teacher forcing of a context + continuation, their errors, and both
// in a warm session.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "model/synth_recipe.h"
#include "tests/drivers/llamacpp/driver_harness.h"

namespace orch::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kTaskPlainRecipe[] =
    "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1";
constexpr char kTaskChatRecipe[] =
    "llama:vocab=1024,embd=128,layers=4,heads=4,kv_heads=2,ff=384,ctx=512,seed=1,chat=chatml";
const std::vector<std::string> kTaskReleases = {"v0.4.0", "b8390"};

class TaskJobsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(fs::temp_directory_path() /
                           ("orch-llamacpp-task-test-" + std::to_string(getpid())));
    fs::create_directories(*dir_);
    SynthModel(kTaskPlainRecipe, Plain());
    SynthModel(kTaskChatRecipe, Chat());
    WriteUnknownTemplateModel();
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string Plain() { return *dir_ + "/plain.gguf"; }
  static std::string Chat() { return *dir_ + "/chat.gguf"; }
  static std::string Unknown() { return *dir_ + "/unknown-template.gguf"; }
  static std::string Cache() { return *dir_ + "/cache"; }

  // The chat model with every "<|im_start|>" turned into "<|xx_start|>" (same
  // length, so the file stays valid): a template llama.cpp detects as no family.
  static void WriteUnknownTemplateModel() {
    std::ifstream in(Chat(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = "<|im_start|>", to = "<|xx_start|>";
    for (std::size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at))
      bytes.replace(at, from.size(), to);
    std::ofstream(Unknown(), std::ios::binary) << bytes;
  }

  static json Job(const std::string& model, const std::string& release, const json& workload) {
    json job = TeacherForcedJob(model, Cache(), {{"engine", "llama.cpp@" + release}});
    json capture = job["workload"]["capture"];
    job["workload"] = workload;
    job["workload"]["capture"] = capture;
    return job;
  }

  static DriverOutput Run(const std::string& model, const std::string& release,
                          const json& workload) {
    return RunLlamaDriver(release, Job(model, release, workload), *dir_);
  }

  static std::string* dir_;
};

std::string* TaskJobsTest::dir_ = nullptr;

const json kTaskMessages = {{{"role", "system"}, {"content", "You answer in JSON."}},
                            {{"role", "user"}, {"content", "Which port?"}}};

json TaskChatWorkload(const json& messages) {
  return {{"name", "tools"},
          {"kind", "generate"},
          {"messages", messages},
          {"max_tokens", 6},
          {"task", {{"workload", "tools"}, {"case", "port-1"}}}};
}

json TaskPromptWorkload(const std::string& prompt) {
  return {{"name", "tools"}, {"kind", "generate"}, {"prompt", prompt}, {"max_tokens", 6}};
}

json TaskChoiceWorkload(const std::string& context, const std::string& continuation) {
  return {{"name", "quiz"},
          {"kind", "teacher_forced"},
          {"context", context},
          {"continuation", continuation},
          {"task", {{"workload", "quiz"}, {"case", "q1"}, {"choice", 1}}}};
}

json TaskTextWorkload(const std::string& text) {
  return {{"name", "quiz"}, {"kind", "teacher_forced"}, {"text", text}};
}

bool TaskSameRecords(const DriverOutput& a, const DriverOutput& b) {
  if (a.records.size() != b.records.size()) return false;
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    if (!(a.records[i].digest.hash == b.records[i].digest.hash)) return false;
    if (a.records[i].input_token != b.records[i].input_token) return false;
    if (a.records[i].output_token != b.records[i].output_token) return false;
  }
  return true;
}

TEST_F(TaskJobsTest, MessagesAreRenderedWithTheModelsChatMlTemplateAndTheAssistantPrefix) {
  const std::string expected =
      "<|im_start|>system\nYou answer in JSON.<|im_end|>\n"
      "<|im_start|>user\nWhich port?<|im_end|>\n<|im_start|>assistant\n";
  for (const std::string& release : kTaskReleases) {
    DriverOutput chat = Run(Chat(), release, TaskChatWorkload(kTaskMessages));
    ASSERT_EQ(chat.exit_code, 0) << release << ": " << chat.error.dump() << chat.log;
    EXPECT_EQ(chat.done["rendered_prompt"], expected) << release;
    EXPECT_EQ(chat.done["chat_template"]["source"], "model") << release;
    EXPECT_EQ(chat.done["chat_template"]["sha256"], Sha256Hex(model::kChatMlTemplate)) << release;
    EXPECT_FALSE(chat.done.contains("continuation"));
    // The rendered text is the prompt the model saw: the same job with it as the
    // prompt gives the same records and text.
    DriverOutput prompt = Run(Chat(), release, TaskPromptWorkload(expected));
    ASSERT_EQ(prompt.exit_code, 0) << prompt.log;
    EXPECT_TRUE(TaskSameRecords(chat, prompt)) << release;
    EXPECT_EQ(chat.done["generated_text"], prompt.done["generated_text"]) << release;
    EXPECT_FALSE(prompt.done.contains("chat_template"));
    EXPECT_FALSE(prompt.done.contains("rendered_prompt"));
  }
}

TEST_F(TaskJobsTest, MessagesOnAModelWithoutATemplateAreAnInvalidCombinationNamingTheModel) {
  DriverOutput output = Run(Plain(), "b8390", TaskChatWorkload(kTaskMessages));
  EXPECT_EQ(output.exit_code, 2);
  ASSERT_TRUE(output.error.is_object()) << output.log;
  EXPECT_EQ(output.error["code"], "invalid_combination");
  std::string message = output.error["message"];
  EXPECT_NE(message.find(Plain()), std::string::npos) << message;
  EXPECT_NE(message.find("tokenizer.chat_template"), std::string::npos) << message;
  EXPECT_TRUE(output.records.empty());
}

TEST_F(TaskJobsTest, ATemplateLlamaCppDoesNotRecogniseIsRefusedNotRenderedAsAnother) {
  for (const std::string& release : kTaskReleases) {
    DriverOutput output = Run(Unknown(), release, TaskChatWorkload(kTaskMessages));
    EXPECT_EQ(output.exit_code, 2) << release;
    ASSERT_TRUE(output.error.is_object()) << release << output.log;
    EXPECT_EQ(output.error["code"], "invalid_combination");
    std::string message = output.error["message"];
    EXPECT_NE(message.find(Unknown()), std::string::npos) << message;
    EXPECT_NE(message.find("<|xx_start|>"), std::string::npos) << message;
    EXPECT_NE(message.find("llama_chat_apply_template"), std::string::npos) << message;
  }
}

TEST_F(TaskJobsTest, MalformedMessagesAreInvalidJobs) {
  DriverOutput output =
      Run(Chat(), "v0.4.0", TaskChatWorkload({{{"role", "tool"}, {"content", "x"}}}));
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_EQ(output.error["code"], "invalid_job");
  EXPECT_NE(output.error["message"].get<std::string>().find("messages[0].role"), std::string::npos);
}

TEST_F(TaskJobsTest, ContinuationIsTokenizedApartAndItsPositionsScoreItsTokens) {
  const std::string context = "Question: what does orch compare?\nAnswer:";
  const std::string continuation = " logits of engines";
  for (const std::string& release : kTaskReleases) {
    DriverOutput choice = Run(Plain(), release, TaskChoiceWorkload(context, continuation));
    ASSERT_EQ(choice.exit_code, 0) << release << ": " << choice.error.dump() << choice.log;
    DriverOutput alone = Run(Plain(), release, TaskTextWorkload(context));
    DriverOutput rest = Run(Plain(), release, TaskTextWorkload(continuation));
    ASSERT_EQ(alone.exit_code, 0) << alone.log;
    ASSERT_EQ(rest.exit_code, 0) << rest.log;
    // The context as a text job tokenizes it (with BOS); the continuation's own
    // tokens are those of a text job on it less that job's BOS.
    std::vector<std::int32_t> expected = alone.InputTokens();
    std::vector<std::int32_t> continuation_tokens = rest.InputTokens();
    continuation_tokens.erase(continuation_tokens.begin());
    expected.insert(expected.end(), continuation_tokens.begin(), continuation_tokens.end());
    EXPECT_EQ(choice.InputTokens(), expected) << release;
    EXPECT_EQ(choice.done["positions"], expected.size());

    const json& where = choice.done["continuation"];
    std::size_t first = where["first_position"];
    std::size_t count = where["tokens"];
    EXPECT_EQ(first, alone.records.size() - 1) << release;
    EXPECT_EQ(count, continuation_tokens.size()) << release;
    // Positions first..first+count-1 target exactly the continuation's tokens.
    for (std::size_t i = 0; i < count; ++i)
      EXPECT_EQ(choice.records[first + i].digest.target_id, continuation_tokens[i]) << i;
    EXPECT_EQ(choice.records.back().digest.target_id, digest::kNoTarget);
    // The context's positions are those of the context alone (causal attention).
    for (std::size_t p = 0; p < first; ++p)
      EXPECT_EQ(choice.records[p].digest.hash, alone.records[p].digest.hash) << p;
  }
}

TEST_F(TaskJobsTest, ContinuationPositionsMustBeAllOrLeftOut) {
  json workload = TaskChoiceWorkload("The answer is", " four");
  DriverOutput all = Run(Plain(), "v0.4.0", workload);
  ASSERT_EQ(all.exit_code, 0) << all.log;
  workload["positions"] = all.records.size();
  DriverOutput same = Run(Plain(), "v0.4.0", workload);
  EXPECT_EQ(same.exit_code, 0) << same.error.dump();
  EXPECT_TRUE(TaskSameRecords(all, same));
  workload["positions"] = all.records.size() - 1;
  DriverOutput cut = Run(Plain(), "v0.4.0", workload);
  EXPECT_EQ(cut.exit_code, 2);
  EXPECT_EQ(cut.error["code"], "invalid_job");
  EXPECT_NE(cut.error["message"].get<std::string>().find(
                "evaluates all its " + std::to_string(all.records.size()) + " tokens"),
            std::string::npos)
      << cut.error.dump();
}

TEST_F(TaskJobsTest, WarmSessionRunsBothFormsAsColdRunsDo) {
  for (const std::string& release : kTaskReleases) {
    std::vector<json> jobs = {Job(Chat(), release, TaskChatWorkload(kTaskMessages)),
                              Job(Chat(), release, TaskChoiceWorkload("The answer is", " four")),
                              Job(Chat(), release, TaskChatWorkload(kTaskMessages))};
    SessionOutput session = RunLlamaDriverSession(release, jobs, *dir_);
    ASSERT_EQ(session.exit_code, 0) << session.log;
    ASSERT_EQ(session.jobs.size(), 3u) << session.trailing_error;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      DriverOutput cold = RunLlamaDriver(release, jobs[i], *dir_);
      ASSERT_EQ(cold.exit_code, 0) << cold.log;
      const DriverOutput& warm = session.jobs[i];
      EXPECT_EQ(warm.hello["session"]["warm"], i > 0) << release << " job " << i;
      EXPECT_TRUE(TaskSameRecords(warm, cold)) << release << " job " << i;
      for (const char* key :
           {"rendered_prompt", "chat_template", "continuation", "generated_text"}) {
        EXPECT_EQ(warm.done.value(key, json()), cold.done.value(key, json()))
            << release << " job " << i << " " << key;
      }
    }
  }
}

}  // namespace
}  // namespace orch::testing
