// Every check kind of task/checks.h on outputs that pass and that fail, with the reason a
// report shows; malformed checks are refused naming where and what.
#include "task/checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::task {
namespace {

using ::testing::HasSubstr;

Verdict Judge(const std::string& check, std::string_view output) {
  Result<CheckPtr> parsed = ParseCheck(check, "t.jsonl:1: case c: checks[0]");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  if (!parsed.ok()) return {};
  return EvaluateCheck(**parsed, output);
}

std::string Refusal(const std::string& check) {
  Result<CheckPtr> parsed = ParseCheck(check, "t.jsonl:1: case c: checks[0]");
  EXPECT_FALSE(parsed.ok()) << check;
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(ChecksTest, ExactIgnoresOnlySurroundingWhitespace) {
  EXPECT_TRUE(Judge(R"J({"exact": "show arp"})J", "  show arp\n").pass);
  Verdict wrong = Judge(R"J({"exact": "show arp"})J", "show run\n");
  EXPECT_FALSE(wrong.pass);
  EXPECT_EQ(wrong.reason, R"J(expected "show arp", got "show run")J");
  EXPECT_FALSE(Judge(R"J({"exact": "show arp"})J", "Show arp").pass);
  EXPECT_FALSE(Judge(R"J({"exact": "x"})J", "").pass);
}

TEST(ChecksTest, NormalizedFoldsCaseSpacesAndTrailingPunctuation) {
  EXPECT_TRUE(Judge(R"J({"normalized": "Show  ARP"})J", "show arp.\n").pass);
  EXPECT_FALSE(Judge(R"J({"normalized": "show arp"})J", "show a rp").pass);
  EXPECT_TRUE(Judge(R"J({"normalized": "café"})J", "café!").pass) << "bytes past ASCII unchanged";
  EXPECT_TRUE(Judge(R"J({"contains": "5432"})J", "port 5432 open").pass);
  EXPECT_EQ(Judge(R"J({"contains": "5432"})J", "port 543").reason, R"J("5432" not in "port 543")J");
}

TEST(ChecksTest, RegexExtractsAGroupAndChecksIt) {
  std::string check = R"J({"regex": "port (\\d+)", "group": 1, "then": {"number": 5432}})J";
  EXPECT_TRUE(Judge(check, "listen port 5432;").pass);
  Verdict lost = Judge(check, "listen port 543ql;");
  EXPECT_FALSE(lost.pass);
  EXPECT_EQ(lost.reason, R"J(in "543": expected 5432, got 543)J");
  EXPECT_THAT(Judge(check, "no port here").reason, HasSubstr("no match for /port (\\d+)/"));
  EXPECT_TRUE(Judge(R"J({"regex": "^Gi"})J", "GigabitEthernet0/0/1.201").pass);
  EXPECT_THAT(Refusal(R"J({"regex": "(", "group": 0})J"),
              HasSubstr("checks[0].regex: \"(\" is not a valid"));
  EXPECT_THAT(Refusal(R"J({"regex": "a(b)", "group": 2})J"),
              HasSubstr("checks[0].group: expected a group number in [0, 1], got 2"));
}

// A long output (a runaway generation) cannot overflow the stack of libstdc++'s
// recursive regex: searches read its first 4096 bytes.
TEST(ChecksTest, ALongOutputIsSearchedWithoutOverflowingTheStack) {
  std::string endless(1 << 20, 'a');
  EXPECT_FALSE(Judge(R"J({"regex": "(a|b)*c"})J", endless).pass);
  EXPECT_TRUE(Judge(R"J({"regex": "^(a|b)*$"})J", endless).pass) << "the first 1024 bytes";
  EXPECT_EQ(Judge(R"J({"number": 1})J", endless).reason.substr(0, 12), "no number in");
}

TEST(ChecksTest, OrdinalLabelsGiveTheDistanceOfAWrongAnswer) {
  std::string check =
      R"J({"label": "urgent", "labels": ["routine", "urgent", "emergency"], "ordinal": true})J";
  Verdict right = Judge(check, "Urgent.\n");
  EXPECT_TRUE(right.pass);
  EXPECT_EQ(right.distance, 0.0);
  Verdict off = Judge(check, "emergency");
  EXPECT_FALSE(off.pass);
  EXPECT_EQ(off.reason, R"J(answered "emergency", expected "urgent")J");
  EXPECT_EQ(off.distance, 1.0);
  Verdict other = Judge(check, "critical");
  EXPECT_EQ(other.reason, R"J("critical" is not one of the labels)J");
  EXPECT_FALSE(other.distance.has_value());
  EXPECT_FALSE(Judge(R"J({"label": "a", "labels": ["a", "b"]})J", "b").distance.has_value())
      << "no distance between unordered labels";
  EXPECT_THAT(Refusal(R"J({"label": "x", "labels": ["a", "b"]})J"), HasSubstr("not one of labels"));
}

TEST(ChecksTest, NumbersAreTheFirstNumberWithinATolerance) {
  EXPECT_TRUE(Judge(R"J({"number": 3.14, "tolerance": 0.01})J", "about 3.141 units").pass);
  EXPECT_EQ(Judge(R"J({"number": 10, "tolerance": 0.5})J", "11").reason,
            "expected 10 (within 0.5), got 11");
  EXPECT_EQ(Judge(R"J({"number": 1})J", "none").reason, R"J(no number in "none")J");
  EXPECT_TRUE(Judge(R"J({"number": -2e3})J", "x=-2000").pass);
  EXPECT_THAT(Refusal(R"J({"number": 1, "tolerance": -1})J"), HasSubstr("expected a number >= 0"));
}

TEST(ChecksTest, JsonAndAJsonSchemaSubset) {
  EXPECT_TRUE(Judge(R"J({"json": true})J", "```json\n{\"a\": 1}\n```").pass);
  EXPECT_THAT(Judge(R"J({"json": true})J", "{\"a\": ").reason, HasSubstr("not valid JSON"));
  std::string schema = R"J({"json_schema": {"type": "object", "required": ["port"],
      "additionalProperties": false, "properties": {"port": {"type": "integer", "minimum": 1,
      "maximum": 65535}, "iface": {"type": "string", "pattern": "^Gi"}}}})J";
  EXPECT_TRUE(Judge(schema, R"J({"port": 5432, "iface": "Gi0/1"})J").pass);
  EXPECT_EQ(Judge(schema, R"J({"iface": "Gi0/1"})J").reason,
            R"J($: required property "port" is missing)J");
  EXPECT_EQ(Judge(schema, R"J({"port": 70000})J").reason,
            "$.port: 70000 is above the maximum 65535");
  EXPECT_EQ(Judge(schema, R"J({"port": "5432"})J").reason,
            R"J($.port: expected integer, got string "5432")J");
  EXPECT_EQ(Judge(schema, R"J({"port": 1, "x": 2})J").reason, R"J($: unexpected property "x")J");
  EXPECT_EQ(Judge(schema, R"J({"port": 1, "iface": "Te0"})J").reason,
            R"J($.iface: "Te0" does not match "^Gi")J");
}

