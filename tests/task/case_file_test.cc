// Case files: prompts or chat messages, checks or multiple choice; every malformed line
// is named by FILE:LINE, the case id when known, the field and the value.
#include "task/case_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::task {
namespace {

using ::testing::HasSubstr;

std::string CaseRefusal(const std::string& content) {
  Result<std::vector<TaskCase>> cases = ParseCaseFile(content, "calls.jsonl");
  EXPECT_FALSE(cases.ok()) << content;
  return cases.ok() ? "" : cases.status().message();
}

TEST(CaseFileTest, ReadsPromptsMessagesChecksAndChoices) {
  Result<std::vector<TaskCase>> cases = ParseCaseFile(
      R"J({"id": "c1", "prompt": "port?", "max_tokens": 8, "checks": [{"number": 5432}]})J"
      "\n\n"
      R"J({"id": "c2", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}], "checks": [{"exact": "hi"}]})J"
      "\n"
      R"J({"id": "c3", "prompt": "Q: 2+2=", "choices": [" 3", " 4"], "answer": 1})J",
      "calls.jsonl");
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  ASSERT_EQ(cases->size(), 3u);
  EXPECT_EQ((*cases)[0].id, "c1");
  EXPECT_EQ((*cases)[0].max_tokens, 8);
  EXPECT_EQ((*cases)[1].line, 3);
  ASSERT_EQ((*cases)[1].messages.size(), 2u);
  EXPECT_EQ((*cases)[1].messages[0].role, "system");
  EXPECT_TRUE((*cases)[2].multiple_choice());
  EXPECT_EQ((*cases)[2].answer, 1);
  EXPECT_TRUE(EvaluateCase((*cases)[0], "on 5432").pass);
  EXPECT_EQ(EvaluateCase((*cases)[0], "on 543").reason, "expected 5432, got 543");
}

TEST(CaseFileTest, MalformedLinesAreNamedWithFileLineCaseAndField) {
  EXPECT_EQ(CaseRefusal("{\"id\": \"a\", \"prompt\": \"x\", \"checks\": [{\"exact\": \"y\"}]}\n{"),
            "calls.jsonl:2: not valid JSON");
  EXPECT_THAT(CaseRefusal(R"J({"prompt": "x", "checks": [{"exact": "y"}]})J"),
              HasSubstr("calls.jsonl:1: id: expected 1-128 of"));
  EXPECT_EQ(
      CaseRefusal(R"J({"id": "c9", "prompt": "x", "messages": [], "checks": [{"exact": "y"}]})J"),
      "calls.jsonl:1: case c9: give exactly one of prompt and messages");
  EXPECT_EQ(CaseRefusal(R"J({"id": "c9", "prompt": "x"})J"),
            "calls.jsonl:1: case c9: give either checks or choices and answer, got neither");
  EXPECT_EQ(CaseRefusal(R"J({"id": "c9", "prompt": "x", "choices": ["a", "b"], "answer": 2})J"),
            "calls.jsonl:1: case c9.answer: expected the index of the right choice, 0..1, got 2");
  EXPECT_EQ(
      CaseRefusal(
          R"J({"id": "c9", "messages": [{"role": "robot", "content": "x"}], "checks": [{"json": true}]})J"),
      "calls.jsonl:1: case c9.messages[0].role: \"robot\" is not system, user or assistant");
  EXPECT_THAT(
      CaseRefusal(R"J({"id": "c9", "prompt": "x", "checks": [{"exact": "y"}, {"nope": 1}]})J"),
      HasSubstr("calls.jsonl:1: case c9.checks[1]: unknown check"));
  EXPECT_EQ(CaseRefusal(R"J({"id": "c9", "prompt": "x", "checks": [{"json": true}], "temp": 1})J"),
            "calls.jsonl:1: case c9: temp: unknown field");
  EXPECT_EQ(
      CaseRefusal(R"J({"id": "c9", "prompt": "x", "max_tokens": 0, "checks": [{"json": true}]})J"),
      "calls.jsonl:1: case c9.max_tokens: expected an integer in [1, 1000000], got 0");
  EXPECT_EQ(CaseRefusal("{\"id\": \"a\", \"prompt\": \"x\", \"checks\": [{\"json\": true}]}\n"
                        "{\"id\": \"a\", \"prompt\": \"y\", \"checks\": [{\"json\": true}]}\n"),
            "calls.jsonl:2: case a: id used by an earlier line");
  EXPECT_EQ(CaseRefusal("\n\n"), "calls.jsonl: no cases (one JSON object per line)");
}

}  // namespace
}  // namespace orch::task
