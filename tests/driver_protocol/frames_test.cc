#include "driver_protocol/frames.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::driver_protocol {
namespace {

using ::testing::HasSubstr;

std::string Stream() {
  return EncodeDriverFrame(DriverFrameType::kHello, "{}") +
         EncodeDriverFrame(DriverFrameType::kRecord, "abc") +
         EncodeDriverFrame(DriverFrameType::kDone, "{\"positions\":1}");
}

TEST(DriverFrameParserTest, ParsesAGoodStreamFedByteByByte) {
  DriverFrameParser parser;
  std::vector<DriverFrame> frames;
  for (char c : Stream()) ASSERT_TRUE(parser.Feed(std::string_view(&c, 1), &frames).ok());
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[1].type, DriverFrameType::kRecord);
  EXPECT_EQ(frames[1].payload, "abc");
  EXPECT_TRUE(parser.Finish().ok());
}

TEST(DriverFrameParserTest, TruncatedStreamFailsAtFinish) {
  DriverFrameParser parser;
  std::vector<DriverFrame> frames;
  std::string stream = Stream();
  ASSERT_TRUE(parser.Feed(stream.substr(0, stream.size() - 2), &frames).ok());
  Status status = parser.Finish();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("truncated frame"));
}

TEST(DriverFrameParserTest, StreamWithoutDoneFailsAtFinish) {
  DriverFrameParser parser;
  std::vector<DriverFrame> frames;
  ASSERT_TRUE(parser.Feed(EncodeDriverFrame(DriverFrameType::kHello, "{}"), &frames).ok());
  EXPECT_THAT(parser.Finish().message(), HasSubstr("without done or error"));
}

TEST(DriverFrameParserTest, OversizedLengthFailsWithoutBuffering) {
  DriverFrameParser parser;
  std::vector<DriverFrame> frames;
  std::string header("\xff\xff\xff\x7f\x01", 5);
  Status status = parser.Feed(header, &frames);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("exceeds the limit"));
  EXPECT_FALSE(parser.Feed(Stream(), &frames).ok());  // stays failed
}

TEST(DriverFrameParserTest, UnknownTypeFails) {
  DriverFrameParser parser;
  std::vector<DriverFrame> frames;
  std::string frame = EncodeDriverFrame(DriverFrameType::kHello, "x");
  frame[4] = 9;
  EXPECT_THAT(parser.Feed(frame, &frames).message(), HasSubstr("unknown type 9"));
}

TEST(DriverFrameParserTest, BytesAfterDoneFail) {
  DriverFrameParser parser;
  std::vector<DriverFrame> frames;
  EXPECT_THAT(parser.Feed(Stream() + "junk", &frames).message(), HasSubstr("after done"));
  DriverFrameParser later;
  ASSERT_TRUE(later.Feed(Stream(), &frames).ok());
  EXPECT_FALSE(later.Feed("x", &frames).ok());
}

TEST(DriverFrameParserTest, HelloMustComeFirstAndOnlyOnce) {
  DriverFrameParser parser;
  std::vector<DriverFrame> frames;
  EXPECT_THAT(parser.Feed(EncodeDriverFrame(DriverFrameType::kRecord, ""), &frames).message(),
              HasSubstr("first frame must be hello"));
  DriverFrameParser twice;
  std::string hello = EncodeDriverFrame(DriverFrameType::kHello, "");
  EXPECT_THAT(twice.Feed(hello + hello, &frames).message(), HasSubstr("second hello"));
}

TEST(JobFrameTest, AJobFrameHasTheStdoutLayoutWithType16AndItsHeaderGivesTheLength) {
  std::string frame = EncodeJobFrame(R"({"job_id":"j"})");
  ASSERT_EQ(frame.size(), kFrameHeaderBytes + 14);
  EXPECT_EQ(static_cast<std::uint8_t>(frame[4]), 16);
  Result<std::uint32_t> length = JobFrameLength(frame.substr(0, kFrameHeaderBytes));
  ASSERT_TRUE(length.ok()) << length.status().ToString();
  EXPECT_EQ(*length, 14u);
  EXPECT_EQ(frame.substr(kFrameHeaderBytes), R"({"job_id":"j"})");
}

TEST(JobFrameTest, AHeaderOfAnotherTypeTooLongOrTruncatedIsNamed) {
  Result<std::uint32_t> hello = JobFrameLength(EncodeDriverFrame(DriverFrameType::kHello, "{}"));
  EXPECT_THAT(hello.status().message(), HasSubstr("type 1, expected 16 (job)"));
  std::string huge = EncodeJobFrame("");
  huge[3] = 0x7f;
  EXPECT_THAT(JobFrameLength(huge).status().message(), HasSubstr("exceeds the limit"));
  EXPECT_THAT(JobFrameLength(std::string_view("\x01\x00", 2)).status().message(),
              HasSubstr("a header of 2 bytes"));
}

}  // namespace
}  // namespace orch::driver_protocol
