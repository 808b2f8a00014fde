// The driver's digest pipeline: records byte-identical to digesting each row on
// the calling thread and in position order, for several worker counts and slot
// bounds; digests run off the submitting thread; at most max_in_flight rows out;
// the first failure in position order stops the stream.
#include "drivers/llamacpp/digest_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "digest/record_codec.h"
#include "digest/row_digest.h"

namespace orch::drivers::llamacpp {
namespace {

constexpr std::size_t kVocab = 3000;
constexpr std::uint32_t kTopK = 20;

// Row `position` of a pseudo-random logit matrix; every 17th row holds a NaN.
std::vector<float> Row(std::int64_t position) {
  std::vector<float> row(kVocab);
  std::uint64_t state = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(position + 1);
  for (float& value : row) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    value = static_cast<float>(static_cast<double>(state >> 40) / (1 << 24) * 20.0 - 10.0);
  }
  if (position % 17 == 5) row[position % kVocab] = std::numeric_limits<float>::quiet_NaN();
  return row;
}

RowMeta Meta(std::int64_t position, std::int64_t count) {
  return {.position = position,
          .input_token = static_cast<std::int32_t>(position * 7 % kVocab),
          .output_token = -1,
          .target = position + 1 < count ? static_cast<std::int32_t>((position + 1) * 7 % kVocab)
                                         : digest::kNoTarget,
          .full_row = position % 16 == 3};
}

// What the driver wrote before the pipeline: each row digested in turn on the
// calling thread into one reused record.
std::vector<std::string> SequentialRecords(std::int64_t count) {
  std::vector<std::string> out;
  digest::PositionRecord record;
  for (std::int64_t p = 0; p < count; ++p) {
    std::vector<float> row = Row(p);
    RowMeta meta = Meta(p, count);
    digest::DigestOptions options{.top_k = kTopK, .target_id = meta.target};
    EXPECT_TRUE(digest::ComputeRowDigest(row, options, &record.digest).ok());
    record.position = static_cast<std::uint64_t>(p);
    record.input_token = meta.input_token;
    record.output_token = meta.output_token;
    if (meta.full_row) {
      record.full_row = row;
    } else {
      record.full_row.clear();
    }
    out.push_back(digest::EncodePositionRecord(record));
  }
  return out;
}

TEST(DigestPipelineTest, RecordsAreByteIdenticalToDigestingInTurnAndInPositionOrder) {
  constexpr std::int64_t kRows = 300;
  const std::vector<std::string> expected = SequentialRecords(kRows);
  for (int workers : {0, 1, 2, 4}) {  // 0: in turn
    for (int slots : {1, 3, RowsInFlight(workers)}) {
      std::vector<std::string> got;
      DigestPipeline pipeline({.workers = workers, .max_in_flight = slots}, kVocab,
                              ComputeDigester(kTopK), [&got](const digest::PositionRecord& r) {
                                got.push_back(digest::EncodePositionRecord(r));
                                return Status::Ok();
                              });
      for (std::int64_t p = 0; p < kRows; ++p) {
        std::vector<float> row = Row(p);
        ASSERT_TRUE(pipeline.Submit(Meta(p, kRows), row).ok());
        row.assign(kVocab, 0.0f);  // the engine reuses its buffer at once
      }
      ASSERT_TRUE(pipeline.Finish().ok());
      ASSERT_EQ(got.size(), expected.size()) << workers << " workers, " << slots << " slots";
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], expected[i])
            << "position " << i << ", " << workers << " workers, " << slots << " slots";
    }
  }
}

