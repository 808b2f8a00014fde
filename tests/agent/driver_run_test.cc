#include "agent/driver_run.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "digest/record_codec.h"

namespace orch::agent {
namespace {

using ::testing::HasSubstr;

std::string RecordFrame(std::uint64_t position) {
  digest::PositionRecord record;
  record.position = position;
  record.digest.vocab_size = 4;
  return EncodeDriverFrame(DriverFrameType::kRecord, digest::EncodePositionRecord(record));
}

std::string Hello() { return EncodeDriverFrame(DriverFrameType::kHello, R"({"engine":"e"})"); }
std::string Done() { return EncodeDriverFrame(DriverFrameType::kDone, R"({"positions":3})"); }

ProcessExit Exited(int code, std::string tail = "") {
  return ProcessExit{ProcessExit::Reason::kExited, code, 0, std::move(tail)};
}

TEST(DriverRunTest, CutsChunksWithSequenceNumbersAndSucceeds) {
  DriverRun run("run-1", "test", 2);
  std::vector<protocol::DigestChunk> chunks;
  ASSERT_TRUE(
      run.Feed(Hello() + RecordFrame(0) + RecordFrame(1) + RecordFrame(2) + Done(), &chunks).ok());
  ASSERT_EQ(chunks.size(), 1u);
  std::optional<protocol::DigestChunk> last = run.Flush();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(chunks[0].seq, 0u);
  EXPECT_EQ(last->seq, 1u);
  ASSERT_EQ(last->records.size(), 1u);
  EXPECT_EQ(last->records[0].position, 2u);
  protocol::RunFinished finished = run.Finish(Exited(0), "");
  EXPECT_EQ(finished.status, protocol::RunStatus::kSucceeded);
  EXPECT_EQ(finished.chunk_count, 2u);
  EXPECT_THAT(finished.summary, HasSubstr(R"("engine":"e")"));
}

// Records carrying full rows of 512Ki logits (2 MiB each): a chunk of 256 records would be
// a 512 MiB frame, far above the protocol's 16 MiB; they are cut three by three instead.
TEST(DriverRunTest, ChunksOfFullRowsStayBelowTheFrameLimit) {
  digest::PositionRecord record;
  record.digest.vocab_size = 1 << 19;
  record.full_row.assign(record.digest.vocab_size, 0.0f);
  record.digest.hash = digest::HashRow(record.full_row);
  std::string frames = Hello();
  for (std::uint64_t p = 0; p < 5; ++p) {
    record.position = p;
    frames += EncodeDriverFrame(DriverFrameType::kRecord, digest::EncodePositionRecord(record));
  }
  DriverRun run("run-1", "test", 256);
  std::vector<protocol::DigestChunk> chunks;
  ASSERT_TRUE(run.Feed(frames + Done(), &chunks).ok());
  if (std::optional<protocol::DigestChunk> last = run.Flush()) chunks.push_back(*last);
  std::vector<std::size_t> sizes;
  for (const protocol::DigestChunk& chunk : chunks) {
    sizes.push_back(chunk.records.size());
    std::size_t bytes = 0;
    for (const protocol::ChunkRecord& r : chunk.records) bytes += r.bytes.size();
    EXPECT_LE(bytes, kMaxChunkRecordBytes);
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{3, 2}));
}

TEST(DriverRunTest, TypedErrorFailsTheRunWithCodeAndMessage) {
  DriverRun run("run-1", "test", 256);
  std::vector<protocol::DigestChunk> chunks;
  ASSERT_TRUE(
      run.Feed(Hello() + EncodeDriverFrame(DriverFrameType::kError,
                                           R"({"code":"model_missing","message":"no file"})"),
               &chunks)
          .ok());
  protocol::RunFinished finished = run.Finish(Exited(3), "");
  EXPECT_EQ(finished.status, protocol::RunStatus::kFailed);
  EXPECT_THAT(finished.error, HasSubstr("model_missing: no file"));
}

TEST(DriverRunTest, ATypedErrorIsItsMessageAndTheLogPathWithoutTheEngineLog) {
  DriverRun run("run-1", "test", 256);
  std::vector<protocol::DigestChunk> chunks;
  ASSERT_TRUE(
      run.Feed(Hello() + EncodeDriverFrame(DriverFrameType::kError,
                                           R"({"code":"invalid_job","message":"ctx too small"})"),
               &chunks)
          .ok());
  std::string loader_log;
  for (int i = 0; i < 145; ++i)
    loader_log += "llama_model_loader: line " + std::to_string(i) + "\n";
  protocol::RunFinished finished =
      run.Finish({ProcessExit::Reason::kExited, 2, 0, loader_log}, "/spool/logs/run-1.log");
  EXPECT_EQ(finished.error,
            "driver test: invalid_job: ctx too small (driver log: /spool/logs/run-1.log)");
}

TEST(DriverRunTest, ACrashKeepsOnlyTheLastLinesOfTheDriversLog) {
  DriverRun run("run-1", "test", 256);
  std::vector<protocol::DigestChunk> chunks;
  ASSERT_TRUE(run.Feed(Hello(), &chunks).ok());
  ProcessExit exit{ProcessExit::Reason::kSignaled, -1, 6, "one\ntwo\n\nthree\nfour\n"};
  protocol::RunFinished finished = run.Finish(exit, "/l.log");
  EXPECT_THAT(finished.error, HasSubstr("(driver log: /l.log)\n  two\n  three\n  four"));
  EXPECT_THAT(finished.error, ::testing::Not(HasSubstr("one")));
}

TEST(DriverRunTest, CrashReportsSignalAndLogTail) {
  DriverRun run("run-1", "test", 256);
  std::vector<protocol::DigestChunk> chunks;
  ASSERT_TRUE(run.Feed(Hello() + RecordFrame(0), &chunks).ok());
  ProcessExit exit{ProcessExit::Reason::kSignaled, -1, 6, "boom\n"};
  protocol::RunFinished finished = run.Finish(exit, "");
  EXPECT_EQ(finished.status, protocol::RunStatus::kFailed);
  EXPECT_THAT(finished.error, HasSubstr("killed by signal 6"));
  EXPECT_THAT(finished.error, HasSubstr("boom"));
}

TEST(DriverRunTest, MalformedRecordFailsTheRun) {
  DriverRun run("run-1", "test", 256);
  std::vector<protocol::DigestChunk> chunks;
  Status status = run.Feed(Hello() + EncodeDriverFrame(DriverFrameType::kRecord, "xx"), &chunks);
  EXPECT_FALSE(status.ok());
  protocol::RunFinished finished = run.Finish({ProcessExit::Reason::kCancelled, -1, 0, ""}, "");
  EXPECT_EQ(finished.status, protocol::RunStatus::kFailed);
  EXPECT_THAT(finished.error, HasSubstr("record 0"));
}

TEST(DriverRunTest, CleanExitWithoutDoneFails) {
  DriverRun run("run-1", "test", 256);
  std::vector<protocol::DigestChunk> chunks;
  ASSERT_TRUE(run.Feed(Hello(), &chunks).ok());
  protocol::RunFinished finished = run.Finish(Exited(0), "");
  EXPECT_EQ(finished.status, protocol::RunStatus::kFailed);
  EXPECT_THAT(finished.error, HasSubstr("without done"));
}

TEST(DriverRunTest, TimeoutAndCancelAreTheirOwnStatuses) {
  DriverRun run("run-1", "test", 256);
  EXPECT_EQ(run.Finish({ProcessExit::Reason::kTimedOut, -1, 0, "t"}, "").status,
            protocol::RunStatus::kTimedOut);
  EXPECT_EQ(run.Finish({ProcessExit::Reason::kCancelled, -1, 0, ""}, "").status,
            protocol::RunStatus::kCancelled);
}

}  // namespace
}  // namespace orch::agent
