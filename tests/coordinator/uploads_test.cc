// Files in parts without a transport: parts in, answers and whole files out.
#include "coordinator/uploads.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orch::coordinator {
namespace {

using ::testing::HasSubstr;

UploadPart UploadPartOf(std::string_view id, std::uint64_t offset, std::uint64_t total,
                        std::string_view bytes, const UploadKind& kind = kBundleUpload) {
  return {kind, "r.orchb", id, offset, total, bytes};
}

TEST(UploadsTest, PartsAreAssembledInOrderAndEachButTheLastIsAnswered) {
  Uploads uploads;
  Uploads::Added first = uploads.Add("alice", UploadPartOf("u", 0, 6, "abc"), Millis(0));
  EXPECT_FALSE(first.whole);
  ASSERT_TRUE(first.answer);
  EXPECT_TRUE(first.answer->ok);
  EXPECT_EQ(first.answer->message, "received 3 of 6 bytes");
  Uploads::Added last = uploads.Add("alice", UploadPartOf("u", 3, 6, "def"), Millis(10));
  EXPECT_EQ(last.whole, "abcdef");
  EXPECT_FALSE(last.answer);
  EXPECT_EQ(uploads.in_progress(), 0u);
}

TEST(UploadsTest, APartOutOfOrderDropsTheUpload) {
  Uploads uploads;
  uploads.Add("alice", UploadPartOf("u", 0, 9, "abc"), Millis(0));
  Uploads::Added skipped = uploads.Add("alice", UploadPartOf("u", 6, 9, "ghi"), Millis(0));
  EXPECT_FALSE(skipped.whole);
  ASSERT_TRUE(skipped.answer);
  EXPECT_FALSE(skipped.answer->ok);
  EXPECT_EQ(skipped.answer->message,
            "bundle r.orchb: a part at byte 6 came out of order or after its upload expired; "
            "send the file again");
  EXPECT_EQ(uploads.in_progress(), 0u);
  // A part whose total differs from the first's is out of order too.
  uploads.Add("alice", UploadPartOf("u", 0, 9, "abc"), Millis(0));
  EXPECT_FALSE(uploads.Add("alice", UploadPartOf("u", 3, 10, "def"), Millis(0)).answer->ok);
}

TEST(UploadsTest, AFileAboveItsBoundIsRefusedAtItsFirstPartSayingWhatToDo) {
  Uploads uploads;
  Uploads::Added plan =
      uploads.Add("alice", UploadPartOf("p", 0, kMaxPlanBytes + 1, "{", kPlanUpload), Millis(0));
  ASSERT_TRUE(plan.answer);
  EXPECT_FALSE(plan.answer->ok);
  EXPECT_THAT(plan.answer->message,
              HasSubstr("above the 512 MiB the coordinator takes over the network: split the "
                        "experiment into smaller ones"));
  Uploads::Added bundle =
      uploads.Add("alice", UploadPartOf("b", 0, kMaxUploadBytes + 1, "x"), Millis(0));
  EXPECT_THAT(bundle.answer->message, HasSubstr("import with orch import --data-dir"));
  EXPECT_EQ(uploads.in_progress(), 0u);
}

TEST(UploadsTest, UploadsAtOnceAreBoundedPerKindAndIdleOnesGoFirst) {
  Uploads uploads;
  for (std::size_t i = 0; i < kMaxUploads; ++i) {
    EXPECT_TRUE(uploads.Add("alice", UploadPartOf("u" + std::to_string(i), 0, 9, "a"), Millis(0))
                    .answer->ok);
  }
  Uploads::Added over = uploads.Add("alice", UploadPartOf("one-more", 0, 9, "a"), Millis(0));
  EXPECT_EQ(over.answer->message, "4 bundle uploads are in progress; try again in a minute");
  // A plan is another kind: its own bound.
  EXPECT_TRUE(
      uploads.Add("alice", UploadPartOf("p", 0, 9, "{", kPlanUpload), Millis(0)).answer->ok);
  // Once the others went idle, a new one starts.
  Millis later = kUploadIdle + Millis(1);
  EXPECT_TRUE(uploads.Add("alice", UploadPartOf("one-more", 0, 9, "a"), later).answer->ok);
  EXPECT_EQ(uploads.in_progress(), 1u);
}

TEST(UploadsTest, TwoKeysUploadsOfOneIdNeverMix) {
  Uploads uploads;
  uploads.Add("alice", UploadPartOf("u", 0, 4, "ab"), Millis(0));
  uploads.Add("bob", UploadPartOf("u", 0, 4, "xy"), Millis(0));
  EXPECT_EQ(uploads.Add("bob", UploadPartOf("u", 2, 4, "zz"), Millis(0)).whole, "xyzz");
  EXPECT_EQ(uploads.Add("alice", UploadPartOf("u", 2, 4, "cd"), Millis(0)).whole, "abcd");
}

TEST(UploadsTest, APartAtOffsetZeroStartsTheUploadOver) {
  Uploads uploads;
  uploads.Add("alice", UploadPartOf("u", 0, 4, "ab"), Millis(0));
  uploads.Add("alice", UploadPartOf("u", 0, 4, "wx"), Millis(0));
  EXPECT_EQ(uploads.Add("alice", UploadPartOf("u", 2, 4, "yz"), Millis(0)).whole, "wxyz");
}

}  // namespace
}  // namespace orch::coordinator