// Teacher forcing: the rows of a batch are borrowed from the engine's buffer,
// which the next decode overwrites once ReleaseBorrowed has returned.
TEST(DigestPipelineTest, BorrowedBatchesGiveTheSameBytesAsTheyAreOverwritten) {
  constexpr std::int64_t kRows = 300;
  constexpr std::int64_t kBatch = 37;
  const std::vector<std::string> expected = SequentialRecords(kRows);
  for (int workers : {0, 1, 2, 4}) {  // 0: in turn
    for (int slots : {1, 3, RowsInFlight(workers)}) {
      std::vector<std::string> got;
      DigestPipeline pipeline({.workers = workers, .max_in_flight = slots}, kVocab,
                              ComputeDigester(kTopK), [&got](const digest::PositionRecord& r) {
                                got.push_back(digest::EncodePositionRecord(r));
                                return Status::Ok();
                              });
      std::vector<std::vector<float>> logits(kBatch);  // the engine's buffer
      for (std::int64_t first = 0; first < kRows; first += kBatch) {
        pipeline.ReleaseBorrowed();
        std::int64_t count = std::min(kBatch, kRows - first);
        for (std::int64_t i = 0; i < count; ++i) logits[i] = Row(first + i);  // the decode
        for (std::int64_t i = 0; i < count; ++i)
          ASSERT_TRUE(pipeline.SubmitBorrowed(Meta(first + i, kRows), logits[i]).ok());
      }
      ASSERT_TRUE(pipeline.Finish().ok());
      ASSERT_EQ(got, expected) << workers << " workers, " << slots << " slots";
    }
  }
}

