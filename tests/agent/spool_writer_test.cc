#include "agent/spool_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

namespace orch::agent {
namespace {

using namespace std::chrono_literals;

class SpoolWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("orch-spool-writer-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    spool_ = std::move(Spool::Open(dir_)).value();
  }
  void TearDown() override {
    spool_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Runs the loop until `done` holds (at most 10 s).
  void RunUntil(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_for(5ms);
    }
  }

  boost::asio::io_context io_;
  std::string dir_;
  std::unique_ptr<Spool> spool_;
};

TEST_F(SpoolWriterTest, RunsOperationsInOrderAndDeliversTheirResultsInOrder) {
  SpoolWriter writer(io_, *spool_, 1 << 20);
  std::vector<int> ran;        // on the spool's thread
  std::vector<int> delivered;  // on the loop
  for (int i = 0; i < 50; ++i) {
    writer.Post(16, [&ran, &delivered, i](Spool& spool) {
      EXPECT_TRUE(spool.AddChunk({"run", static_cast<std::uint64_t>(i), {{0, "x"}}}).ok());
      ran.push_back(i);
      return std::function<void()>([&delivered, i] { delivered.push_back(i); });
    });
  }
  RunUntil([&] { return delivered.size() == 50; });
  std::vector<int> expected;
  for (int i = 0; i < 50; ++i) expected.push_back(i);
  writer.WaitIdle();
  EXPECT_EQ(ran, expected);
  EXPECT_EQ(delivered, expected);
  EXPECT_EQ(spool_->ChunkCount("run"), 50u);
}

TEST_F(SpoolWriterTest, PostDoesNotWaitForTheOperation) {
  SpoolWriter writer(io_, *spool_, 1 << 20);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  writer.Post(100, [released](Spool&) {
    released.wait();
    return std::function<void()>();
  });
  std::atomic<bool> second_ran = false;
  // Returns while the first operation is still blocked.
  writer.Post(100, [&second_ran](Spool&) {
    second_ran = true;
    return std::function<void()>();
  });
  EXPECT_FALSE(second_ran);
  release.set_value();
  writer.WaitIdle();
  EXPECT_TRUE(second_ran);
}

TEST_F(SpoolWriterTest, PostWaitsWhileTheBytesQueuedWouldPassTheBound) {
  SpoolWriter writer(io_, *spool_, 100);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  writer.Post(80, [released](Spool&) {
    released.wait();
    return std::function<void()>();
  });
  writer.Post(10, [](Spool&) { return std::function<void()>(); });  // 90: within the bound
  std::future<void> third = std::async(std::launch::async, [&writer] {
    writer.Post(20, [](Spool&) { return std::function<void()>(); });  // 110: past it
  });
  EXPECT_EQ(third.wait_for(200ms), std::future_status::timeout);
  release.set_value();
  ASSERT_EQ(third.wait_for(10s), std::future_status::ready);
  writer.WaitIdle();
}

TEST_F(SpoolWriterTest, AnOperationLargerThanTheBoundIsAdmittedAlone) {
  SpoolWriter writer(io_, *spool_, 100);
  std::atomic<int> ran = 0;
  for (int i = 0; i < 3; ++i) {
    writer.Post(1000, [&ran](Spool&) {
      ++ran;
      return std::function<void()>();
    });
  }
  writer.WaitIdle();
  EXPECT_EQ(ran, 3);
}

TEST_F(SpoolWriterTest, DestroyingItFinishesEveryWriteAndDeliversNoResult) {
  int delivered = 0;
  {
    SpoolWriter writer(io_, *spool_, 1 << 20);
    for (int i = 0; i < 20; ++i) {
      writer.Post(16, [&delivered, i](Spool& spool) {
        EXPECT_TRUE(spool.AddChunk({"run", static_cast<std::uint64_t>(i), {{0, "x"}}}).ok());
        return std::function<void()>([&delivered] { ++delivered; });
      });
    }
  }
  io_.run_for(50ms);  // results posted before the writer went away do nothing
  EXPECT_EQ(delivered, 0);
  EXPECT_EQ(spool_->unacked(), 20u);
  spool_.reset();
  // Durable: another process of the agent finds them.
  spool_ = std::move(Spool::Open(dir_)).value();
  EXPECT_EQ(spool_->unacked(), 20u);
}

TEST(SpooledBytesTest, CountsAChunksRecordBytes) {
  protocol::DigestChunk chunk{"run", 0, {{0, std::string(100, 'x')}, {1, std::string(28, 'y')}}};
  EXPECT_EQ(SpooledBytes(chunk), 128u);
  EXPECT_EQ(
      SpooledBytes(protocol::RunFinished{"run", protocol::RunStatus::kSucceeded, "{}", "", 0}), 0u);
}

}  // namespace
}  // namespace orch::agent
