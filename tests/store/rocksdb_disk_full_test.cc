// A full data disk, for real: the store lives on a small tmpfs that the test fills and
// frees. Writes fail with a clear Status while the disk is full, change nothing, and
// succeed again once space returns, on the same open store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "store/rocksdb_store.h"
#include "tests/store/tmpfs_mount.h"

namespace orch::store {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kDiskBytes = 8 << 20;

std::vector<DigestRecord> Chunk(uint64_t first_position) {
  std::vector<DigestRecord> records;
  for (uint64_t p = first_position; p < first_position + 64; ++p) {
    records.push_back({p, std::string(300, 'd')});
  }
  return records;
}

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!disk_.mounted()) GTEST_SKIP() << "cannot fill a disk here: " << disk_.error();
    Open();
    JobRecord job;
    job.id = "j1";
    job.experiment = "exp";
    ASSERT_TRUE(store_->PutPlan({"exp", "{}"}, {job}).ok());
    StateChange change;
    change.run = RunRecord{};
    change.run->id = "r1";
    change.run->job_id = "j1";
    ASSERT_TRUE(store_->Apply(change).ok());
  }

  void Open() {
    store_.reset();
    Result<std::unique_ptr<Store>> opened = OpenRocksDbStore(db_path(), RocksDbOptions{});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
  }

  std::string db_path() const { return (disk_.path() / "rocksdb").string(); }
  std::filesystem::path filler() const { return disk_.path() / "filler"; }
  Result<WriteOutcome> Append(uint64_t seq) {
    return store_->AppendChunk("r1", seq, Chunk(seq * 64));
  }

  // Fills the disk and sees the next chunk (`seq`) refused with a clear status and
  // nothing changed; writes once more, refilling first; frees the disk and appends the
  // next chunk. Returns how long that first write after freeing took. `seq` ends past
  // the chunks stored.
  std::chrono::milliseconds FillFailFreeAndAppend(uint64_t& seq, bool full_again_fails) {
    int64_t received = store_->GetRun("r1")->chunks_received;
    EXPECT_GT(disk_.Fill(filler()), 0u);
    Result<WriteOutcome> refused = Append(seq);
    EXPECT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kIoError);
    EXPECT_THAT(refused.status().message(), HasSubstr("No space left on device"));
    EXPECT_EQ(store_->GetRun("r1")->chunks_received, received) << "a failed write changes nothing";
    disk_.Fill(disk_.path() / "filler-2");
    Result<WriteOutcome> again = Append(seq);
    if (full_again_fails || !again.ok()) {
      EXPECT_FALSE(again.ok()) << "the disk is still full";
      EXPECT_THAT(again.status().message(), HasSubstr("cannot resume yet"));
      EXPECT_EQ(store_->GetRun("r1")->chunks_received, received);
    } else {
      ++seq;  // reopening released preallocated space: the write was stored
    }
    std::filesystem::remove(filler());
    std::filesystem::remove(disk_.path() / "filler-2");
    auto start = std::chrono::steady_clock::now();
    Result<WriteOutcome> stored = Append(seq++);
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    EXPECT_TRUE(stored.ok()) << stored.status().ToString();
    if (stored.ok()) {
      EXPECT_EQ(*stored, WriteOutcome::kStored);
    }
    return took;
  }

  TmpfsMount disk_{kDiskBytes};  // outlives store_ (declared first, destroyed last)
  std::unique_ptr<Store> store_;
};

TEST_F(DiskFullTest, WritesFailWhileTheDiskIsFullAndSucceedAgainWithoutReopening) {
  ASSERT_TRUE(Append(0).ok());
  uint64_t seq = 1;
  std::chrono::milliseconds took = FillFailFreeAndAppend(seq, /*full_again_fails=*/true);
  std::printf("first write after space returned took %lld ms\n",
              static_cast<long long>(took.count()));
  ASSERT_TRUE(Append(seq).ok()) << "writes go on";
  EXPECT_EQ(store_->GetRun("r1")->chunks_received, 3);

  Open();
  EXPECT_EQ(store_->GetRun("r1")->chunks_received, 3) << "every acknowledged chunk survives";
  int digests = 0;
  ASSERT_TRUE(store_
                  ->ScanDigests("r1", 0,
                                [&](uint64_t, std::string_view) {
                                  ++digests;
                                  return true;
                                })
                  .ok());
  EXPECT_EQ(digests, 3 * 64);
}

// Right after opening, every memtable is empty, so DB::Resume has nothing to flush and
// keeps the WAL whose append failed; writing to it again aborted the process.
TEST_F(DiskFullTest, RecoversWhenTheFirstWriteAfterOpeningFails) {
  Open();
  uint64_t seq = 0;
  std::chrono::milliseconds took = FillFailFreeAndAppend(seq, /*full_again_fails=*/false);
  std::printf("first write after space returned took %lld ms\n",
              static_cast<long long>(took.count()));
  ASSERT_TRUE(Append(seq++).ok());
  Open();
  EXPECT_EQ(store_->GetRun("r1")->chunks_received, static_cast<int64_t>(seq));
}

TEST_F(DiskFullTest, SurvivesTheDiskFillingRepeatedly) {
  uint64_t seq = 0;
  for (int round = 0; round < 4; ++round) FillFailFreeAndAppend(seq, /*full_again_fails=*/false);
  Open();
  EXPECT_EQ(store_->GetRun("r1")->chunks_received, static_cast<int64_t>(seq));
}

}  // namespace
}  // namespace orch::store