// Opened once by the test; a digester waits on it (for at most a minute, so a
// pipeline that digested on the submitting thread fails instead of hanging).
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    opened_.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    return opened_.wait_for(lock, std::chrono::minutes(1), [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

TEST(DigestPipelineTest, SubmitReturnsBeforeTheRowIsDigestedOnAnotherThread) {
  Gate gate;
  // Digests that found the gate open: a digest on the submitting thread
  // before Open would find it closed (after a minute).
  std::atomic<int> waited_for_the_gate{0};
  RowDigester real = ComputeDigester(kTopK);
  RowDigester gated = [&](std::span<const float> row, const RowMeta& meta,
                          digest::PositionRecord* record) {
    if (gate.Wait()) ++waited_for_the_gate;
    return real(row, meta, record);
  };
  int emitted = 0;
  DigestPipeline pipeline({.workers = 2, .max_in_flight = 4}, kVocab, gated,
                          [&emitted](const digest::PositionRecord&) {
                            ++emitted;
                            return Status::Ok();
                          });
  ASSERT_TRUE(pipeline.Submit(Meta(0, 2), Row(0)).ok());
  ASSERT_TRUE(pipeline.Submit(Meta(1, 2), Row(1)).ok());
  EXPECT_EQ(emitted, 0);  // both rows are still held at the gate
  gate.Open();
  ASSERT_TRUE(pipeline.Finish().ok());
  EXPECT_EQ(emitted, 2);
  EXPECT_EQ(waited_for_the_gate, 2);  // Finish may digest row 1 itself: the gate is open
}

TEST(DigestPipelineTest, AtMostMaxInFlightRowsAreSubmittedAheadOfTheSink) {
  constexpr std::int64_t kRows = 64;
  for (int slots : {1, 2, 5}) {
    std::int64_t submitted = 0;  // Submit calls returned
    std::int64_t most_ahead = 0;
    DigestPipeline pipeline({.workers = 2, .max_in_flight = slots}, kVocab, ComputeDigester(kTopK),
                            [&](const digest::PositionRecord& r) {
                              most_ahead = std::max(
                                  most_ahead, submitted - static_cast<std::int64_t>(r.position));
                              return Status::Ok();
                            });
    for (std::int64_t p = 0; p < kRows; ++p) {
      ASSERT_TRUE(pipeline.Submit(Meta(p, kRows), Row(p)).ok());
      ++submitted;
    }
    ASSERT_TRUE(pipeline.Finish().ok());
    // When the record of p goes out, rows p+1 .. p+slots-1 may be in slots
    // and row p+slots waits for p's slot.
    EXPECT_LE(most_ahead, slots) << slots << " slots";
  }
}

TEST(DigestPipelineTest, FirstFailureInPositionOrderStopsTheStream) {
  RowDigester real = ComputeDigester(kTopK);
  RowDigester failing = [&real](std::span<const float> row, const RowMeta& meta,
                                digest::PositionRecord* record) {
    if (meta.position == 7 || meta.position == 9)
      return InvalidArgument("row " + std::to_string(meta.position));
    return real(row, meta, record);
  };
  for (int workers : {0, 4}) {  // 0: in turn
    std::vector<std::uint64_t> positions;
    DigestPipeline pipeline({.workers = workers, .max_in_flight = 6}, kVocab, failing,
                            [&positions](const digest::PositionRecord& r) {
                              positions.push_back(r.position);
                              return Status::Ok();
                            });
    Status status;
    for (std::int64_t p = 0; p < 40 && status.ok(); ++p)
      status = pipeline.Submit(Meta(p, 40), Row(p));
    Status finished = pipeline.Finish();
    EXPECT_FALSE(finished.ok()) << workers << " workers";
    EXPECT_EQ(finished.message(), "row 7") << workers << " workers";
    EXPECT_EQ(positions, (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6})) << workers;
    EXPECT_EQ(pipeline.Submit(Meta(40, 41), Row(40)).message(), "row 7") << workers;
  }
}

TEST(DigestPipelineTest, SinkFailureStopsTheStream) {
  for (int workers : {0, 2}) {  // 0: in turn
    int calls = 0;
    DigestPipeline pipeline({.workers = workers, .max_in_flight = 3}, kVocab,
                            ComputeDigester(kTopK), [&calls](const digest::PositionRecord& r) {
                              ++calls;
                              return r.position == 2 ? IoError("stdout closed") : Status::Ok();
                            });
    Status status;
    for (std::int64_t p = 0; p < 20 && status.ok(); ++p)
      status = pipeline.Submit(Meta(p, 20), Row(p));
    EXPECT_EQ(pipeline.Finish().message(), "stdout closed") << workers << " workers";
    EXPECT_EQ(calls, 3) << workers << " workers";
  }
}

// Without workers every row is digested inside Submit, on the submitting
// thread, and its record is out before Submit returns.
TEST(DigestPipelineTest, WithoutWorkersEachRowIsDigestedInTurnOnTheCallingThread) {
  const std::thread::id caller = std::this_thread::get_id();
  RowDigester digester = ComputeDigester(kTopK);
  int foreign_threads = 0;
  RowDigester checked = [&](std::span<const float> row, const RowMeta& meta,
                            digest::PositionRecord* record) {
    if (std::this_thread::get_id() != caller) ++foreign_threads;
    return digester(row, meta, record);
  };
  std::size_t emitted = 0;
  DigestPipeline pipeline({.workers = 0, .max_in_flight = 4}, kVocab, checked,
                          [&emitted](const digest::PositionRecord&) {
                            ++emitted;
                            return Status::Ok();
                          });
  for (std::int64_t p = 0; p < 10; ++p) {
    ASSERT_TRUE(pipeline.Submit(Meta(p, 10), Row(p)).ok());
    EXPECT_EQ(emitted, static_cast<std::size_t>(p + 1));
  }
  ASSERT_TRUE(pipeline.Finish().ok());
  EXPECT_EQ(foreign_threads, 0);
}

TEST(DigestPipelineTest, WorkersAreTheCoresTheEngineLeavesAtLeastOne) {
  constexpr std::size_t kRow = kMinPipelinedRow;
  EXPECT_EQ(DigestWorkers(1, 2, kRow), 1);
  EXPECT_EQ(DigestWorkers(1, 8, kRow), 7);
  EXPECT_EQ(DigestWorkers(4, 16, 152064), 12);
  EXPECT_EQ(DigestWorkers(8, 8, kRow), 1);
  EXPECT_EQ(DigestWorkers(16, 4, kRow), 1);
  EXPECT_EQ(DigestWorkers(1, 0, kRow), 1);  // hardware concurrency unknown
  // Rows too short to be worth a hand-off are digested in turn.
  EXPECT_EQ(DigestWorkers(1, 8, kRow - 1), 0);
  EXPECT_EQ(DigestWorkers(1, 8, 1000), 0);
  EXPECT_EQ(RowsInFlight(1), 4);
  EXPECT_EQ(RowsInFlight(1000), 64);
}

}  // namespace
}  // namespace orch::drivers::llamacpp
