#include "base/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace orch {
namespace {

Result<int> ParsePositive(int x) {
  if (x <= 0) return InvalidArgument("want > 0, got " + std::to_string(x));
  return x;
}

Result<int> Doubled(int x) {
  ORCH_ASSIGN_OR_RETURN(int v, ParsePositive(x));
  return 2 * v;
}

Status Checked(int x) {
  ORCH_RETURN_IF_ERROR(ParsePositive(x).status());
  return Status::Ok();
}

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ContextIsPrefixedAtEachLayer) {
  Status s = IoError("disk full").WithContext("write run r1").WithContext("ingest");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(s.message(), "ingest: write run r1: disk full");
  EXPECT_EQ(s.ToString(), "IO_ERROR: ingest: write run r1: disk full");
}

TEST(StatusTest, ContextLeavesOkAlone) { EXPECT_TRUE(Status::Ok().WithContext("anything").ok()); }

TEST(ResultTest, CarriesValueOrError) {
  Result<int> good = ParsePositive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  Result<int> bad = ParsePositive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "want > 0, got -1");
}

TEST(ResultTest, AssignOrReturnPropagates) {
  EXPECT_EQ(*Doubled(4), 8);
  EXPECT_EQ(Doubled(0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Checked(1).ok());
  EXPECT_FALSE(Checked(0).ok());
}

TEST(ResultTest, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  Result<int> bad = NotFound("no such job");
  EXPECT_DEATH((void)bad.value(), "no such job");
}

}  // namespace
}  // namespace orch
