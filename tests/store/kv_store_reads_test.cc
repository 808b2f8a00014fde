// What each write of the coordinator's hot path reads. The coordinator writes every run
// four or five times (assigned, started, chunks, finished, job done); each lookup is a
// search through RocksDB's memtables and levels, so the store reads only what a write
// must check or keep.
#include <gtest/gtest.h>

#include <array>

#include "store/kv_store.h"
#include "store/memory_store.h"
#include "tests/store/memory_engine_over.h"

namespace orch::store {
namespace {

// The memory engine, counting Gets by table.
class CountingEngine final : public MemoryEngineOver {
 public:
  using MemoryEngineOver::MemoryEngineOver;

  Result<std::optional<std::string>> Get(Table table, std::string_view key) override {
    ++gets[static_cast<int>(table)];
    return MemoryEngineOver::Get(table, key);
  }

  std::array<int, kTableCount> gets{};
};

class KvStoreReadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto engine = std::make_unique<CountingEngine>(tables_);
    engine_ = engine.get();
    store_ = std::move(KvStore::Open(std::move(engine), KvStoreOptions{})).value();
    JobRecord job;
    job.id = "j";
    job.experiment = "p";
    ASSERT_TRUE(store_->PutPlan({"p", "{}"}, {job}).ok());
  }

  int Gets(Table table) const { return engine_->gets[static_cast<int>(table)]; }
  void ResetCounts() { engine_->gets = {}; }

  static StateChange Change(RunState state, bool with_job) {
    StateChange change;
    change.run = RunRecord{};
    change.run->id = "r";
    change.run->job_id = "j";
    change.run->state = state;
    if (with_job) {
      change.job = JobRecord{};
      change.job->id = "j";
      change.job->experiment = "p";
      change.job->state = JobState::kAssigned;
    }
    return change;
  }

  MemoryTables tables_;
  CountingEngine* engine_ = nullptr;
  std::unique_ptr<Store> store_;
};

TEST_F(KvStoreReadsTest, ANewRunChecksItsJobOnce) {
  ResetCounts();
  ASSERT_TRUE(store_->Apply(Change(RunState::kAssigned, /*with_job=*/true)).ok());
  EXPECT_EQ(Gets(Table::kJobs), 1);
  EXPECT_EQ(Gets(Table::kRuns), 1);
}

TEST_F(KvStoreReadsTest, ChangesOfAStoredRunDoNotLookItsJobUpAgain) {
  ASSERT_TRUE(store_->Apply(Change(RunState::kAssigned, /*with_job=*/true)).ok());
  ResetCounts();
  ASSERT_TRUE(store_->Apply(Change(RunState::kRunning, /*with_job=*/false)).ok());
  ASSERT_TRUE(store_->Apply(Change(RunState::kSucceeded, /*with_job=*/true)).ok());
  EXPECT_EQ(Gets(Table::kJobs), 0);
  EXPECT_EQ(Gets(Table::kRuns), 2);
}

TEST_F(KvStoreReadsTest, ARunMovedToAnotherJobChecksThatJob) {
  ASSERT_TRUE(store_->Apply(Change(RunState::kAssigned, /*with_job=*/true)).ok());
  StateChange moved = Change(RunState::kRunning, /*with_job=*/false);
  moved.run->job_id = "unknown";
  Status status = store_->Apply(moved);
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << status.ToString();
}

TEST_F(KvStoreReadsTest, AChunkReadsItsRunAndItsSeqOnly) {
  ASSERT_TRUE(store_->Apply(Change(RunState::kRunning, /*with_job=*/true)).ok());
  ResetCounts();
  RunRecord stored;
  ASSERT_EQ(*store_->AppendChunk("r", 0, {{0, "a"}}, &stored), WriteOutcome::kStored);
  ASSERT_EQ(*store_->FinishRun("r", RunOutcome{RunState::kSucceeded, 0, "", 1, ""}, std::nullopt,
                               &stored),
            WriteOutcome::kStored);
  EXPECT_TRUE(stored.Complete());
  EXPECT_EQ(Gets(Table::kRuns), 2);
  EXPECT_EQ(Gets(Table::kChunks), 1);
  EXPECT_EQ(Gets(Table::kJobs), 0);
}

}  // namespace
}  // namespace orch::store
