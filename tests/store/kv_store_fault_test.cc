// A write that fails inside the store, below its checks (the engine refuses the batch as
// a full disk would), leaves the store consistent: nothing half-applied, no gap in the
// event sequence, and the retried write behaves as the first one would have.
#include "store/kv_store.h"

#include <gtest/gtest.h>

#include "store/memory_store.h"
#include "tests/store/memory_engine_over.h"

namespace orch::store {
namespace {

// The memory engine, but Write number `fail_at` (1-based) fails.
class DiskFullEngine final : public MemoryEngineOver {
 public:
  DiskFullEngine(MemoryTables& tables, int fail_at) : MemoryEngineOver(tables), fail_at_(fail_at) {}

  Status Write(const KvBatch& batch, bool sync) override {
    if (++writes_ == fail_at_) return IoError("write batch: disk full");
    return MemoryEngineOver::Write(batch, sync);
  }

 private:
  int fail_at_;
  int writes_ = 0;
};

class KvStoreFaultTest : public ::testing::Test {
 protected:
  // Writes 1 and 2 seed plan "p" (job "j") and run "r"; write `fail_at` fails.
  std::unique_ptr<Store> Open(int fail_at) {
    auto store = std::move(KvStore::Open(std::make_unique<DiskFullEngine>(tables_, fail_at),
                                         KvStoreOptions{}))
                     .value();
    JobRecord job;
    job.id = "j";
    job.experiment = "p";
    EXPECT_TRUE(store->PutPlan({"p", "{}"}, {job}).ok());
    StateChange change;
    change.run = RunRecord{};
    change.run->id = "r";
    change.run->job_id = "j";
    EXPECT_TRUE(store->Apply(change).ok());
    return store;
  }

  static EventRecord Event(const std::string& kind) {
    EventRecord event;
    event.kind = kind;
    return event;
  }

  MemoryTables tables_;
};

TEST_F(KvStoreFaultTest, FailedChunkIsNotCountedAndItsResendIsStored) {
  std::unique_ptr<Store> store = Open(3);
  Result<WriteOutcome> failed = store->AppendChunk("r", 0, {{0, "a"}});
  EXPECT_EQ(failed.status().code(), StatusCode::kIoError);
  EXPECT_NE(failed.status().message().find("append chunk 0 of run r"), std::string::npos);
  EXPECT_EQ(store->GetRun("r")->chunks_received, 0);
  EXPECT_EQ(*store->AppendChunk("r", 0, {{0, "a"}}), WriteOutcome::kStored);
  EXPECT_EQ(store->GetRun("r")->chunks_received, 1);
}

TEST_F(KvStoreFaultTest, FailedTransitionLeavesNoEventAndNoGap) {
  std::unique_ptr<Store> store = Open(3);
  JobRecord running = *store->GetJob("j");
  running.state = JobState::kRunning;
  StateChange change;
  change.job = running;
  change.events = {Event("job.running"), Event("x")};
  EXPECT_EQ(store->Apply(change).code(), StatusCode::kIoError);
  EXPECT_EQ(store->GetJob("j")->state, JobState::kPending);
  EXPECT_EQ(*store->AppendEvent(Event("after")), 1u);
}

TEST_F(KvStoreFaultTest, FailedFinishLeavesTheRunOpen) {
  std::unique_ptr<Store> store = Open(3);
  RunOutcome outcome;
  outcome.chunks_expected = 0;
  EXPECT_FALSE(store->FinishRun("r", outcome, std::nullopt).ok());
  EXPECT_FALSE(store->GetRun("r")->finished);
  EXPECT_EQ(*store->FinishRun("r", outcome, std::nullopt), WriteOutcome::kStored);
}

TEST_F(KvStoreFaultTest, FailedPlanInsertsNoJob) {
  std::unique_ptr<Store> store = Open(3);
  JobRecord job;
  job.id = "k";
  job.experiment = "q";
  EXPECT_FALSE(store->PutPlan({"q", "{}"}, {job}).ok());
  EXPECT_EQ(store->GetPlan("q").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->GetJob("k").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*store->PutPlan({"q", "{}"}, {job}), 1);
}

}  // namespace
}  // namespace orch::store