TEST(ChecksTest, ToolCallsMatchStructurallyAsBfclDoes) {
  std::string check = R"J({"tool_call": {"name": "set_port", "arguments": {
      "interface": ["GigabitEthernet0/0/1.201"], "port": [5432], "timeout": [1.5]},
      "optional": ["timeout"]}})J";
  EXPECT_TRUE(Judge(check, R"J({"name": "set_port", "arguments": {"interface":
      "GigabitEthernet0/0/1.201", "port": 5432}})J")
                  .pass);
  EXPECT_TRUE(Judge(check, R"J({"function": {"name": "set_port", "arguments":
      "{\"interface\": \"GigabitEthernet0/0/1.201\", \"port\": 5432, \"timeout\": 2e0}"}})J")
                  .pass == false)
      << "2.0 is not an accepted timeout";
  EXPECT_TRUE(Judge(check, R"J({"name": "set_port", "arguments": {"interface":
      "GigabitEthernet0/0/1.201", "port": 5432, "timeout": 1.5}})J")
                  .pass);
  EXPECT_EQ(
      Judge(check, R"J({"name": "set_port", "arguments": {"interface":
      "GigabitEthernet0/1/4", "port": 5432}})J")
          .reason,
      R"J(argument interface: expected "GigabitEthernet0/0/1.201", got "GigabitEthernet0/1/4")J");
  EXPECT_EQ(Judge(check, R"J({"name": "set_port", "arguments": {"interface":
      "GigabitEthernet0/0/1.201"}})J")
                .reason,
            R"J(missing argument "port")J");
  EXPECT_EQ(Judge(check, R"J({"name": "set_port", "arguments": {"interface":
      "GigabitEthernet0/0/1.201", "port": "5432"}})J")
                .reason,
            R"J(argument port: expected 5432, got "5432")J");
  EXPECT_EQ(Judge(check, R"J({"name": "set_port", "arguments": {"interface":
      "GigabitEthernet0/0/1.201", "port": 5432, "vlan": 7}})J")
                .reason,
            R"J(unexpected argument "vlan")J");
  EXPECT_EQ(Judge(check, R"J({"name": "show_arp", "arguments": {}})J").reason,
            R"J(called "show_arp", expected "set_port")J");
  EXPECT_THAT(Judge(check, "set_port(5432)").reason, HasSubstr("expected one JSON tool call"));
  std::string floats = R"J({"tool_call": {"name": "f", "arguments": {"x": [2.0]}}})J";
  EXPECT_TRUE(Judge(floats, R"J({"name": "f", "arguments": {"x": 2}})J").pass)
      << "an integer is accepted for a float";
  EXPECT_THAT(Refusal(R"J({"tool_call": {"name": "f", "arguments": {"x": 1}}})J"),
              HasSubstr("checks[0].tool_call.arguments.x: expected a non-empty array"));
}

