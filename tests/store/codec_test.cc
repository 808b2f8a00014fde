#include "store/codec.h"

#include <gtest/gtest.h>

namespace orch::store {
namespace {

RunRecord FullRun() {
  return {.id = "r1",
          .job_id = "j1",
          .agent_id = "agent-a",
          .lease_expiry_ms = -5,
          .state = RunState::kLost,
          .exit_status = -9,
          .error = "killed",
          .host_fingerprint_id = "h",
          .engine_fingerprint_id = "e",
          .chunks_expected = 1'000'000'000'000,
          .chunks_received = 3,
          .finished = true,
          .summary = R"({"done":{"token_text":{"7":"math"}}})",
          .contributor = "carol",
          .bundle_sha256 = std::string(64, 'a'),
          .imported_at_ms = 1'796'000'000'000,
          .assigned_at_ms = 1'796'000'000'100,
          .ended_at_ms = 1'796'000'060'100};
}

// The encoding of `run` as format version 4 wrote it: without the times.
std::string EncodeRunVersion4(RunRecord run) {
  run.assigned_at_ms = 0;
  run.ended_at_ms = 0;
  std::string bytes = EncodeRun(run);
  bytes.resize(bytes.size() - 2);  // two zeros: one byte each
  bytes[0] = 4;
  return bytes;
}

// The encoding of `run` as format version 3 wrote it: without the provenance fields.
std::string EncodeRunVersion3(RunRecord run) {
  run.contributor.clear();
  run.bundle_sha256.clear();
  run.imported_at_ms = 0;
  std::string bytes = EncodeRunVersion4(run);
  bytes.resize(bytes.size() - 3);  // two empty strings and a zero: one byte each
  bytes[0] = 3;
  return bytes;
}

TEST(CodecTest, RecordsRoundTrip) {
  RunRecord run = FullRun();
  EXPECT_EQ(*DecodeRun("k", EncodeRun(run)), run);
  JobRecord job{.id = "j",
                .experiment = "p",
                .state = JobState::kCancelled,
                .attempts = 7,
                .last_error = "oom",
                .current_run_id = "r",
                .submitted_at_ms = 1'796'000'000'000};
  EXPECT_EQ(*DecodeJob("k", EncodeJob(job)), job);
  PlanRecord plan{.experiment = "p", .json = std::string("{\0}", 3), .owner = "alice"};
  EXPECT_EQ(*DecodePlan("k", EncodePlan(plan)), plan);
  EventRecord event{
      .seq = 1ull << 63, .time_ms = INT64_MIN, .kind = "k", .subject = "s", .detail = "d"};
  EXPECT_EQ(*DecodeEvent("k", EncodeEvent(event)), event);
}

TEST(CodecTest, ARecordOfANewerVersionSaysSoWithBothVersions) {
  std::string bytes = EncodePlan({.experiment = "p", .json = "{}", .owner = "o"});
  bytes[0] = 7;
  Result<PlanRecord> plan = DecodePlan("plans/p", bytes);
  EXPECT_EQ(plan.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(plan.status().message(),
            "decode plans/p: written by a newer orch (format version 7, this orch reads up to 6)");
  bytes[0] = 0;
  EXPECT_EQ(DecodePlan("plans/p", bytes).status().code(), StatusCode::kDataLoss);
}

TEST(CodecTest, PeekRunJobIdReadsTheJobOfAnyVersion) {
  std::string bytes = EncodeRun(FullRun());
  EXPECT_EQ(PeekRunJobId(bytes), "j1");
  bytes[0] = 42;
  EXPECT_EQ(PeekRunJobId(bytes + "more fields"), "j1");
  EXPECT_EQ(PeekRunJobId(bytes.substr(0, 4)), std::nullopt);
}

TEST(CodecTest, EveryTruncationIsDataLossNamingTheKey) {
  std::string bytes = EncodeRun(FullRun());
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<RunRecord> run = DecodeRun("runs/r1", bytes.substr(0, n));
    ASSERT_EQ(run.status().code(), StatusCode::kDataLoss) << n;
    EXPECT_NE(run.status().message().find("runs/r1"), std::string::npos);
  }
}

TEST(CodecTest, TrailingBytesVersionZeroAndBadEnumsAreDataLoss) {
  JobRecord job;
  job.id = "j";
  job.experiment = "p";
  std::string bytes = EncodeJob(job);
  EXPECT_EQ(DecodeJob("k", bytes + "x").status().code(), StatusCode::kDataLoss);
  std::string version = bytes;
  version[0] = 0;
  EXPECT_EQ(DecodeJob("k", version).status().code(), StatusCode::kDataLoss);
  std::string state = bytes;
  state[1 + 2 + 2] = 99;  // after version, "j" and "p": the state byte
  EXPECT_EQ(DecodeJob("k", state).status().code(), StatusCode::kDataLoss);
}

TEST(CodecTest, RunRecordsOfFormatVersion1DecodeWithoutASummary) {
  // Version 1 wrote every run field but the summary, which came with version 2.
  RunRecord run = FullRun();
  std::string v2 = EncodeRunVersion3(run);
  run.assigned_at_ms = 0;
  run.ended_at_ms = 0;
  run.contributor.clear();
  run.bundle_sha256.clear();
  run.imported_at_ms = 0;
  std::string summary = run.summary;
  std::string v1 = v2.substr(0, v2.size() - summary.size() - 1);  // 1: the length varint
  v1[0] = 1;
  run.summary.clear();
  Result<RunRecord> decoded = DecodeRun("runs/r1", v1);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, run);
  EXPECT_EQ(DecodeRun("runs/r1", v1 + std::string(1, '\0')).status().code(),
            StatusCode::kDataLoss);  // a version-1 record has nothing after `finished`
}

TEST(CodecTest, RunRecordsOfFormatVersion4DecodeWithoutTimes) {
  RunRecord run = FullRun();
  std::string v4 = EncodeRunVersion4(run);
  run.assigned_at_ms = 0;
  run.ended_at_ms = 0;
  Result<RunRecord> decoded = DecodeRun("runs/r1", v4);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, run);
  EXPECT_EQ(DecodeRun("runs/r1", v4 + std::string(1, '\0')).status().code(), StatusCode::kDataLoss);
}

