#include "planner/canonical_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "planner/job_id.h"

namespace orch::planner {
namespace {

using json = nlohmann::json;

std::string Dump(const json& value) { return value.dump(-1, ' ', false); }

TEST(CanonicalJsonTest, WritesWhatDumpWritesForIntegersBooleansAndUtf8Strings) {
  json value = {
      {"zeta",
       {1, -1, 0, std::numeric_limits<std::int64_t>::min(),
        std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::uint64_t>::max()}},
      {"alpha", "quote \" backslash \\ slash / del \x7f"},
      {"controls", "\b\f\n\r\t\x01\x1f"},
      {"utf-8", "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80 \xe2\x80\xa8"},
      {"nested", {{"b", true}, {"a", false}, {"c", nullptr}, {"d", json::array()}}},
      {"Upper", json::object()},
      {"caf\xc3\xa9", 1},
  };
  EXPECT_EQ(CanonicalJsonText(value), Dump(value));
  EXPECT_EQ(CanonicalJsonText(value).substr(0, 10), "{\"Upper\":{");
}

TEST(CanonicalJsonTest, WritesDoublesInShortestRoundTripFormUnlikeDump) {
  // Ids were made from these forms before the writer used nlohmann; dump() would
  // change every id with such a value.
  EXPECT_EQ(CanonicalJsonText(json(1.0)), "1");
  EXPECT_EQ(Dump(json(1.0)), "1.0");
  EXPECT_EQ(CanonicalJsonText(json(100000.0)), "1e+05");
  EXPECT_EQ(Dump(json(100000.0)), "100000.0");
  EXPECT_EQ(CanonicalJsonText(json(0.0001)), "1e-04");
  EXPECT_EQ(Dump(json(0.0001)), "0.0001");
  EXPECT_EQ(CanonicalJsonText(json(std::nan(""))), "nan");
  EXPECT_EQ(Dump(json(std::nan(""))), "null");
  // Where the shortest forms coincide, so do the bytes.
  EXPECT_EQ(CanonicalJsonText(json(0.1)), Dump(json(0.1)));
  EXPECT_EQ(CanonicalJsonText(json(1e-5)), Dump(json(1e-5)));
}

TEST(CanonicalJsonTest, PassesBytesThatAreNotUtf8ThroughWhereDumpThrows) {
  const std::string latin1 = "caf\xe9";
  EXPECT_EQ(CanonicalJsonText(json(latin1)), "\"caf\xe9\"");
  EXPECT_THROW(Dump(json(latin1)), json::type_error);
  EXPECT_EQ(CanonicalJsonText(json({{latin1, latin1}})), "{\"caf\xe9\":\"caf\xe9\"}");
}

TEST(CanonicalJsonTest, AxisValuesBecomeJsonOfTheirType) {
  EXPECT_EQ(AxisValueJson(AxisValue::String("q4_0")), json("q4_0"));
  EXPECT_EQ(AxisValueJson(AxisValue::Int(-3)), json(-3));
  EXPECT_TRUE(AxisValueJson(AxisValue::Int(-3)).is_number_integer());
  EXPECT_TRUE(AxisValueJson(AxisValue::Float(2.0)).is_number_float());
  EXPECT_EQ(AxisValueJson(AxisValue::Bool(true)), json(true));
}

TEST(CanonicalJsonTest, CanonicalJobIsTheTextOfItsTree) {
  std::string axes = "{\"quant\":\"q4_0\",\"tp\":1}";
  json tree = {{"axes", json::parse(axes)},
               {"experiment", "exp \"caf\xc3\xa9\""},
               {"model", "synth:llama"},
               {"repeat", 7},
               {"workload", "ab12"}};
  EXPECT_EQ(CanonicalJob(axes, "exp \"caf\xc3\xa9\"", "synth:llama", 7, "ab12"),
            CanonicalJsonText(tree));
}

}  // namespace
}  // namespace orch::planner