TEST(ChecksTest, AllAnyAndNotCombine) {
  std::string check = R"J({"all": [{"json": true}, {"not": {"contains": "null"}},
      {"any": [{"contains": "5432"}, {"contains": "5433"}]}]})J";
  EXPECT_TRUE(Judge(check, R"J({"port": 5433})J").pass);
  EXPECT_THAT(Judge(check, R"J({"port": null})J").reason, HasSubstr("passed a check it must not"));
  EXPECT_EQ(Judge(check, R"J({"port": 1})J").reason,
            R"J(none of: "5432" not in "{\"port\": 1}"; "5433" not in "{\"port\": 1}")J");
  EXPECT_THAT(Refusal(R"J({"all": []})J"), HasSubstr("checks[0].all: expected a non-empty array"));
}

TEST(ChecksTest, MalformedChecksNameWhereAndWhat) {
  EXPECT_THAT(Refusal(R"J({"exactly": "x"})J"),
              HasSubstr("t.jsonl:1: case c: checks[0]: unknown check {\"exactly\":\"x\"}"));
  EXPECT_THAT(Refusal(R"J({"exact": 5})J"), HasSubstr("checks[0].exact: expected a string, got 5"));
  EXPECT_THAT(Refusal(R"J({"exact": "a", "extra": 1})J"),
              HasSubstr("checks[0].extra: unknown key"));
  EXPECT_THAT(Refusal("[1"), HasSubstr("not valid JSON"));
  EXPECT_THAT(Refusal(R"J({"json": false})J"), HasSubstr("checks[0].json: expected true"));
}

}  // namespace
}  // namespace orch::task