TEST(CodecTest, RunRecordsOfFormatVersion3DecodeWithoutProvenance) {
  RunRecord run = FullRun();
  std::string v3 = EncodeRunVersion3(run);
  run.assigned_at_ms = 0;
  run.ended_at_ms = 0;
  run.contributor.clear();
  run.bundle_sha256.clear();
  run.imported_at_ms = 0;
  Result<RunRecord> decoded = DecodeRun("runs/r1", v3);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, run);
  EXPECT_EQ(DecodeRun("runs/r1", v3 + std::string(1, '\0')).status().code(), StatusCode::kDataLoss);
}

TEST(CodecTest, JobRecordsOfFormatVersion5DecodeWithoutASubmitTime) {
  JobRecord job{.id = "j",
                .experiment = "p",
                .state = JobState::kSucceeded,
                .attempts = 2,
                .last_error = "",
                .current_run_id = "r"};
  std::string v5 = EncodeJob(job);  // submitted_at_ms 0: one byte, which version 5 lacks
  v5.resize(v5.size() - 1);
  v5[0] = 5;
  Result<JobRecord> decoded = DecodeJob("jobs/j", v5);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, job);
  EXPECT_EQ(decoded->submitted_at_ms, 0);
  EXPECT_EQ(DecodeJob("jobs/j", v5 + std::string(1, '\0')).status().code(), StatusCode::kDataLoss);
}

TEST(CodecTest, PlanRecordsOfEarlierFormatsDecodeWithoutAnOwner) {
  PlanRecord plan{.experiment = "p", .json = "{}", .owner = "alice"};
  std::string v3 = EncodePlan(plan);
  std::string v2 = v3.substr(0, v3.size() - plan.owner.size() - 1);
  v2[0] = 2;
  plan.owner.clear();
  Result<PlanRecord> decoded = DecodePlan("plans/p", v2);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, plan);
}

TEST(CodecTest, ArbitraryBytesNeverCrash) {
  std::string bytes = EncodeRun(FullRun());
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int v : {0x00, 0x7f, 0x80, 0xff}) {
      std::string damaged = bytes;
      damaged[i] = static_cast<char>(v);
      (void)DecodeRun("k", damaged).ok();
    }
  }
}

}  // namespace
}  // namespace orch::store
